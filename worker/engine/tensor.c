/*
 * tensor.c
 *	  Dense tensors: allocation, copies and element-type facts.
 *
 * Tensors are plain heap objects with one owner.  Their data buffers of
 * 16 KiB and more come from a process-wide cache of freed buffers, by size
 * class, so that running a model again does not map, fault in and unmap
 * the same pages for every intermediate tensor (at batch 64 that cost more
 * than the arithmetic).  The cache holds at most IE_CACHE_MAX_BYTES; a
 * buffer that does not fit is freed.
 *
 * Threading: the cache is shared by all threads under one mutex, held only
 * to push or pop a pointer.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/engine/engine.h"
#include "worker/engine/op.h"

#define IE_ALIGN 64

/* Buffers smaller than this go straight to malloc (its bins are quick). */
#define IE_CACHE_MIN_BYTES ((size_t) 16 * 1024)
/* Most bytes the cache keeps, and most buffers per size class. */
#define IE_CACHE_MAX_BYTES ((size_t) 512 * 1024 * 1024)
#define IE_CACHE_PER_CLASS 32
/* Size classes: 4 per power of two (<= 25% waste), up to 2^47 bytes. */
#define IE_CACHE_CLASSES (4 * 48)

typedef struct buf_class
{
	int			n;
	void	   *bufs[IE_CACHE_PER_CLASS];
} buf_class;

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static buf_class cache[IE_CACHE_CLASSES];
static size_t cache_bytes;

/*
 * The size class of a request of n bytes (n >= IE_CACHE_MIN_BYTES), and
 * its capacity in *cap: the smallest (4 + j) * 2^(k-2) >= n, j in 0..3.
 */
static int
size_class(size_t n, size_t *cap)
{
	int			k = 63 - __builtin_clzll((unsigned long long) n);	/* 2^k <= n */
	size_t		step = (size_t) 1 << (k - 2);
	size_t		j = (n - ((size_t) 1 << k) + step - 1) / step;	/* 0..4 */

	if (j == 4)
	{
		k++;
		j = 0;
		step <<= 1;
	}
	*cap = ((size_t) 1 << k) + j * step;
	return k * 4 + (int) j;
}

/*
 * A 64-byte aligned buffer of at least n bytes, not zeroed; *cap receives
 * its capacity (0 for a plain allocation the cache will not take back).
 */
static void *
buf_get(size_t n, size_t *cap)
{
	void	   *p = NULL;
	int			c;

	if (n < IE_CACHE_MIN_BYTES)
	{
		*cap = 0;
		/* aligned_alloc wants a multiple of the alignment, and never size 0 */
		return aligned_alloc(IE_ALIGN, (n + IE_ALIGN - 1) / IE_ALIGN * IE_ALIGN + IE_ALIGN);
	}
	c = size_class(n, cap);
	if (c >= IE_CACHE_CLASSES)
		return NULL;
	pthread_mutex_lock(&cache_lock);
	if (cache[c].n > 0)
	{
		p = cache[c].bufs[--cache[c].n];
		cache_bytes -= *cap;
	}
	pthread_mutex_unlock(&cache_lock);
	if (p == NULL)
		p = aligned_alloc(IE_ALIGN, *cap);
	return p;
}

/* Returns buffer p of capacity cap (0: not cached) to the cache or frees it. */
static void
buf_put(void *p, size_t cap)
{
	size_t		cap2;
	int			c;

	if (p == NULL)
		return;
	if (cap < IE_CACHE_MIN_BYTES)
	{
		free(p);
		return;
	}
	c = size_class(cap, &cap2);
	pthread_mutex_lock(&cache_lock);
	if (cap2 == cap && c < IE_CACHE_CLASSES && cache[c].n < IE_CACHE_PER_CLASS &&
		cache_bytes + cap <= IE_CACHE_MAX_BYTES)
	{
		cache[c].bufs[cache[c].n++] = p;
		cache_bytes += cap;
		p = NULL;
	}
	pthread_mutex_unlock(&cache_lock);
	free(p);
}

/* Frees every cached buffer (for tests and memory pressure). */
void
ie_tensor_cache_clear(void)
{
	pthread_mutex_lock(&cache_lock);
	for (int c = 0; c < IE_CACHE_CLASSES; c++)
	{
		while (cache[c].n > 0)
			free(cache[c].bufs[--cache[c].n]);
	}
	cache_bytes = 0;
	pthread_mutex_unlock(&cache_lock);
}

/* Bytes the buffer cache holds now. */
size_t
ie_tensor_cache_bytes(void)
{
	size_t		n;

	pthread_mutex_lock(&cache_lock);
	n = cache_bytes;
	pthread_mutex_unlock(&cache_lock);
	return n;
}

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

