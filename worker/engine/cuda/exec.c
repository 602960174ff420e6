/*
 * exec.c
 *	  Running a planned model on a CUDA device: weights uploaded at load
 *	  (iecu_model_prepare), then per run the nodes in plan order, each
 *	  through its native operator (ops.c) or, where there is none or the
 *	  operator declines the case (CU_FALLBACK), through the CPU operator
 *	  with explicit copies.
 *
 * Every value of a run may have a host copy, a device copy or both; an
 * operator asks for the side it needs (cu_op_host / cu_op_dev) and the
 * copy is made then, once.  Constants have both from the start (the
 * model's host tensor and its uploaded twin).  Nodes whose run-time inputs
 * are small integer tensors on the host only (shape arithmetic: Shape,
 * Gather of a shape, Concat of dims; token ids) run on the CPU without a
 * copy.  Each value is freed after its last reader, as in executor.c.
 * IE_CUDA_CPU_OPS=Conv,Resize (say) in the environment runs those
 * operators on the CPU, to find a faulty kernel on a GPU machine.
 *
 * Threading: a run keeps its state on its own heap and uses the calling
 * thread's context (stream, handles, pool: device.c); the model is only
 * read, except the atomic "fallback logged" flags.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/engine/cuda/cuda_int.h"
#include "worker/engine/cuda/kernels.h"

/* Run-time inputs up to this many bytes, on the host only, keep a node on the CPU. */
#define CU_HOST_SMALL_BYTES ((size_t) 64 * 1024)

/* One value of a run. */
typedef struct cu_slot
{
	ie_tensor  *host;
	ie_dtensor *dev;
	bool		host_owned;
	bool		dev_owned;
} cu_slot;

/* The node a native operator runs, and the run around it. */
struct cu_op
{
	const ie_model *m;
	const ie_plan_node *pn;
	cu_ctx	   *c;
	cu_slot    *slots;			/* the run's values */
	cu_slot    *outs;			/* [pn->n_outputs] this node's new outputs */
	ie_node_ctx nc;
};

static bool forced_to_cpu(const char *op_type);

/*
 * IE_CUDA_PROFILE set in the environment: each node is waited for and
 * timed (so the device's asynchrony is lost: for finding where a run's
 * time goes, not for speed), summed per operator type and place (device
 * or CPU), and printed to stderr at exit, the largest first.
 */
#define CU_PROF_SLOTS 96

typedef struct cu_prof_entry
{
	char		op[32];
	bool		cpu;
	long		n;
	double		ms;
	long		copies;			/* values moved between host and device */
} cu_prof_entry;

/* Host-device copies of the node running on this thread (profile only). */
static _Thread_local long prof_node_copies;

static cu_prof_entry prof[CU_PROF_SLOTS];
static pthread_mutex_t prof_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t prof_once = PTHREAD_ONCE_INIT;
static bool prof_on;

static int
prof_cmp(const void *a, const void *b)
{
	double		d = ((const cu_prof_entry *) b)->ms - ((const cu_prof_entry *) a)->ms;

	return d > 0 ? 1 : (d < 0 ? -1 : 0);
}

static void
prof_print(void)
{
	double		total = 0;

	pthread_mutex_lock(&prof_lock);
	qsort(prof, CU_PROF_SLOTS, sizeof(prof[0]), prof_cmp);
	for (int i = 0; i < CU_PROF_SLOTS; i++)
		total += prof[i].ms;
	fprintf(stderr, "infer-engine profile (IE_CUDA_PROFILE): %.1f ms in nodes\n", total);
	for (int i = 0; i < CU_PROF_SLOTS && prof[i].n > 0; i++)
		fprintf(stderr, "infer-engine profile: %-22s %-6s %8ld calls %10.2f ms %8.1f us/call %5.1f%% %6ld copies\n",
				prof[i].op, prof[i].cpu ? "cpu" : "device", prof[i].n, prof[i].ms,
				prof[i].ms * 1e3 / prof[i].n, total > 0 ? 100 * prof[i].ms / total : 0,
				prof[i].copies);
	pthread_mutex_unlock(&prof_lock);
}

static void
prof_init(void)
{
	prof_on = getenv("IE_CUDA_PROFILE") != NULL;
	if (prof_on)
		atexit(prof_print);
}

/* Adds one node's time to the profile. */
static void
prof_add(const char *op_type, bool cpu, double ms, long copies)
{
	pthread_mutex_lock(&prof_lock);
	for (int i = 0; i < CU_PROF_SLOTS; i++)
		if (prof[i].n == 0 ||
			(prof[i].cpu == cpu && strncmp(prof[i].op, op_type, sizeof(prof[i].op) - 1) == 0))
		{
			if (prof[i].n == 0)
			{
				snprintf(prof[i].op, sizeof(prof[i].op), "%s", op_type);
				prof[i].cpu = cpu;
			}
			prof[i].n++;
			prof[i].ms += ms;
			prof[i].copies += copies;
			break;
		}
	pthread_mutex_unlock(&prof_lock);
}

/* ---- load time ---- */

/*
 * cu_err into err, returning what iecu_model_prepare returns for status e:
 * -IE_ERR_NO_MEMORY when the device's memory ran out, else
 * -IE_ERR_NOT_SUPPORTED (a valid model the device cannot take).  The kind
 * comes from e, not from the message, which may hold a weight's name.
 */
