/*
 * device.c
 *	  The CUDA backend's device layer: checking a device, device memory,
 *	  per-thread contexts (stream, cuBLAS and cuDNN handles), the per-thread
 *	  pool of device buffers, and host <-> device copies through a pinned
 *	  staging buffer.
 *
 * Threading: a context belongs to the thread that created it (thread-local,
 * one per device) and is freed by a pthread key destructor when that
 * thread exits.  All its work goes to its own stream, so buffers returned
 * to its pool may be handed out again at once: later work on the same
 * stream runs after earlier work that still reads them.  The pool keeps
 * what it gets back (per size class, at most CU_POOL_PER_CLASS buffers),
 * so after the first run at a given shape a model runs without cudaMalloc;
 * a larger shape adds buffers of larger classes (the pool grows).  When
 * cudaMalloc fails the pool frees what it holds and tries once more.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/engine/cuda/cuda_int.h"

#define CU_MAX_DEVICES 16
#define CU_MIN_ALLOC ((size_t) 256)

/* The contexts of one thread, by device. */
typedef struct cu_tls
{
	cu_ctx	   *ctx[CU_MAX_DEVICES];
} cu_tls;

static pthread_key_t tls_key;
static pthread_once_t tls_once = PTHREAD_ONCE_INIT;

/*
 * "<what>: <description> (<CUDA error name>)" into err; returns -1.  An
 * allocation failure reads "out of memory" here and in cu_blas_err and
 * cu_dnn_err, so that ie_error_kind_of finds its kind (what is the
 * engine's own words, never a name from the model file).
 */
int
cu_err(char *err, size_t errlen, const char *what, cudaError_t e)
{
	snprintf(err, errlen, "%s: %s (%s)", what,
			 e == cudaErrorMemoryAllocation ? "out of memory" : cudaGetErrorString(e),
			 cudaGetErrorName(e));
	return -1;
}

/* cuBLAS status into err, as cu_err. */
int
cu_blas_err(char *err, size_t errlen, const char *what, cublasStatus_t s)
{
	snprintf(err, errlen, "%s: %scuBLAS %s (%s)", what,
			 s == CUBLAS_STATUS_ALLOC_FAILED ? "out of memory: " : "",
			 cublasGetStatusString(s), cublasGetStatusName(s));
	return -1;
}

/* Whether cuDNN status s is an allocation failure (cuDNN 9: host or device). */
static bool
dnn_alloc_failed(cudnnStatus_t s)
{
#if CUDNN_MAJOR >= 9
	return s == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED ||
		s == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED;
#else
	return s == CUDNN_STATUS_ALLOC_FAILED;
#endif
}

/* cuDNN status into err, as cu_err. */
int
cu_dnn_err(char *err, size_t errlen, const char *what, cudnnStatus_t s)
{
	snprintf(err, errlen, "%s: %scuDNN %s", what,
			 dnn_alloc_failed(s) ? "out of memory: " : "", cudnnGetErrorString(s));
	return -1;
}

/* The kind of a message of this file's; see cuda_int.h. */
ie_error_kind
cu_error_kind(const char *msg)
{
	if (strstr(msg, "over the tensor limit") != NULL)
		return IE_ERR_LIMIT;
	return strstr(msg, "out of memory") != NULL ? IE_ERR_NO_MEMORY : IE_ERR_INVALID;
}

