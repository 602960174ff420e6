/*
 * ops_shape.c
 *	  ONNX operators (placeholder table; the operators land with the engine).
 */
#include "worker/engine/op.h"

const ie_op_def ie_ops_shape[] = {
	{NULL, NULL}
};