static int
prepare_error(char *err, size_t errlen, const char *what, cudaError_t e)
{
	cu_err(err, errlen, what, e);
	return e == cudaErrorMemoryAllocation ? -IE_ERR_NO_MEMORY : -IE_ERR_NOT_SUPPORTED;
}

/*
 * FP16/BF16 models: converts, once, each float constant that a MatMul,
 * Gemm or Conv reads in a 16-bit slot (cu_op_16bit_slot) into a 16-bit
 * device copy (consts16), and frees the FP32 device copy of those that
 * nothing else reads (a run that still needs one uploads it from the
 * host copy, which the model keeps).  0, or as iecu_model_prepare.
 */
static int
convert_weights(ie_model *m, cu_ctx *c, char *err, size_t errlen)
{
	ie_cuda_model *cm = m->cuda;
	int			bf16 = m->precision == IE_PRECISION_BF16;
	bool	   *other;
	cudaError_t e;

	cm->consts16 = calloc(m->n_values ? m->n_values : 1, sizeof(*cm->consts16));
	other = calloc(m->n_values ? m->n_values : 1, sizeof(bool));
	if (cm->consts16 == NULL || other == NULL)
	{
		free(other);
		snprintf(err, errlen, "model '%s': out of memory preparing it for cuda:%d",
				 m->name, m->device);
		return -IE_ERR_NO_MEMORY;
	}
	for (int k = 0; k < m->n_nodes; k++)
		for (int i = 0; i < m->nodes[k].n_inputs; i++)
		{
			int			v = m->nodes[k].inputs[i];
			const ie_dtensor *d = v >= 0 ? cm->consts[v] : NULL;
			ie_dtensor *h;

			if (d == NULL)
				continue;
			if (!cu_op_16bit_slot(m->nodes[k].op_type, i) || d->dtype != IE_FLOAT)
			{
				other[v] = true;
				continue;
			}
			if (cm->consts16[v] != NULL)
				continue;
			h = calloc(1, sizeof(*h));
			if (h == NULL)
			{
				free(other);
				snprintf(err, errlen, "model '%s': out of memory preparing it for cuda:%d",
						 m->name, m->device);
				return -IE_ERR_NO_MEMORY;
			}
			*h = *d;
			h->dtype = bf16 ? CU_BFLOAT16 : IE_FLOAT16;
			h->nbytes = d->nbytes / 2;
			e = cudaMalloc(&h->ptr, h->nbytes > 0 ? h->nbytes : 1);
			if (e != cudaSuccess)
			{
				free(h);
				free(other);
				return prepare_error(err, errlen, "16-bit weights (cudaMalloc)", e);
			}
			cm->consts16[v] = h;
			cm->device_bytes += h->nbytes;
			e = cu_k_to_16(bf16, d->ptr, h->ptr, cu_numel(d), c->stream);
			if (e != cudaSuccess)
			{
				free(other);
				return prepare_error(err, errlen, "16-bit weights (conversion kernel)", e);
			}
		}
	e = cudaStreamSynchronize(c->stream);
	if (e != cudaSuccess)
	{
		free(other);
		return prepare_error(err, errlen, "16-bit weights (cudaStreamSynchronize)", e);
	}
	for (int v = 0; v < m->n_values; v++)
		if (cm->consts16[v] != NULL && !other[v])
		{
			cm->device_bytes -= cm->consts[v]->nbytes;
			cudaFree(cm->consts[v]->ptr);
			free(cm->consts[v]);
			cm->consts[v] = NULL;
		}
	free(other);
	return 0;
}