/*
 * Product of the dims; 1 for a scalar.  0 when any dim is 0, before
 * multiplying: an empty tensor built by hand (a caller's input, a test's
 * [2^40, 2^40, 0]) may have other dims whose product overflows int64,
 * though ie_tensor_new refuses them (data_bytes).
 */
int64_t
ie_tensor_numel(const ie_tensor *t)
{
	int64_t		n = 1;

	for (int i = 0; i < t->ndim; i++)
		if (t->dims[i] == 0)
			return 0;
	for (int i = 0; i < t->ndim; i++)
		n *= t->dims[i];
	return n;
}

/* Largest tensor data allowed, in bytes; 0: no limit (ie_set_max_tensor_bytes). */
static size_t max_tensor_bytes;

/*
 * The calling thread's last tensor (or operator's scratch buffer, see
 * ie_scratch_fits) refused for its size (over max_tensor_bytes, or a byte
 * count past SIZE_MAX / 2), until ie_tensor_take_refusal reads it or an
 * allocation fails for want of memory: what tells the two apart for
 * ie_op_error.
 */
static _Thread_local struct
{
	bool		set;
	bool		uncountable;	/* its byte count passes SIZE_MAX / 2 */
	bool		empty;			/* refused for its span, having no data */
	const char *what;			/* "tensor" or "buffer" */
	ie_dtype	dtype;
	int			ndim;
	int64_t		dims[IE_MAX_DIMS];
	size_t		bytes;
}			refused;

/*
 * Notes the refusal of a tensor or buffer (what) of dtype and shape (bytes
 * when countable).
 */
static void
note_refusal(const char *what, ie_dtype dtype, int ndim, const int64_t *dims,
			 bool uncountable, bool empty, size_t bytes)
{
	refused.set = true;
	refused.uncountable = uncountable;
	refused.empty = empty;
	refused.what = what;
	refused.dtype = dtype;
	refused.ndim = ndim;
	memcpy(refused.dims, dims, (size_t) ndim * sizeof(dims[0]));
	refused.bytes = bytes;
}

/* Forgets this thread's last refusal; see op.h. */
void
ie_tensor_forget_refusal(void)
{
	refused.set = false;
}

/* Describes and forgets this thread's last refusal; see op.h. */
bool
ie_tensor_take_refusal(char *buf, size_t len)
{
	char		shape[256];

	if (!refused.set)
		return false;
	refused.set = false;
	ie_shape_str(shape, sizeof(shape), refused.ndim, refused.dims);
	if (refused.empty && refused.uncountable)
		snprintf(buf, len, "an empty %s %s of shape %s has other dims whose bytes the engine cannot count",
				 ie_dtype_name(refused.dtype), refused.what, shape);
	else if (refused.empty)
		snprintf(buf, len, "an empty %s %s of shape %s has other dims of %zu bytes, more than the %zu bytes a tensor may take",
				 ie_dtype_name(refused.dtype), refused.what, shape, refused.bytes,
				 max_tensor_bytes);
	else if (refused.uncountable)
		snprintf(buf, len, "a %s %s of shape %s has more bytes than the engine can count",
				 ie_dtype_name(refused.dtype), refused.what, shape);
	else
		snprintf(buf, len, "a %s %s of shape %s is %zu bytes, more than the %zu bytes a tensor may take",
				 ie_dtype_name(refused.dtype), refused.what, shape, refused.bytes,
				 max_tensor_bytes);
	return true;
}

/* Sets the largest tensor data the engine allocates; see engine.h. */
void
ie_set_max_tensor_bytes(size_t bytes)
{
	max_tensor_bytes = bytes;
}

/*
 * The byte count of data of dtype and shape (ndim dims) into *bytes: 0; 1
 * when it is refused for its size (past SIZE_MAX / 2, or over
 * max_tensor_bytes), the refusal of a `what` ("tensor" or "buffer") noted
 * for the calling thread; -1 for a dtype or shape that holds no data.
 * Clears the thread's last refusal first.  A few compares per dimension.
 *
 * An empty shape (a dim 0) is held to the same bounds with its zero dims
 * counted as 1: its other dims are what operators loop over and multiply
 * into outer and inner extents, so [10^15, 0] would cost 10^15 steps over
 * nothing and [2^40, 2^40, 0] overflow int64, where no tensor with data of
 * those dims could exist.  (ONNX Runtime's TensorShape::Size likewise
 * refuses a shape whose product overflows before it reaches the 0.)
 */