/* Checks the driver, the device count and that a context can be made on device. */
int
iecu_check_device(int device, char *err, size_t errlen)
{
	cudaError_t e;
	int			n = 0;
	char		what[128];

	e = cudaGetDeviceCount(&n);
	if (e != cudaSuccess)
	{
		snprintf(what, sizeof(what),
				 "cannot use cuda:%d: no usable CUDA device or driver (cudaGetDeviceCount failed)",
				 device);
		return cu_err(err, errlen, what, e);
	}
	if (n == 0)
	{
		snprintf(err, errlen, "cannot use cuda:%d: no CUDA device found", device);
		return -1;
	}
	if (device < 0 || device >= n || device >= CU_MAX_DEVICES)
	{
		snprintf(err, errlen, "cannot use cuda:%d: this machine has %d CUDA device%s (cuda:0%s)",
				 device, n, n == 1 ? "" : "s", n == 1 ? "" : " and up");
		return -1;
	}
	snprintf(what, sizeof(what), "cannot use cuda:%d: cudaSetDevice", device);
	e = cudaSetDevice(device);
	if (e != cudaSuccess)
		return cu_err(err, errlen, what, e);
	/* creates the primary context now, so a broken device fails at start */
	snprintf(what, sizeof(what), "cannot use cuda:%d: creating its context", device);
	e = cudaFree(NULL);
	if (e != cudaSuccess)
		return cu_err(err, errlen, what, e);
	return 0;
}

/* cudaMemGetInfo on device. */
int
iecu_mem_info(int device, uint64_t *free_bytes, uint64_t *total_bytes,
				 char *err, size_t errlen)
{
	size_t		f = 0,
				t = 0;
	cudaError_t e;

	*free_bytes = 0;
	*total_bytes = 0;
	e = cudaSetDevice(device);
	if (e != cudaSuccess)
		return cu_err(err, errlen, "cudaSetDevice", e);
	e = cudaMemGetInfo(&f, &t);
	if (e != cudaSuccess)
		return cu_err(err, errlen, "cudaMemGetInfo", e);
	*free_bytes = f;
	*total_bytes = t;
	return 0;
}

/*
 * The size class of n bytes (n >= CU_MIN_ALLOC) and its capacity: the
 * smallest (4 + j) * 2^(k-2) >= n, j in 0..3 (as tensor.c).
 */
static int
size_class(size_t n, size_t *cap)
{
	int			k = 63 - __builtin_clzll((unsigned long long) n);
	size_t		step = (size_t) 1 << (k - 2);
	size_t		j = (n - ((size_t) 1 << k) + step - 1) / step;

	if (j == 4)
	{
		k++;
		j = 0;
		step <<= 1;
	}
	*cap = ((size_t) 1 << k) + j * step;
	return k * 4 + (int) j;
}

/* Frees every buffer c's pool holds (cudaFree waits for the device). */
static void
pool_trim(cu_ctx *c)
{
	for (int k = 0; k < CU_POOL_CLASSES; k++)
		while (c->pool[k].n > 0)
			cudaFree(c->pool[k].bufs[--c->pool[k].n]);
	c->pool_held = 0;
}

/* A buffer of at least n bytes from c's pool, or a new one. */
void *
cu_pool_get(cu_ctx *c, size_t n, size_t *cap, char *err, size_t errlen)
{
	void	   *p = NULL;
	cudaError_t e;
	int			k;

	if (n < CU_MIN_ALLOC)
		n = CU_MIN_ALLOC;
	k = size_class(n, cap);
	if (k >= CU_POOL_CLASSES)
	{
		snprintf(err, errlen, "out of memory for a device buffer of %zu bytes (more than the pool's largest size)", n);
		return NULL;
	}
	if (c->pool[k].n > 0)
	{
		p = c->pool[k].bufs[--c->pool[k].n];
		c->pool_held -= *cap;
		c->pool_live += *cap;
		return p;
	}
	e = cudaMalloc(&p, *cap);
	if (e == cudaErrorMemoryAllocation)
	{
		(void) cudaGetLastError();	/* clears the sticky-free error state */
		pool_trim(c);
		e = cudaMalloc(&p, *cap);
	}
	if (e != cudaSuccess)
	{
		char		what[96];

		snprintf(what, sizeof(what), "cudaMalloc of %zu bytes on cuda:%d", *cap, c->device);
		cu_err(err, errlen, what, e);
		return NULL;
	}
	c->pool_live += *cap;
	return p;
}