/* Uploads every constant and marks the nodes with a native operator (ie_cuda_model_prepare). */
int
iecu_model_prepare(ie_model *m, char *err, size_t errlen)
{
	ie_cuda_model *cm;
	cu_ctx	   *c;
	char		fallback[512];
	size_t		flen = 0;
	cudaError_t e;

	cm = calloc(1, sizeof(*cm));
	if (cm == NULL)
		goto oom;
	m->cuda = cm;
	pthread_mutex_init(&cm->memo_lock, NULL);
	cm->consts = calloc(m->n_values ? m->n_values : 1, sizeof(*cm->consts));
	cm->native = calloc(m->n_nodes ? m->n_nodes : 1, sizeof(*cm->native));
	cm->warned = calloc(m->n_nodes ? m->n_nodes : 1, sizeof(*cm->warned));
	cm->memo = calloc(m->n_nodes ? m->n_nodes : 1, sizeof(*cm->memo));
	if (cm->consts == NULL || cm->native == NULL || cm->warned == NULL || cm->memo == NULL)
		goto oom;
	c = cu_ctx_get(m->device, err, errlen);
	if (c == NULL)				/* a device function's message */
		return cu_error_kind(err) == IE_ERR_NO_MEMORY ? -IE_ERR_NO_MEMORY :
			-IE_ERR_NOT_SUPPORTED;
	for (int v = 0; v < m->n_values; v++)
	{
		ie_dtensor *d;
		const ie_tensor *h = m->consts[v];

		if (h == NULL || ie_dtype_size(h->dtype) == 0)
			continue;
		/* weights are the model's: cudaMalloc'd, not from a thread's pool */
		d = calloc(1, sizeof(*d));
		if (d == NULL)
			goto oom;
		d->dtype = h->dtype;
		d->ndim = h->ndim;
		memcpy(d->dims, h->dims, sizeof(d->dims));
		d->nbytes = h->nbytes;
		e = cudaMalloc(&d->ptr, h->nbytes > 0 ? h->nbytes : 1);
		if (e != cudaSuccess)
		{
			free(d);
			snprintf(fallback, sizeof(fallback), "model '%s': uploading weight '%s' (%zu bytes) to cuda:%d",
					 m->name, m->value_names[v], h->nbytes, m->device);
			return prepare_error(err, errlen, fallback, e);
		}
		cm->consts[v] = d;
		cm->device_bytes += h->nbytes;
		if (h->nbytes > 0)
		{
			e = cudaMemcpy(d->ptr, h->data, h->nbytes, cudaMemcpyHostToDevice);
			if (e != cudaSuccess)
				return prepare_error(err, errlen, "uploading weights (cudaMemcpy)", e);
		}
	}
	/* a pageable cudaMemcpy may return before its DMA ends: wait for it */
	e = cudaDeviceSynchronize();
	if (e != cudaSuccess)
		return prepare_error(err, errlen, "uploading weights (cudaDeviceSynchronize)", e);
	if (m->precision == IE_PRECISION_FP16 || m->precision == IE_PRECISION_BF16)
	{
		int			rc = convert_weights(m, c, err, errlen);

		if (rc != 0)
			return rc;
	}

	fallback[0] = '\0';
	for (int k = 0; k < m->n_nodes; k++)
	{
		const char *op = m->nodes[k].op_type;

		cm->native[k] = cu_op_lookup(op) != NULL && !forced_to_cpu(op);
		if (!cm->native[k] && strstr(fallback, op) == NULL && flen + strlen(op) + 3 < sizeof(fallback))
			flen += snprintf(fallback + flen, sizeof(fallback) - flen, "%s%s",
							 flen ? ", " : "", op);
	}
	if (flen > 0)
		fprintf(stderr, "infer-engine: model '%s' on cuda:%d: no CUDA kernel for %s; those nodes run on the CPU with copies\n",
				m->name, m->device, fallback);
	return 0;

oom:
	snprintf(err, errlen, "model '%s': out of memory preparing it for cuda:%d",
			 m->name, m->device);
	return -IE_ERR_NO_MEMORY;
}

/* Frees the uploaded weights and the per-node facts. */
void
iecu_model_release(ie_model *m)
{
	ie_cuda_model *cm = m->cuda;

	if (cm == NULL)
		return;
	if (cm->consts != NULL)
	{
		if (cudaSetDevice(m->device) == cudaSuccess)
			cudaDeviceSynchronize();	/* no run may still read them */
		for (int v = 0; v < m->n_values; v++)
			if (cm->consts[v] != NULL)
			{
				cudaFree(cm->consts[v]->ptr);
				free(cm->consts[v]);
			}
	}
	if (cm->consts16 != NULL)
		for (int v = 0; v < m->n_values; v++)
			if (cm->consts16[v] != NULL)
			{
				cudaFree(cm->consts16[v]->ptr);
				free(cm->consts16[v]);
			}
	free(cm->consts);
	free(cm->consts16);
	free(cm->native);
	free(cm->warned);
	free(cm->memo);
	pthread_mutex_destroy(&cm->memo_lock);
	free(cm);
	m->cuda = NULL;
}

/* ---- the accessors of cuda_int.h ---- */

ie_node_ctx *
cu_op_node(cu_op *op)
{
	return &op->nc;
}

/* The node's error for a device function's failure; see cuda_int.h. */
int
cu_op_fail(cu_op *op, const char *msg, const char *fmt,...)
{
	char		what[256];
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	ie_op_error(&op->nc, "%s: %s", what, msg);
	op->nc.err_kind = cu_error_kind(msg);
	return -1;
}

cu_ctx *
cu_op_ctx(cu_op *op)
{
	return op->c;
}

bool
cu_op_tf32(cu_op *op)
{
	return op->m->precision == IE_PRECISION_TF32;
}

ie_precision
cu_op_precision(cu_op *op)
{
	return op->m->precision;
}

bool
cu_op_16bit_slot(const char *op_type, int i)
{
	if (strcmp(op_type, "MatMul") == 0 || strcmp(op_type, "Gemm") == 0)
		return i == 0 || i == 1;
	return strcmp(op_type, "Conv") == 0 && i == 1;
}

const ie_dtensor *
cu_op_dev16(cu_op *op, int i)
{
	int			v = i >= 0 && i < op->pn->n_inputs ? op->pn->inputs[i] : -1;

	return v >= 0 && op->m->cuda->consts16 != NULL ? op->m->cuda->consts16[v] : NULL;
}

int
cu_op_n_inputs(cu_op *op)
{
	return op->pn->n_inputs;
}

/* The slot of input i, or NULL when omitted or out of range. */
static cu_slot *
in_slot(cu_op *op, int i)
{
	if (i < 0 || i >= op->pn->n_inputs || op->pn->inputs[i] < 0)
		return NULL;
	return &op->slots[op->pn->inputs[i]];
}