static int
data_bytes(const char *what, ie_dtype dtype, int ndim, const int64_t *dims,
		   size_t *bytes)
{
	size_t		esize = ie_dtype_size(dtype);
	size_t		span = 1;		/* the element count, zero dims as 1 */
	bool		empty = false;

	refused.set = false;
	if (esize == 0 || ndim < 0 || ndim > IE_MAX_DIMS)
		return -1;
	for (int i = 0; i < ndim; i++)
	{
		if (dims[i] < 0)
			return -1;
		if (dims[i] == 0)
			empty = true;
	}
	for (int i = 0; i < ndim; i++)
	{
		if (dims[i] == 0)
			continue;
		if (span > SIZE_MAX / esize / (size_t) dims[i])
		{
			note_refusal(what, dtype, ndim, dims, true, empty, 0);
			return 1;
		}
		span *= (size_t) dims[i];
	}
	if (span * esize > SIZE_MAX / 2 ||
		(max_tensor_bytes > 0 && span * esize > max_tensor_bytes))
	{
		note_refusal(what, dtype, ndim, dims, span * esize > SIZE_MAX / 2, empty,
					 span * esize);
		return 1;
	}
	*bytes = empty ? 0 : span * esize;
	return 0;
}

/* A piece's scratch budget under the tensor limit; see op.h. */
size_t
ie_scratch_budget(size_t bytes)
{
	return max_tensor_bytes > 0 && max_tensor_bytes < bytes ? max_tensor_bytes : bytes;
}

/* Whether an operator's scratch buffer fits the tensor limit; see op.h. */
bool
ie_scratch_fits(ie_dtype dtype, int ndim, const int64_t *dims)
{
	size_t		bytes;

	return data_bytes("buffer", dtype, ndim, dims, &bytes) == 0;
}

/* An operator's scratch buffer (malloc) when it fits the limit; see op.h. */
void *
ie_scratch_new(ie_dtype dtype, int ndim, const int64_t *dims)
{
	size_t		bytes;

	if (data_bytes("buffer", dtype, ndim, dims, &bytes) != 0)
		return NULL;
	return malloc(bytes > 0 ? bytes : 1);
}

/*
 * Tensor of the given type and shape whose data is not initialised; NULL on
 * overflow, above the limit of ie_set_max_tensor_bytes, or no memory.
 */
ie_tensor *
ie_tensor_new_uninit(ie_dtype dtype, int ndim, const int64_t *dims)
{
	ie_tensor  *t;
	size_t		bytes;

	if (data_bytes("tensor", dtype, ndim, dims, &bytes) != 0)
		return NULL;
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		return NULL;
	t->dtype = dtype;
	t->ndim = ndim;
	for (int i = 0; i < ndim; i++)
		t->dims[i] = dims[i];
	t->nbytes = bytes;
	t->data = buf_get(t->nbytes, &t->cap);
	if (t->data == NULL)
	{
		free(t);
		return NULL;
	}
	return t;
}

/*
 * A new tensor of shape dims (ndim) holding src's buffer, which must have
 * the same byte count; src is left empty (no data, 0 bytes).  NULL (src
 * untouched) when the sizes differ or memory runs out.  See op.h.
 */
ie_tensor *
ie_tensor_take(ie_tensor *src, int ndim, const int64_t *dims)
{
	ie_tensor  *t;
	size_t		n;

	if (data_bytes("tensor", src->dtype, ndim, dims, &n) != 0 ||
		n != src->nbytes || src->data == NULL)
		return NULL;
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		return NULL;
	t->dtype = src->dtype;
	t->ndim = ndim;
	for (int i = 0; i < ndim; i++)
		t->dims[i] = dims[i];
	t->data = src->data;
	t->nbytes = src->nbytes;
	t->cap = src->cap;
	src->data = NULL;
	src->nbytes = 0;
	src->cap = 0;
	return t;
}

/* Zeroed tensor of the given type and shape; NULL on overflow or no memory. */
ie_tensor *
ie_tensor_new(ie_dtype dtype, int ndim, const int64_t *dims)
{
	ie_tensor  *t = ie_tensor_new_uninit(dtype, ndim, dims);

	if (t != NULL)
		memset(t->data, 0, t->nbytes);
	return t;
}

/* Deep copy; NULL when memory runs out. */
ie_tensor *
ie_tensor_clone(const ie_tensor *src)
{
	ie_tensor  *t = ie_tensor_new_uninit(src->dtype, src->ndim, src->dims);

	if (t != NULL && src->nbytes > 0)
		memcpy(t->data, src->data, src->nbytes);
	return t;
}

/*
 * Frees *t and nulls the caller's pointer; a buffer from the cache goes
 * back to it (a tensor built by hand has cap 0 and its data is freed).
 */
void
ie_tensor_destroy(ie_tensor **t)
{
	if (t == NULL || *t == NULL)
		return;
	buf_put((*t)->data, (*t)->cap);
	free(*t);
	*t = NULL;
}