/* Back to the pool, or cudaFree when its class is full. */
void
cu_pool_put(cu_ctx *c, void *p, size_t cap)
{
	size_t		cap2;
	int			k;

	if (p == NULL)
		return;
	k = size_class(cap, &cap2);
	c->pool_live -= cap;
	if (cap2 == cap && k < CU_POOL_CLASSES && c->pool[k].n < CU_POOL_PER_CLASS)
	{
		c->pool[k].bufs[c->pool[k].n++] = p;
		c->pool_held += cap;
		return;
	}
	cudaFree(p);
}

/* Frees one context (at thread exit). */
static void
ctx_free(cu_ctx *c)
{
	if (c == NULL)
		return;
	if (cudaSetDevice(c->device) == cudaSuccess)
	{
		if (c->stream != NULL)
			cudaStreamSynchronize(c->stream);
		pool_trim(c);
		if (c->pinned != NULL)
			cudaFreeHost(c->pinned);
		if (c->blas != NULL)
			cublasDestroy(c->blas);
		if (c->dnn != NULL)
			cudnnDestroy(c->dnn);
		if (c->stream != NULL)
			cudaStreamDestroy(c->stream);
	}
	free(c);
}

/* pthread key destructor: the exiting thread's contexts. */
static void
tls_free(void *p)
{
	cu_tls	   *t = p;

	for (int d = 0; d < CU_MAX_DEVICES; d++)
		ctx_free(t->ctx[d]);
	free(t);
}

static void
tls_init(void)
{
	pthread_key_create(&tls_key, tls_free);
}

/* A new context for device on the calling thread (device already current). */
static cu_ctx *
ctx_new(int device, char *err, size_t errlen)
{
	cu_ctx	   *c = calloc(1, sizeof(*c));
	cudaError_t e;
	cublasStatus_t bs;
	cudnnStatus_t ds;

	if (c == NULL)
	{
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	c->device = device;
	e = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking);
	if (e != cudaSuccess)
	{
		cu_err(err, errlen, "cudaStreamCreate", e);
		c->stream = NULL;
		goto fail;
	}
	bs = cublasCreate(&c->blas);
	if (bs != CUBLAS_STATUS_SUCCESS)
	{
		cu_blas_err(err, errlen, "cublasCreate", bs);
		c->blas = NULL;
		goto fail;
	}
	bs = cublasSetStream(c->blas, c->stream);
	if (bs != CUBLAS_STATUS_SUCCESS)
	{
		cu_blas_err(err, errlen, "cublasSetStream", bs);
		goto fail;
	}
	ds = cudnnCreate(&c->dnn);
	if (ds != CUDNN_STATUS_SUCCESS)
	{
		cu_dnn_err(err, errlen, "cudnnCreate", ds);
		c->dnn = NULL;
		goto fail;
	}
	ds = cudnnSetStream(c->dnn, c->stream);
	if (ds != CUDNN_STATUS_SUCCESS)
	{
		cu_dnn_err(err, errlen, "cudnnSetStream", ds);
		goto fail;
	}
	return c;

fail:
	ctx_free(c);
	return NULL;
}

/* The calling thread's context for device; makes device current. */
cu_ctx *
cu_ctx_get(int device, char *err, size_t errlen)
{
	cu_tls	   *t;
	cudaError_t e;

	if (device < 0 || device >= CU_MAX_DEVICES)
	{
		snprintf(err, errlen, "invalid CUDA device %d", device);
		return NULL;
	}
	e = cudaSetDevice(device);
	if (e != cudaSuccess)
	{
		cu_err(err, errlen, "cudaSetDevice", e);
		return NULL;
	}
	pthread_once(&tls_once, tls_init);
	t = pthread_getspecific(tls_key);
	if (t == NULL)
	{
		t = calloc(1, sizeof(*t));
		if (t == NULL || pthread_setspecific(tls_key, t) != 0)
		{
			free(t);
			snprintf(err, errlen, "out of memory");
			return NULL;
		}
	}
	if (t->ctx[device] == NULL)
		t->ctx[device] = ctx_new(device, err, errlen);
	return t->ctx[device];
}

