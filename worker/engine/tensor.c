/*
 * tensor.c
 *	  Dense tensors: allocation, copies and element-type facts.
 *
 * Tensors are plain heap objects with one owner; nothing here is shared
 * between threads.
 */
#include <stdlib.h>
#include <string.h>

#include "worker/engine/engine.h"

#define IE_ALIGN 64

/* Bytes per element; 0 for types the engine does not hold (string). */
size_t
ie_dtype_size(ie_dtype dtype)
{
	switch (dtype)
	{
		case IE_FLOAT:
		case IE_INT32:
		case IE_UINT32:
			return 4;
		case IE_DOUBLE:
		case IE_INT64:
		case IE_UINT64:
			return 8;
		case IE_UINT8:
		case IE_INT8:
		case IE_BOOL:
			return 1;
		case IE_UINT16:
		case IE_INT16:
		case IE_FLOAT16:
			return 2;
		default:
			return 0;
	}
}

/* ONNX's name of the type, for messages. */
const char *
ie_dtype_name(ie_dtype dtype)
{
	switch (dtype)
	{
		case IE_FLOAT: return "float";
		case IE_UINT8: return "uint8";
		case IE_INT8: return "int8";
		case IE_UINT16: return "uint16";
		case IE_INT16: return "int16";
		case IE_INT32: return "int32";
		case IE_INT64: return "int64";
		case IE_STRING: return "string";
		case IE_BOOL: return "bool";
		case IE_FLOAT16: return "float16";
		case IE_DOUBLE: return "double";
		case IE_UINT32: return "uint32";
		case IE_UINT64: return "uint64";
		default: return "undefined";
	}
}

/* Product of the dims; 1 for a scalar. */
int64_t
ie_tensor_numel(const ie_tensor *t)
{
	int64_t		n = 1;

	for (int i = 0; i < t->ndim; i++)
		n *= t->dims[i];
	return n;
}

/* Zeroed tensor of the given type and shape; NULL on overflow or no memory. */
ie_tensor *
ie_tensor_new(ie_dtype dtype, int ndim, const int64_t *dims)
{
	ie_tensor  *t;
	size_t		esize = ie_dtype_size(dtype);
	size_t		n = 1;

	if (esize == 0 || ndim < 0 || ndim > IE_MAX_DIMS)
		return NULL;
	for (int i = 0; i < ndim; i++)
	{
		if (dims[i] < 0 || (dims[i] > 0 && n > SIZE_MAX / esize / (size_t) dims[i]))
			return NULL;
		n *= (size_t) dims[i];
	}
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		return NULL;
	t->dtype = dtype;
	t->ndim = ndim;
	for (int i = 0; i < ndim; i++)
		t->dims[i] = dims[i];
	t->nbytes = n * esize;
	/* aligned_alloc wants a multiple of the alignment, and never size 0 */
	t->data = aligned_alloc(IE_ALIGN, (t->nbytes + IE_ALIGN - 1) / IE_ALIGN * IE_ALIGN + IE_ALIGN);
	if (t->data == NULL)
	{
		free(t);
		return NULL;
	}
	memset(t->data, 0, t->nbytes);
	return t;
}

/* Deep copy; NULL when memory runs out. */
ie_tensor *
ie_tensor_clone(const ie_tensor *src)
{
	ie_tensor  *t = ie_tensor_new(src->dtype, src->ndim, src->dims);

	if (t != NULL && src->nbytes > 0)
		memcpy(t->data, src->data, src->nbytes);
	return t;
}

/* Frees *t and nulls the caller's pointer. */
void
ie_tensor_destroy(ie_tensor **t)
{
	if (t == NULL || *t == NULL)
		return;
	free((*t)->data);
	free(*t);
	*t = NULL;
}