bool
cu_op_has(cu_op *op, int i)
{
	return in_slot(op, i) != NULL;
}

void
cu_op_shape(cu_op *op, int i, ie_dtype *dtype, int *ndim, int64_t dims[IE_MAX_DIMS])
{
	cu_slot    *s = in_slot(op, i);

	if (s != NULL && s->host != NULL)
	{
		*dtype = s->host->dtype;
		*ndim = s->host->ndim;
		memcpy(dims, s->host->dims, sizeof(int64_t) * IE_MAX_DIMS);
	}
	else if (s != NULL && s->dev != NULL)
	{
		*dtype = s->dev->dtype;
		*ndim = s->dev->ndim;
		memcpy(dims, s->dev->dims, sizeof(int64_t) * IE_MAX_DIMS);
	}
	else
	{
		*dtype = IE_UNDEFINED;
		*ndim = 0;
	}
}

/* Input i on the host, downloading it once when needed. */
const ie_tensor *
cu_op_host(cu_op *op, int i)
{
	cu_slot    *s = in_slot(op, i);
	char		e2[512];

	if (s == NULL)
	{
		ie_op_error(&op->nc, "input %d is missing", i);
		return NULL;
	}
	if (s->host == NULL && s->dev != NULL)
	{
		if (cu_download(op->c, s->dev, &s->host, e2, sizeof(e2)) != 0)
		{
			cu_op_fail(op, e2, "input %d to the host", i);
			return NULL;
		}
		prof_node_copies++;
		s->host_owned = true;
	}
	if (s->host == NULL)
		ie_op_error(&op->nc, "input %d was not produced", i);
	return s->host;
}

/* Input i on the device, uploading it once when needed. */
const ie_dtensor *
cu_op_dev(cu_op *op, int i)
{
	cu_slot    *s = in_slot(op, i);
	char		e2[512];

	if (s == NULL)
	{
		ie_op_error(&op->nc, "input %d is missing", i);
		return NULL;
	}
	if (s->dev == NULL && s->host != NULL)
	{
		if (cu_upload(op->c, s->host, &s->dev, e2, sizeof(e2)) != 0)
		{
			cu_op_fail(op, e2, "input %d to the device", i);
			return NULL;
		}
		prof_node_copies++;
		s->dev_owned = true;
	}
	if (s->dev == NULL)
		ie_op_error(&op->nc, "input %d was not produced", i);
	return s->dev;
}

/* The node's index in the plan. */
static int
op_index(cu_op *op)
{
	return (int) (op->pn - op->m->nodes);
}

/* The node's memo, when it was made for key. */
bool
cu_op_memo_get(cu_op *op, const int64_t key[8], cu_algo_memo *out)
{
	ie_cuda_model *cm = op->m->cuda;
	bool		hit;

	pthread_mutex_lock(&cm->memo_lock);
	*out = cm->memo[op_index(op)];
	pthread_mutex_unlock(&cm->memo_lock);
	hit = out->valid && memcmp(out->key, key, sizeof(out->key)) == 0;
	return hit;
}

/* Replaces the node's memo. */
void
cu_op_memo_put(cu_op *op, const int64_t key[8], int algo, int math, size_t ws_bytes)
{
	ie_cuda_model *cm = op->m->cuda;
	cu_algo_memo *e = &cm->memo[op_index(op)];

	pthread_mutex_lock(&cm->memo_lock);
	memcpy(e->key, key, sizeof(e->key));
	e->algo = algo;
	e->math = math;
	e->ws_bytes = ws_bytes;
	e->valid = true;
	pthread_mutex_unlock(&cm->memo_lock);
}

/* Whether output j exists and is used (not omitted). */
bool
cu_op_has_out(cu_op *op, int j)
{
	return j >= 0 && j < op->pn->n_outputs && op->pn->outputs[j] >= 0;
}

/* A new device tensor for output j. */
ie_dtensor *
cu_op_out(cu_op *op, int j, ie_dtype dtype, int ndim, const int64_t *dims)
{
	ie_dtensor *d;
	char		e2[512];

	if (j < 0 || j >= op->pn->n_outputs)
	{
		ie_op_error(&op->nc, "output %d out of range", j);
		return NULL;
	}
	d = cu_dtensor_new(op->c, dtype, ndim, dims, e2, sizeof(e2));
	if (d == NULL)
	{
		cu_op_fail(op, e2, "output %d", j);
		return NULL;
	}
	cu_dtensor_free(op->c, &op->outs[j].dev);
	op->outs[j].dev = d;
	op->outs[j].dev_owned = true;
	return d;
}

/* Host tensor t becomes output j. */
void
cu_op_out_host(cu_op *op, int j, ie_tensor *t)
{
	if (j < 0 || j >= op->pn->n_outputs)
	{
		ie_tensor_destroy(&t);
		return;
	}
	ie_tensor_destroy(&op->outs[j].host);
	op->outs[j].host = t;
	op->outs[j].host_owned = true;
}

/* ---- running ---- */

/* Frees what s owns and clears it. */
static void
slot_clear(cu_ctx *c, cu_slot *s)
{
	if (s->host_owned)
		ie_tensor_destroy(&s->host);
	if (s->dev_owned)
		cu_dtensor_free(c, &s->dev);
	memset(s, 0, sizeof(*s));
}