/* Elements of t. */
int64_t
cu_numel(const ie_dtensor *t)
{
	int64_t		n = 1;

	for (int i = 0; i < t->ndim; i++)
		n *= t->dims[i];
	return n;
}

/*
 * A device tensor of dtype and dims from c's pool.  Its bytes must stay
 * under SIZE_MAX / 4, else "over the tensor limit for the device: ..."
 * (IE_ERR_LIMIT by cu_error_kind); an empty shape (a dim 0) is held to
 * that bound with its zero dims counted as 1, as the host's ie_tensor_new
 * holds it, so [0, 2^40, 2^40] and [2^40, 2^40, 0] are both refused and no
 * kernel or host copy multiplies their other dims past int64.  A negative
 * dim or an unknown type: "cannot hold ..." (IE_ERR_INVALID).
 */
ie_dtensor *
cu_dtensor_new(cu_ctx *c, ie_dtype dtype, int ndim, const int64_t *dims,
			   char *err, size_t errlen)
{
	ie_dtensor *t;
	size_t		esize = ie_dtype_size(dtype);
	size_t		n = 1;
	bool		empty = false;
	char		shape[256];

	if (esize == 0 || ndim < 0 || ndim > IE_MAX_DIMS)
	{
		snprintf(err, errlen, "cannot hold a %s tensor of rank %d on the device",
				 ie_dtype_name(dtype), ndim);
		return NULL;
	}
	for (int i = 0; i < ndim; i++)
		if (dims[i] < 0)
		{
			snprintf(err, errlen, "cannot hold a tensor of shape %s on the device",
					 ie_shape_str(shape, sizeof(shape), ndim, dims));
			return NULL;
		}
	for (int i = 0; i < ndim; i++)
	{
		if (dims[i] == 0)
		{
			empty = true;
			continue;
		}
		if (n > SIZE_MAX / 4 / esize / (size_t) dims[i])
		{
			ie_shape_str(shape, sizeof(shape), ndim, dims);
			for (int j = i + 1; j < ndim; j++)
				empty |= dims[j] == 0;
			snprintf(err, errlen, empty ?
					 "over the tensor limit for the device: an empty %s tensor of shape %s has other dims whose bytes the engine cannot count" :
					 "over the tensor limit for the device: a %s tensor of shape %s has more bytes than the engine can count",
					 ie_dtype_name(dtype), shape);
			return NULL;
		}
		n *= (size_t) dims[i];
	}
	if (empty)
		n = 0;
	t = calloc(1, sizeof(*t));
	if (t == NULL)
	{
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	t->dtype = dtype;
	t->ndim = ndim;
	for (int i = 0; i < ndim; i++)
		t->dims[i] = dims[i];
	t->nbytes = n * esize;
	t->ptr = cu_pool_get(c, t->nbytes, &t->cap, err, errlen);
	if (t->ptr == NULL)
	{
		free(t);
		return NULL;
	}
	return t;
}

/* Frees *t; a pool buffer goes back to c's pool. */
void
cu_dtensor_free(cu_ctx *c, ie_dtensor **t)
{
	if (t == NULL || *t == NULL)
		return;
	if ((*t)->cap > 0)
		cu_pool_put(c, (*t)->ptr, (*t)->cap);
	free(*t);
	*t = NULL;
}

/* Makes c's pinned staging buffer at least n bytes. */
static int
pinned_reserve(cu_ctx *c, size_t n, char *err, size_t errlen)
{
	size_t		cap = 1 << 20;
	cudaError_t e;

	if (n <= c->pinned_cap)
		return 0;
	while (cap < n)
		cap *= 2;
	if (c->pinned != NULL)
	{
		/* the old buffer may still feed a copy on the stream */
		e = cudaStreamSynchronize(c->stream);
		if (e != cudaSuccess)
			return cu_err(err, errlen, "cudaStreamSynchronize", e);
		cudaFreeHost(c->pinned);
		c->pinned = NULL;
		c->pinned_cap = 0;
	}
	e = cudaMallocHost(&c->pinned, cap);
	if (e != cudaSuccess)
	{
		c->pinned = NULL;
		return cu_err(err, errlen, "cudaMallocHost (pinned staging buffer)", e);
	}
	c->pinned_cap = cap;
	return 0;
}

/* The pinned staging buffer, at least n bytes; see cuda_int.h. */
void *
cu_pinned(cu_ctx *c, size_t n, char *err, size_t errlen)
{
	return pinned_reserve(c, n, err, errlen) == 0 ? c->pinned : NULL;
}

/* Host -> device through the pinned buffer. */
int
cu_upload(cu_ctx *c, const ie_tensor *h, ie_dtensor **out, char *err, size_t errlen)
{
	ie_dtensor *d;
	cudaError_t e;

	*out = NULL;
	d = cu_dtensor_new(c, h->dtype, h->ndim, h->dims, err, errlen);
	if (d == NULL)
		return -1;
	if (h->nbytes > 0)
	{
		if (pinned_reserve(c, h->nbytes, err, errlen) != 0)
			goto fail;
		memcpy(c->pinned, h->data, h->nbytes);
		e = cudaMemcpyAsync(d->ptr, c->pinned, h->nbytes, cudaMemcpyHostToDevice, c->stream);
		if (e != cudaSuccess)
		{
			cu_err(err, errlen, "cudaMemcpyAsync (upload)", e);
			goto fail;
		}
		/* the staging buffer is reused by the next copy */
		e = cudaStreamSynchronize(c->stream);
		if (e != cudaSuccess)
		{
			cu_err(err, errlen, "cudaStreamSynchronize (upload)", e);
			goto fail;
		}
	}
	*out = d;
	return 0;

fail:
	cu_dtensor_free(c, &d);
	return -1;
}

/* Device -> host through the pinned buffer. */
int
cu_download(cu_ctx *c, const ie_dtensor *d, ie_tensor **out, char *err, size_t errlen)
{
	ie_tensor  *h;
	cudaError_t e;

	*out = NULL;
	h = ie_tensor_new_uninit(d->dtype, d->ndim, d->dims);
	if (h == NULL)
	{
		char		why[384];

		/*
		 * Refused for its shape, not for memory: over the tensor limit, or
		 * an empty [0, 2^40, 2^40], which the device holds in 0 bytes but
		 * the host refuses for its other dims (IE_ERR_LIMIT, cu_error_kind)
		 */
		if (ie_tensor_take_refusal(why, sizeof(why)))
			snprintf(err, errlen, "over the tensor limit for a host tensor: %s", why);
		else
			snprintf(err, errlen, "out of memory for a %zu-byte host tensor", d->nbytes);
		return -1;
	}
	if (d->nbytes > 0)
	{
		if (pinned_reserve(c, d->nbytes, err, errlen) != 0)
			goto fail;
		e = cudaMemcpyAsync(c->pinned, d->ptr, d->nbytes, cudaMemcpyDeviceToHost, c->stream);
		if (e != cudaSuccess)
		{
			cu_err(err, errlen, "cudaMemcpyAsync (download)", e);
			goto fail;
		}
		e = cudaStreamSynchronize(c->stream);
		if (e != cudaSuccess)
		{
			cu_err(err, errlen, "running the model's kernels (cudaStreamSynchronize)", e);
			goto fail;
		}
		memcpy(h->data, c->pinned, d->nbytes);
	}
	*out = h;
	return 0;

fail:
	ie_tensor_destroy(&h);
	return -1;
}
