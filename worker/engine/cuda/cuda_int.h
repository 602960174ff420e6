/*
 * cuda_int.h
 *	  Internals of the CUDA backend, shared by device.c (per-thread
 *	  contexts, memory pool, transfers), exec.c (running a plan), ops.c
 *	  (native operators) and kernels.cu (through kernels.h).
 *
 * Device tensors (ie_dtensor) mirror ie_tensor with device memory.  Their
 * buffers come from the running thread's pool (cap > 0) or belong to the
 * model (weights: cap 0, never freed by a run).
 *
 * Every CUDA, cuBLAS and cuDNN status is checked; a failure becomes -1
 * with "<what>: <library message>" in the caller's error buffer.
 */
#ifndef IE_CUDA_INT_H
#define IE_CUDA_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "worker/engine/cuda/backend.h"
#include "worker/engine/model_int.h"

/*
 * ONNX's code for bfloat16, which ie_dtype does not list: the type of a
 * BF16 model's 16-bit weights on the device (consts16).
 */
#define CU_BFLOAT16 ((ie_dtype) 16)

/* A dense tensor in device memory, row-major like ie_tensor. */
typedef struct ie_dtensor
{
	ie_dtype	dtype;
	int			ndim;
	int64_t		dims[IE_MAX_DIMS];
	void	   *ptr;
	size_t		nbytes;
	size_t		cap;			/* pool capacity; 0: not from the pool */
} ie_dtensor;

/* Pool size classes: 4 per power of two, as tensor.c's host cache. */
#define CU_POOL_CLASSES (4 * 48)
#define CU_POOL_PER_CLASS 64

typedef struct cu_pool_class
{
	int			n;
	void	   *bufs[CU_POOL_PER_CLASS];
} cu_pool_class;

/*
 * What one thread needs to run models on one device: its stream, library
 * handles bound to that stream, its pool of device buffers and its pinned
 * staging buffer.  Owned by the thread (thread-local), freed at its exit.
 */
typedef struct cu_ctx
{
	int			device;
	cudaStream_t stream;
	cublasHandle_t blas;
	cudnnHandle_t dnn;
	cu_pool_class pool[CU_POOL_CLASSES];
	size_t		pool_held;		/* bytes in the free lists */
	size_t		pool_live;		/* bytes handed out and not returned */
	void	   *pinned;			/* page-locked host staging buffer */
	size_t		pinned_cap;
} cu_ctx;

/*
 * A Conv node's last cuDNN algorithm choice, for the shapes in key (input
 * and filter dims), so that a run at the same shape skips the heuristics.
 */
typedef struct cu_algo_memo
{
	bool		valid;
	int64_t		key[8];
	int			algo;
	int			math;
	size_t		ws_bytes;
} cu_algo_memo;

/* What a loaded model keeps on its device (model->cuda). */
typedef struct ie_cuda_model
{
	ie_dtensor **consts;		/* [n_values]; weights on the device, or NULL */
	ie_dtensor **consts16;		/* [n_values]; FP16/BF16 models: the 16-bit
								 * copy of a MatMul/Gemm/Conv weight, or NULL */
	bool	   *native;			/* [n_nodes]; the node's op has a CUDA kernel */
	atomic_bool *warned;		/* [n_nodes]; its CPU fallback was logged */
	size_t		device_bytes;	/* bytes of consts */
	pthread_mutex_t memo_lock;	/* guards memo (runs may share the model) */
	cu_algo_memo *memo;			/* [n_nodes] */
} ie_cuda_model;

/* Error formatting: "<what>: <message>" into err; all return -1. */
int			cu_err(char *err, size_t errlen, const char *what, cudaError_t e);
int			cu_blas_err(char *err, size_t errlen, const char *what, cublasStatus_t s);
int			cu_dnn_err(char *err, size_t errlen, const char *what, cudnnStatus_t s);

/*
 * The kind (engine.h) of a message of cu_err, cu_blas_err, cu_dnn_err or
 * another function of device.c: IE_ERR_LIMIT when it reads "over the
 * tensor limit" (cu_download: a host tensor refused for its shape),
 * IE_ERR_NO_MEMORY when it reads "out of memory", which they write for an
 * allocation failure only (decided from the status code, never from a
 * library's description), else IE_ERR_INVALID.  Their messages hold the engine's words and the
 * libraries', never a name from a model file.
 */
ie_error_kind cu_error_kind(const char *msg);

/*
 * The calling thread's context for device, created on first use (stream,
 * cuBLAS and cuDNN handles); NULL with a message when that fails.
 */
cu_ctx	   *cu_ctx_get(int device, char *err, size_t errlen);