/*
 * Formats "model '<name>' on cuda:<n>: <message>" into err; returns the
 * negative of kind (engine.h, ie_model_run).
 */
static int
run_error_kind(const ie_model *m, char *err, size_t errlen, ie_error_kind kind,
			   const char *msg)
{
	snprintf(err, errlen, "model '%s' on cuda:%d: %s", m->name, m->device, msg);
	return -(int) kind;
}

/*
 * run_error_kind with the kind of msg, a message of the engine's own or of
 * a device function (cu_error_kind; never names from the model file).
 */
static int
run_error(const ie_model *m, char *err, size_t errlen, const char *msg)
{
	return run_error_kind(m, err, errlen, cu_error_kind(msg), msg);
}

/*
 * Whether node pn should stay on the CPU: its run-time inputs are small
 * host tensors of integers or booleans (shape arithmetic, token ids).
 * Float data always goes to the device, however small.
 */
static bool
stays_on_host(const ie_model *m, const ie_plan_node *pn, const cu_slot *slots)
{
	size_t		bytes = 0;

	for (int i = 0; i < pn->n_inputs; i++)
	{
		int			v = pn->inputs[i];

		if (v < 0 || m->consts[v] != NULL)
			continue;
		if (slots[v].dev != NULL || slots[v].host == NULL ||
			slots[v].host->dtype == IE_FLOAT || slots[v].host->dtype == IE_FLOAT16 ||
			slots[v].host->dtype == IE_DOUBLE)
			return false;
		bytes += slots[v].host->nbytes;
	}
	return bytes <= CU_HOST_SMALL_BYTES;
}

/* Whether op_type is named in IE_CUDA_CPU_OPS (comma-separated): forced to the CPU. */
static bool
forced_to_cpu(const char *op_type)
{
	const char *list = getenv("IE_CUDA_CPU_OPS");
	size_t		n = strlen(op_type);

	for (const char *p = list; p != NULL && *p != '\0'; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		if (strncmp(p, op_type, n) == 0 && (p[n] == ',' || p[n] == '\0'))
			return true;
	return false;
}

/* Runs node pn's CPU operator on host copies of its inputs. */
static int
run_on_cpu(cu_op *op)
{
	const ie_plan_node *pn = op->pn;
	const ie_tensor *ins[64];
	ie_tensor  *outs[64];
	ie_node_ctx ctx;
	int			rc;

	if (pn->n_inputs > 64 || pn->n_outputs > 64)
		return ie_op_error(&op->nc, "too many inputs or outputs for the CUDA executor");
	for (int i = 0; i < pn->n_inputs; i++)
	{
		ins[i] = NULL;
		if (pn->inputs[i] >= 0 && (ins[i] = cu_op_host(op, i)) == NULL)
			return -1;
	}
	for (int j = 0; j < pn->n_outputs; j++)
		outs[j] = NULL;
	ie_node_ctx_init(&ctx, op->m, pn, ins, outs, ie_get_threads(), op->nc.err, op->nc.errlen);
	ctx.epilogue = NULL;		/* models on a device are not fused */
	rc = pn->fn(&ctx);
	for (int j = 0; j < pn->n_outputs; j++)
	{
		if (rc == 0)
			cu_op_out_host(op, j, outs[j]);
		else
			ie_tensor_destroy(&outs[j]);
	}
	if (rc != 0 && op->nc.err[0] == '\0')
		ie_op_error(&op->nc, "failed");
	else if (rc != 0)
		op->nc.err_kind = ctx.err_kind;	/* the message is the operator's */
	return rc;
}

/*
 * Checks an input of type dtype, rank ndim and dims against the model's
 * declaration io (executor.c's check_input); 0, or -1 with the message in e2.
 */
static int
check_input(const ie_plan_io *io, ie_dtype dtype, int ndim, const int64_t *dims,
			char *e2, size_t e2len)
{
	if (ie_dtype_size(dtype) == 0 || ndim < 0 || ndim > IE_MAX_DIMS)
	{
		snprintf(e2, e2len, "input '%s' is missing or invalid", io->name);
		return -1;
	}
	if ((io->dtype != IE_UNDEFINED && dtype != io->dtype) ||
		(io->rank >= 0 && ndim != io->rank))
	{
		snprintf(e2, e2len, "input '%s' must be %s of rank %d, got %s of rank %d",
				 io->name, ie_dtype_name(io->dtype), io->rank,
				 ie_dtype_name(dtype), ndim);
		return -1;
	}
	for (int d = 0; io->rank >= 0 && d < io->rank; d++)
		if (io->dims[d] >= 0 && dims[d] != io->dims[d])
		{
			snprintf(e2, e2len, "input '%s' dimension %d must be %lld, got %lld",
					 io->name, d, (long long) io->dims[d], (long long) dims[d]);
			return -1;
		}
	return 0;
}

/*
 * Checks the element types of op's inputs against its ONNX schema, as
 * executor.c does before every node (ie_node_check_types); the slots hold
 * the graph's types at every precision (16-bit weights are copies of their
 * own, cm->consts16, and 16-bit activations live inside an operator).
 * dtypes has room for the node's inputs.  0, or -1 with the message in err.
 */
static int
check_types(cu_op *op, ie_dtype *dtypes, char *err, size_t errlen)
{
	const ie_plan_node *pn = op->pn;
	int64_t		dims[IE_MAX_DIMS];
	int			ndim;

	if (pn->checks == NULL)
		return 0;
	for (int i = 0; i < pn->n_inputs; i++)
		cu_op_shape(op, i, &dtypes[i], &ndim, dims);
	return ie_node_check_types(op->m, pn, dtypes, err, errlen);
}

/*
 * Runs m's plan on the device: inputs[i] on the host, or, where dev_inputs
 * is not NULL and dev_inputs[i] is, that device tensor, which the run takes
 * over (it is freed when no node needs it any more, and on failure).  See
 * ie_model_run (engine.h) for the rest of the contract.
 */
static int
run_plan(const ie_model *m, cu_ctx *c, const ie_tensor *const *inputs,
		 ie_dtensor **dev_inputs, ie_tensor **outputs, char *err, size_t errlen)
{
	ie_cuda_model *cm = m->cuda;
	cu_slot    *slots = NULL;
	cu_slot    *outs = NULL;
	ie_dtype   *dtypes = NULL;	/* a node's input types (check_types) */
	int			max_out = 1,
				max_in = 1;
	char		operr[1024];
	char		e2[512];
	int			rc_fail = -IE_ERR_INVALID;

	if (errlen > 0)
		err[0] = '\0';
	for (int j = 0; j < m->n_outputs; j++)
		outputs[j] = NULL;
	pthread_once(&prof_once, prof_init);
	for (int k = 0; k < m->n_nodes; k++)
	{
		if (m->nodes[k].n_outputs > max_out)
			max_out = m->nodes[k].n_outputs;
		if (m->nodes[k].n_inputs > max_in)
			max_in = m->nodes[k].n_inputs;
	}
	slots = calloc(m->n_values ? m->n_values : 1, sizeof(*slots));
	outs = calloc(max_out, sizeof(*outs));
	dtypes = calloc(max_in, sizeof(*dtypes));
	if (slots == NULL || outs == NULL || dtypes == NULL)
	{
		rc_fail = run_error_kind(m, err, errlen, IE_ERR_NO_MEMORY, "out of memory");
		goto fail;
	}
	for (int v = 0; v < m->n_values; v++)
	{
		slots[v].host = m->consts[v];
		slots[v].dev = cm->consts[v];
	}
	for (int i = 0; i < m->n_inputs; i++)
	{
		const ie_plan_io *io = &m->inputs[i];
		ie_dtensor *d = dev_inputs != NULL ? dev_inputs[i] : NULL;
		const ie_tensor *t = d == NULL ? inputs[i] : NULL;

		if (d == NULL && t == NULL)
		{
			snprintf(e2, sizeof(e2), "input '%s' is missing or invalid", io->name);
			run_error_kind(m, err, errlen, IE_ERR_INVALID, e2);
			goto fail;
		}
		if ((d != NULL && check_input(io, d->dtype, d->ndim, d->dims, e2, sizeof(e2)) != 0) ||
			(t != NULL && check_input(io, t->dtype, t->ndim, t->dims, e2, sizeof(e2)) != 0))
		{
			run_error_kind(m, err, errlen, IE_ERR_INVALID, e2);
			goto fail;
		}
		/* the upload copies a host tensor by its byte count: the shape's */
		if (t != NULL && t->nbytes != (size_t) ie_tensor_numel(t) * ie_dtype_size(t->dtype))
		{
			snprintf(e2, sizeof(e2), "input '%s' holds %zu bytes, not its shape's %zu",
					 io->name, t->nbytes,
					 (size_t) ie_tensor_numel(t) * ie_dtype_size(t->dtype));
			run_error_kind(m, err, errlen, IE_ERR_INVALID, e2);
			goto fail;
		}
		if (d != NULL)
		{
			slots[io->value].dev = d;	/* the run's from here on */
			slots[io->value].dev_owned = true;
			dev_inputs[i] = NULL;
		}
		else
			slots[io->value].host = (ie_tensor *) t;	/* not owned: never written */
	}

	for (int k = 0; k < m->n_nodes; k++)
	{
		const ie_plan_node *pn = &m->nodes[k];
		cu_op		op;
		cu_op_fn	fn = cm->native[k] ? cu_op_lookup(pn->op_type) : NULL;
		int			rc;
		bool		on_cpu = true;
		double		t0 = prof_on ? ie_now_ns() / 1e6 : 0;

		prof_node_copies = 0;

		memset(&op, 0, sizeof(op));
		op.m = m;
		op.pn = pn;
		op.c = c;
		op.slots = slots;
		op.outs = outs;
		ie_node_ctx_init(&op.nc, m, pn, NULL, NULL, ie_get_threads(), operr, sizeof(operr));
		op.nc.epilogue = NULL;
		operr[0] = '\0';
		if (check_types(&op, dtypes, operr, sizeof(operr)) != 0)
		{
			rc_fail = run_error_kind(m, err, errlen, IE_ERR_INVALID, operr);
			goto fail;
		}
		for (int j = 0; j < pn->n_outputs; j++)
			memset(&outs[j], 0, sizeof(outs[j]));

		if (fn != NULL && !stays_on_host(m, pn, slots))
		{
			on_cpu = false;
			rc = fn(&op);
			if (rc == CU_FALLBACK)
			{
				for (int j = 0; j < pn->n_outputs; j++)
					slot_clear(c, &outs[j]);
				if (!atomic_exchange(&cm->warned[k], true))
					fprintf(stderr, "infer-engine: model '%s' on cuda:%d: %s node '%s' runs on the CPU (a case its CUDA kernel does not cover%s%s)\n",
							m->name, m->device, pn->op_type, pn->name,
							operr[0] ? ": " : "", operr);
				operr[0] = '\0';
				on_cpu = true;
				rc = run_on_cpu(&op);
			}
		}
		else
			rc = run_on_cpu(&op);
		if (prof_on && rc == 0)
		{
			cudaStreamSynchronize(c->stream);
			prof_add(pn->op_type, on_cpu, ie_now_ns() / 1e6 - t0, prof_node_copies);
		}
		if (rc != 0)
		{
			for (int j = 0; j < pn->n_outputs; j++)
				slot_clear(c, &outs[j]);
			if (operr[0] == '\0')
				snprintf(operr, sizeof(operr), "%s node '%s': failed", pn->op_type, pn->name);
			/* operr names the node: its kind is the one ie_op_error kept */
			rc_fail = run_error_kind(m, err, errlen,
									 op.nc.err_kind != IE_ERR_NONE ? op.nc.err_kind :
									 IE_ERR_INVALID, operr);
			goto fail;
		}
		for (int j = 0; j < pn->n_outputs; j++)
		{
			int			v = pn->outputs[j];

			if (v < 0 || (outs[j].host == NULL && outs[j].dev == NULL))
			{
				slot_clear(c, &outs[j]);
				continue;
			}
			slot_clear(c, &slots[v]);
			slots[v] = outs[j];
			memset(&outs[j], 0, sizeof(outs[j]));
		}
		/* free what no later node reads */
		for (int i = 0; i < pn->n_inputs; i++)
		{
			int			v = pn->inputs[i];

			if (v >= 0 && m->last_use[v] == k && !m->is_output[v])
				slot_clear(c, &slots[v]);
		}
		for (int j = 0; j < pn->n_outputs; j++)
		{
			int			v = pn->outputs[j];

			if (v >= 0 && m->last_use[v] < 0 && !m->is_output[v])
				slot_clear(c, &slots[v]);
		}
	}

	/* the outputs to the host: move what this run owns, copy the rest */
	for (int j = 0; j < m->n_outputs; j++)
	{
		cu_slot    *s = &slots[m->outputs[j].value];

		if (s->host == NULL && s->dev != NULL)
		{
			if (cu_download(c, s->dev, &s->host, e2, sizeof(e2)) != 0)
			{
				rc_fail = run_error(m, err, errlen, e2);
				goto fail;
			}
			s->host_owned = true;
		}
		if (s->host == NULL)
		{
			snprintf(e2, sizeof(e2), "output '%s' was not produced", m->outputs[j].name);
			run_error_kind(m, err, errlen, IE_ERR_INVALID, e2);
			goto fail;
		}
		if (m->outputs[j].dtype != IE_UNDEFINED && s->host->dtype != m->outputs[j].dtype)
		{
			snprintf(e2, sizeof(e2), "output '%s' is declared %s but the graph made %s",
					 m->outputs[j].name, ie_dtype_name(m->outputs[j].dtype),
					 ie_dtype_name(s->host->dtype));
			run_error_kind(m, err, errlen, IE_ERR_INVALID, e2);
			goto fail;
		}
		bool		again = false;	/* the same value is a later output too */

		for (int j2 = j + 1; j2 < m->n_outputs; j2++)
			again = again || m->outputs[j2].value == m->outputs[j].value;
		if (s->host_owned && !again)
		{
			outputs[j] = s->host;
			s->host = NULL;
			s->host_owned = false;
		}
		else if ((outputs[j] = ie_tensor_clone(s->host)) == NULL)
		{
			rc_fail = run_error_kind(m, err, errlen, IE_ERR_NO_MEMORY,
									 "out of memory copying an output");
			goto fail;
		}
	}
	for (int v = 0; v < m->n_values; v++)
		slot_clear(c, &slots[v]);
	free(slots);
	free(outs);
	free(dtypes);
	return 0;

fail:
	/* the stream may still run kernels on pool buffers: let them finish */
	cudaStreamSynchronize(c->stream);
	(void) cudaGetLastError();
	if (slots != NULL)
		for (int v = 0; v < m->n_values; v++)
			slot_clear(c, &slots[v]);
	for (int j = 0; j < m->n_outputs; j++)
		ie_tensor_destroy(&outputs[j]);
	for (int i = 0; dev_inputs != NULL && i < m->n_inputs; i++)
		cu_dtensor_free(c, &dev_inputs[i]);
	free(slots);
	free(outs);
	free(dtypes);
	return rc_fail;
}

/* ie_model_run on the device; see engine.h and the banner. */
int
iecu_model_run(const ie_model *m, const ie_tensor *const *inputs,
			   ie_tensor **outputs, char *err, size_t errlen)
{
	cu_ctx	   *c;
	char		e2[512];

	for (int j = 0; j < m->n_outputs; j++)
		outputs[j] = NULL;
	if (m->cuda == NULL)
		return run_error(m, err, errlen, "the model was not prepared for the device");
	c = cu_ctx_get(m->device, e2, sizeof(e2));
	if (c == NULL)
		return run_error(m, err, errlen, e2);
	return run_plan(m, c, inputs, NULL, outputs, err, errlen);
}

/*
 * ie_model_run_images on the device (engine.h): the images' pixels and
 * descriptors go to the device in one copy through the pinned buffer, one
 * kernel (cu_k_prep_images) resizes and normalises them into the model's
 * input, which the run then reads where it is.
 */
int
iecu_model_run_images(const ie_model *m, const ie_image *images, int n,
					  const ie_image_norm *norm, ie_tensor **outputs,
					  char *err, size_t errlen)
{
	cu_ctx	   *c;
	char		e2[512];
	size_t		pix_bytes = 0,
				total,
				cap = 0;
	uint8_t    *stage;
	void	   *dbuf = NULL;
	ie_dtensor *in[1] = {NULL};
	cu_prep_image *desc;
	cu_prep_norm nm;
	int64_t		dims[4];
	cudaError_t e;

	for (int j = 0; j < m->n_outputs; j++)
		outputs[j] = NULL;
	if (m->cuda == NULL)
		return run_error(m, err, errlen, "the model was not prepared for the device");
	if (m->n_inputs != 1)
		return run_error(m, err, errlen, "image preprocessing needs a model of one input");
	if (n < 1 || norm->out_h < 1 || norm->out_w < 1)
		return run_error(m, err, errlen, "image preprocessing: no images or an empty input");
	for (int k = 0; k < n; k++)
	{
		const ie_image *im = &images[k];

		if (im->width < 1 || im->height < 1 || im->resize_w < 1 || im->resize_h < 1 ||
			(im->pixels == NULL && im->dpixels == NULL))
			return run_error(m, err, errlen, "image preprocessing: an empty image or size");
		if (im->dpixels != NULL &&
			(im->dpixels->device != m->device || im->dpixels->width != im->width ||
			 im->dpixels->height != im->height))
			return run_error(m, err, errlen, "image preprocessing: a device image of another "
							 "device or size");
		if (im->dpixels == NULL)
			pix_bytes += ((size_t) im->width * (size_t) im->height * 3 + 15) & ~(size_t) 15;
	}
	c = cu_ctx_get(m->device, e2, sizeof(e2));
	if (c == NULL)
		return run_error(m, err, errlen, e2);

	/*
	 * The host images' pixels, then every image's descriptor, in the pinned
	 * buffer; one copy.  A device image's descriptor points at its pixels.
	 */
	total = pix_bytes + (size_t) n * sizeof(cu_prep_image);
	if ((stage = cu_pinned(c, total, e2, sizeof(e2))) == NULL)
		return run_error(m, err, errlen, e2);
	if ((dbuf = cu_pool_get(c, total, &cap, e2, sizeof(e2))) == NULL)
		goto fail;
	desc = (cu_prep_image *) (stage + pix_bytes);
	pix_bytes = 0;
	for (int k = 0; k < n; k++)
	{
		const ie_image *im = &images[k];
		size_t		b = (size_t) im->width * (size_t) im->height * 3;

		if (im->dpixels != NULL)
			desc[k].src = im->dpixels->ptr;
		else
		{
			memcpy(stage + pix_bytes, im->pixels, b);
			desc[k].src = (const uint8_t *) dbuf + pix_bytes;
			pix_bytes += (b + 15) & ~(size_t) 15;
		}
		desc[k].width = im->width;
		desc[k].height = im->height;
		desc[k].resize_w = im->resize_w;
		desc[k].resize_h = im->resize_h;
	}
	dims[0] = n;
	dims[1] = 3;
	dims[2] = norm->out_h;
	dims[3] = norm->out_w;
	if ((in[0] = cu_dtensor_new(c, IE_FLOAT, 4, dims, e2, sizeof(e2))) == NULL)
		goto fail;
	e = cudaMemcpyAsync(dbuf, stage, total, cudaMemcpyHostToDevice, c->stream);
	if (e == cudaSuccess)
	{
		memcpy(nm.mean, norm->mean, sizeof(nm.mean));
		memcpy(nm.std, norm->std, sizeof(nm.std));
		nm.bgr = norm->bgr;
		nm.pad = norm->pad;
		e = cu_k_prep_images((const cu_prep_image *) ((uint8_t *) dbuf + pix_bytes), n,
							 norm->out_h, norm->out_w, nm, in[0]->ptr, c->stream);
	}
	/* the pinned buffer is reused by the run's own copies: wait for this one */
	if (e == cudaSuccess)
		e = cudaStreamSynchronize(c->stream);
	if (e != cudaSuccess)
	{
		cu_err(e2, sizeof(e2), "preprocessing the images", e);
		goto fail;
	}
	cu_pool_put(c, dbuf, cap);
	return run_plan(m, c, NULL, in, outputs, err, errlen);

fail:
	cudaStreamSynchronize(c->stream);
	(void) cudaGetLastError();
	if (dbuf != NULL)
		cu_pool_put(c, dbuf, cap);
	cu_dtensor_free(c, &in[0]);
	return run_error(m, err, errlen, e2);
}