/*
 * A device buffer of at least n bytes from c's pool (cudaMalloc only when
 * the pool has none of that size class); *cap receives its capacity.
 * NULL with a message when device memory runs out.
 */
void	   *cu_pool_get(cu_ctx *c, size_t n, size_t *cap, char *err, size_t errlen);

/* Returns p (capacity cap) to c's pool; work queued on c's stream may still use it. */
void		cu_pool_put(cu_ctx *c, void *p, size_t cap);

/* A device tensor from c's pool (contents undefined); NULL + message. */
ie_dtensor *cu_dtensor_new(cu_ctx *c, ie_dtype dtype, int ndim, const int64_t *dims,
						   char *err, size_t errlen);

/* Frees *t (its buffer back to c's pool when it came from there); nulls *t. */
void		cu_dtensor_free(cu_ctx *c, ie_dtensor **t);

/* Elements of t (1 for a scalar). */
int64_t		cu_numel(const ie_dtensor *t);

/*
 * c's pinned staging buffer, grown to at least n bytes; NULL + message.
 * Free to fill: every copy through it has been waited for.
 */
void	   *cu_pinned(cu_ctx *c, size_t n, char *err, size_t errlen);

/*
 * Copies host tensor h to a new device tensor *out through c's pinned
 * buffer; waits for the copy (the staging buffer is reused).  0 or -1.
 */
int			cu_upload(cu_ctx *c, const ie_tensor *h, ie_dtensor **out,
					  char *err, size_t errlen);

/*
 * Copies device tensor d to a new host tensor *out: waits for c's stream
 * (so every kernel writing d has finished) and for the copy.  0 or -1.
 */
int			cu_download(cu_ctx *c, const ie_dtensor *d, ie_tensor **out,
						char *err, size_t errlen);

/* ---- ops.c ---- */

/* What a native operator sees of its node (exec.c fills it). */
typedef struct cu_op cu_op;

/* Returned by a native operator for a case it does not implement. */
#define CU_FALLBACK 1

typedef int (*cu_op_fn) (cu_op *op);

/* The native operator for op_type, or NULL (the node runs on the CPU). */
cu_op_fn	cu_op_lookup(const char *op_type);

/* ---- exec.c: the node accessors a native operator uses ---- */

/* The node context: attributes, names, error buffer (inputs not set). */
ie_node_ctx *cu_op_node(cu_op *op);

/*
 * The node's error for a device function's failure: "<fmt...>: <msg>",
 * msg that function's message, with msg's kind (cu_error_kind) in the
 * node's err_kind; returns -1.
 */
int			cu_op_fail(cu_op *op, const char *msg, const char *fmt,...)
			__attribute__((format(printf, 3, 4)));
cu_ctx	   *cu_op_ctx(cu_op *op);
bool		cu_op_tf32(cu_op *op);

/* The model's precision (engine.h); FP16 and BF16 concern MatMul, Gemm, Conv. */
ie_precision cu_op_precision(cu_op *op);

/*
 * Input i as the model's 16-bit weight (consts16: FP16 or BF16 by the
 * model's precision, same dims), or NULL when input i is no such weight.
 */
const ie_dtensor *cu_op_dev16(cu_op *op, int i);

/* Whether input slot i of an op_type node reads 16-bit data in FP16/BF16. */
bool		cu_op_16bit_slot(const char *op_type, int i);
int			cu_op_n_inputs(cu_op *op);

/* Whether input i is present (not omitted). */
bool		cu_op_has(cu_op *op, int i);

/* Type and shape of input i without copying it (it must be present). */
void		cu_op_shape(cu_op *op, int i, ie_dtype *dtype, int *ndim,
						int64_t dims[IE_MAX_DIMS]);

/* Input i on the host (downloaded if it lives on the device only); NULL + error. */
const ie_tensor *cu_op_host(cu_op *op, int i);

/* Input i on the device (uploaded if it lives on the host only); NULL + error. */
const ie_dtensor *cu_op_dev(cu_op *op, int i);

/* The memo of op's node: true and *out filled when its key equals key. */
bool		cu_op_memo_get(cu_op *op, const int64_t key[8], cu_algo_memo *out);

/* Records op's node's choice for key. */
void		cu_op_memo_put(cu_op *op, const int64_t key[8], int algo, int math, size_t ws_bytes);

/* Whether output j is present (not omitted). */
bool		cu_op_has_out(cu_op *op, int j);

/* A new device tensor that becomes output j; NULL + error. */
ie_dtensor *cu_op_out(cu_op *op, int j, ie_dtype dtype, int ndim, const int64_t *dims);

/* Makes host tensor t (ownership passes) output j. */
void		cu_op_out_host(cu_op *op, int j, ie_tensor *t);

#endif							/* IE_CUDA_INT_H */
