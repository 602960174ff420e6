/*
 * executor.c
 *	  Running a planned model: feeds the inputs, runs the nodes in plan
 *	  order, frees each intermediate tensor after its last reader, and hands
 *	  the graph outputs to the caller.  Also the process-wide thread count.
 *
 * Threading: ie_model_run() keeps all run state on its own stack and heap
 * and only reads the model, so several threads may run one model at once.
 * The thread count is one process-wide atomic; operators split their work
 * over the engine's pool (pool.h) and keep OpenBLAS serial.  IE_PROFILE in
 * the environment makes every run print each node's time to stderr.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "worker/engine/cuda/backend.h"
#include "worker/engine/model_int.h"

/* From OpenBLAS (declared here: the cblas.h on the include path may be netlib's). */
extern void openblas_set_num_threads(int num_threads);

static atomic_int ie_threads;	/* 0 until set: online CPUs */

/* Online CPUs, at least 1. */
static int
online_cpus(void)
{
	long		n = sysconf(_SC_NPROCESSORS_ONLN);

	return n > 0 ? (int) n : 1;
}

/* Sets the threads operators and OpenBLAS use; n <= 0 means online CPUs. */
void
ie_set_threads(int n)
{
	if (n <= 0)
		n = online_cpus();
	atomic_store(&ie_threads, n);
	/* the operators split their work over the engine's own pool (pool.c)
	 * and call OpenBLAS from each thread: OpenBLAS itself stays serial */
	openblas_set_num_threads(1);
}

/* The thread count in force (online CPUs until ie_set_threads is called). */
int
ie_get_threads(void)
{
	int			n = atomic_load(&ie_threads);

	return n > 0 ? n : online_cpus();
}

/* Whether IE_PROFILE is set: each run then prints its time per node to stderr. */
static bool
profile_on(void)
{
	static int	on = -1;

	if (on < 0)
		on = getenv("IE_PROFILE") != NULL;
	return on;
}

/* Formats "model '<name>': <message>" into err; returns -1. */
static int
run_error(const ie_model *m, char *err, size_t errlen, const char *fmt,...)
	__attribute__((format(printf, 4, 5)));

/*
 * Formats fmt (ap) into err after the n bytes of prefix it holds (what the
 * prefix's snprintf returned); returns -1, what the callers return.
 */
static int
format_after(char *err, size_t errlen, int n, const char *fmt, va_list ap)
{
	if (n >= 0 && (size_t) n < errlen)
		vsnprintf(err + n, errlen - n, fmt, ap);
	return -1;
}

static int
run_error(const ie_model *m, char *err, size_t errlen, const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	format_after(err, errlen, snprintf(err, errlen, "model '%s': ", m->name), fmt, ap);
	va_end(ap);
	return -1;
}

/* An engine message past "model '<name>': "; see engine.h. */
const char *
ie_message_body(const char *err)
{
	const char *end;

	if (strncmp(err, "model '", 7) != 0 || (end = strstr(err + 7, "': ")) == NULL)
		return err;
	return end + 3;
}

/* Checks input i against its declaration: type, rank and fixed dims. */
static int
check_input(const ie_model *m, int i, const ie_tensor *t, char *err, size_t errlen)
{
	const ie_plan_io *io = &m->inputs[i];
	char		want[128],
				got[128];

	if (t == NULL)
		return run_error(m, err, errlen, "input '%s' is missing", io->name);
	if (t->ndim < 0 || t->ndim > IE_MAX_DIMS || ie_dtype_size(t->dtype) == 0)
		return run_error(m, err, errlen, "input '%s' has an invalid tensor (type %s, rank %d)",
						 io->name, ie_dtype_name(t->dtype), t->ndim);
	if (io->dtype != IE_UNDEFINED && t->dtype != io->dtype)
		return run_error(m, err, errlen, "input '%s' must be %s, got %s", io->name,
						 ie_dtype_name(io->dtype), ie_dtype_name(t->dtype));
	/* operators copy or keep a tensor by its byte count: it must be the shape's */
	if (t->nbytes != (size_t) ie_tensor_numel(t) * ie_dtype_size(t->dtype))
		return run_error(m, err, errlen, "input '%s' %s holds %zu bytes, not its shape's %zu",
						 io->name, ie_shape_str(got, sizeof(got), t->ndim, t->dims), t->nbytes,
						 (size_t) ie_tensor_numel(t) * ie_dtype_size(t->dtype));
	if (io->rank < 0)
		return 0;
	if (t->ndim != io->rank)
		return run_error(m, err, errlen, "input '%s' must have rank %d %s, got rank %d %s",
						 io->name, io->rank,
						 ie_shape_str(want, sizeof(want), io->rank, io->dims), t->ndim,
						 ie_shape_str(got, sizeof(got), t->ndim, t->dims));
	for (int d = 0; d < io->rank; d++)
		if (io->dims[d] >= 0 && t->dims[d] != io->dims[d])
			return run_error(m, err, errlen, "input '%s' must have shape %s, got %s",
							 io->name, ie_shape_str(want, sizeof(want), io->rank, io->dims),
							 ie_shape_str(got, sizeof(got), t->ndim, t->dims));
	return 0;
}

/*
 * Formats "<op> node '<name>' (<op>-<since>, opset <n>): input <i> '<value>'
 * (<formal name>) " and then fmt into err; returns -1.
 */
static int
type_error(const ie_model *m, const ie_plan_node *pn, int i, char *err, size_t errlen,
		   const char *fmt,...)
	__attribute__((format(printf, 6, 7)));

static int
type_error(const ie_model *m, const ie_plan_node *pn, int i, char *err, size_t errlen,
		   const char *fmt,...)
{
	va_list		ap;
	int			n;

	n = snprintf(err, errlen, "%s node '%s' (%s-%d, opset %d): input %d '%s' (%s) ",
				 pn->op_type, pn->name, pn->op_type, pn->since, m->opset, i,
				 m->value_names[pn->inputs[i]], pn->checks[i].formal->name);
	va_start(ap, fmt);
	format_after(err, errlen, n, fmt, ap);
	va_end(ap);
	return -1;
}

/* Checks the types of a node's inputs; see model_int.h. */
int
ie_node_check_types(const ie_model *m, const ie_plan_node *pn, const ie_dtype *dtypes,
					char *err, size_t errlen)
{
	char		list[256];

	if (pn->checks == NULL)
		return 0;
	for (int i = 0; i < pn->n_inputs; i++)
	{
		const ie_input_check *c = &pn->checks[i];
		unsigned	t = (unsigned) dtypes[i];
		int			j = c->same_as;
		bool		allowed = t < 32 && (c->types & ((uint32_t) 1 << t)) != 0;

		if (t == IE_UNDEFINED)
			continue;
		if (!allowed && c->formal->constraint != NULL)
			return type_error(m, pn, i, err, errlen, "is %s, which %s does not allow (%s)",
							  ie_type_name((int) t), c->formal->constraint,
							  ie_type_list(c->types, list, sizeof(list)));
		if (!allowed)
			return type_error(m, pn, i, err, errlen, "is %s, which %s-%d does not allow (%s)",
							  ie_type_name((int) t), pn->op_type, pn->since,
							  ie_type_list(c->types, list, sizeof(list)));
		if (j >= 0 && dtypes[j] != IE_UNDEFINED && dtypes[j] != dtypes[i])
			return type_error(m, pn, i, err, errlen,
							  "is %s but input %d '%s' (%s) is %s: %s must be one type",
							  ie_type_name((int) t), j, m->value_names[pn->inputs[j]],
							  pn->checks[j].formal->name, ie_type_name(dtypes[j]),
							  c->formal->constraint);
	}
	return 0;
}

/* Fills ctx for one node; see model_int.h. */
void
ie_node_ctx_init(ie_node_ctx *ctx, const ie_model *m, const ie_plan_node *pn,
				 const ie_tensor **ins, ie_tensor **outs, int n_threads,
				 char *err, size_t errlen)
{
	memset(ctx, 0, sizeof(*ctx));
	ctx->op_type = pn->op_type;
	ctx->node_name = pn->name;
	ctx->opset = m->opset;
	ctx->n_inputs = pn->n_inputs;
	ctx->inputs = ins;
	ctx->n_outputs = pn->n_outputs;
	ctx->outputs = outs;
	ctx->n_attrs = pn->n_attrs;
	ctx->attrs = pn->attrs;
	ctx->n_threads = n_threads;
	ctx->err = err;
	ctx->errlen = errlen;
	ctx->epilogue = pn->epilogue;
}

/* ie_model_run with its input made from images on the device; see engine.h. */
int
ie_model_run_images(const ie_model *m, const ie_image *images, int n,
					const ie_image_norm *norm, ie_tensor **outputs, char *err, size_t errlen)
{
	if (errlen > 0)
		err[0] = '\0';
	for (int j = 0; j < m->n_outputs; j++)
		outputs[j] = NULL;
	if (!m->on_cuda)
	{
		snprintf(err, errlen, "model '%s' runs on the CPU: preprocess its images on the host",
				 m->name);
		return -1;
	}
	return ie_cuda_model_run_images(m, images, n, norm, outputs, err, errlen);
}

/* Runs the model; see engine.h for the contract. */
int
ie_model_run(const ie_model *m, const ie_tensor *const *inputs,
			 ie_tensor **outputs, char *err, size_t errlen)
{
	ie_tensor **owned = NULL;	/* tensors this run allocated, by value */
	const ie_tensor **view = NULL;	/* every value's tensor, by value */
	const ie_tensor **ins = NULL;
	ie_dtype   *dtypes = NULL;	/* the element types of ins */
	ie_tensor **outs = NULL;
	int			max_in = 1,
				max_out = 1;
	char		operr[1024];
	ie_error_kind kind = IE_ERR_INVALID;	/* of a failure */

	/* a model loaded for a CUDA device runs there (cuda/exec.c) */
	if (m->on_cuda)
		return ie_cuda_model_run(m, inputs, outputs, err, errlen);
	if (errlen > 0)
		err[0] = '\0';
	for (int j = 0; j < m->n_outputs; j++)
		outputs[j] = NULL;
	for (int k = 0; k < m->n_nodes; k++)
	{
		if (m->nodes[k].n_inputs > max_in)
			max_in = m->nodes[k].n_inputs;
		if (m->nodes[k].n_outputs > max_out)
			max_out = m->nodes[k].n_outputs;
	}
	/* sized by the graph, not the input: not checked against the tensor limit */
	owned = calloc(m->n_values ? m->n_values : 1, sizeof(*owned));
	view = calloc(m->n_values ? m->n_values : 1, sizeof(*view));
	ins = calloc(max_in, sizeof(*ins));
	dtypes = calloc(max_in, sizeof(*dtypes));
	outs = calloc(max_out, sizeof(*outs));
	if (owned == NULL || view == NULL || ins == NULL || dtypes == NULL || outs == NULL)
	{
		run_error(m, err, errlen, "out of memory");
		kind = IE_ERR_NO_MEMORY;
		goto fail;
	}
	for (int v = 0; v < m->n_values; v++)
		view[v] = m->consts[v];
	for (int i = 0; i < m->n_inputs; i++)
	{
		if (check_input(m, i, inputs[i], err, errlen) != 0)
			goto fail;
		view[m->inputs[i].value] = inputs[i];
	}

	for (int k = 0; k < m->n_nodes; k++)
	{
		const ie_plan_node *pn = &m->nodes[k];
		ie_node_ctx ctx;
		double		t0;
		int			rc;

		for (int i = 0; i < pn->n_inputs; i++)
		{
			int			v = pn->inputs[i];

			ins[i] = v >= 0 ? view[v] : NULL;
			if (v >= 0 && ins[i] == NULL)
			{
				run_error(m, err, errlen, "%s node '%s': input '%s' was not produced",
						  pn->op_type, pn->name, m->value_names[v]);
				goto fail;
			}
			dtypes[i] = ins[i] != NULL ? ins[i]->dtype : IE_UNDEFINED;
		}
		/* types ONNX's schema does not allow here: an invalid model */
		if (ie_node_check_types(m, pn, dtypes, operr, sizeof(operr)) != 0)
		{
			run_error(m, err, errlen, "%s", operr);
			goto fail;
		}
		for (int j = 0; j < pn->n_outputs; j++)
			outs[j] = NULL;
		ie_node_ctx_init(&ctx, m, pn, ins, outs, ie_get_threads(),
						 operr, sizeof(operr));
		if (pn->n_inputs > 0 && pn->inputs[0] >= 0)
		{
			int			v0 = pn->inputs[0];
			bool		alone = true;

			for (int i = 1; i < pn->n_inputs; i++)
				alone = alone && pn->inputs[i] != v0;
			if (alone && m->last_use[v0] == k && !m->is_output[v0] && owned[v0] != NULL)
				ctx.donor = owned[v0];
		}
		operr[0] = '\0';
		ie_tensor_forget_refusal();
		t0 = profile_on() ? ie_now_ns() / 1e9 : 0.0;
		rc = pn->fn(&ctx);
		if (profile_on())
			fprintf(stderr, "ie_profile %s %s%s %.3f ms\n", pn->op_type, pn->name,
					pn->epilogue ? " (fused)" : "", (ie_now_ns() / 1e9 - t0) * 1000.0);
		if (rc != 0)
		{
			for (int j = 0; j < pn->n_outputs; j++)
				ie_tensor_destroy(&outs[j]);
			if (operr[0] == '\0')
				snprintf(operr, sizeof(operr), "%s node '%s': failed", pn->op_type,
						 pn->name);
			run_error(m, err, errlen, "%s", operr);
			if (ctx.err_kind != IE_ERR_NONE)
				kind = ctx.err_kind;
			goto fail;
		}
		for (int j = 0; j < pn->n_outputs; j++)
		{
			int			v = pn->outputs[j];

			if (v < 0)
				ie_tensor_destroy(&outs[j]);
			else
			{
				owned[v] = outs[j];
				view[v] = outs[j];
				outs[j] = NULL;
			}
		}
		/* free what no later node reads */
		for (int i = 0; i < pn->n_inputs; i++)
		{
			int			v = pn->inputs[i];

			if (v >= 0 && m->last_use[v] == k && !m->is_output[v] && owned[v] != NULL)
			{
				ie_tensor_destroy(&owned[v]);
				view[v] = NULL;
			}
		}
		for (int j = 0; j < pn->n_outputs; j++)
		{
			int			v = pn->outputs[j];

			if (v >= 0 && m->last_use[v] < 0 && !m->is_output[v])
			{
				ie_tensor_destroy(&owned[v]);
				view[v] = NULL;
			}
		}
	}

	/* hand over the outputs: move what this run made, copy the rest */
	for (int j = 0; j < m->n_outputs; j++)
	{
		int			v = m->outputs[j].value;

		if (view[v] != NULL && m->outputs[j].dtype != IE_UNDEFINED &&
			view[v]->dtype != m->outputs[j].dtype)
		{
			run_error(m, err, errlen, "output '%s' is declared %s but the graph made %s",
					  m->outputs[j].name, ie_dtype_name(m->outputs[j].dtype),
					  ie_dtype_name(view[v]->dtype));
			goto fail;
		}
		if (owned[v] != NULL)
		{
			outputs[j] = owned[v];
			owned[v] = NULL;
		}
		else if (view[v] != NULL)
		{
			outputs[j] = ie_tensor_clone(view[v]);
			if (outputs[j] == NULL)
			{
				run_error(m, err, errlen, "out of memory copying output '%s'",
						  m->outputs[j].name);
				kind = IE_ERR_NO_MEMORY;
				goto fail;
			}
		}
		else
		{
			run_error(m, err, errlen, "output '%s' was not produced", m->outputs[j].name);
			goto fail;
		}
	}
	free(owned);
	free(view);
	free(ins);
	free(dtypes);
	free(outs);
	return 0;

fail:
	if (owned != NULL)
		for (int v = 0; v < m->n_values; v++)
			ie_tensor_destroy(&owned[v]);
	for (int j = 0; j < m->n_outputs; j++)
		ie_tensor_destroy(&outputs[j]);
	free(owned);
	free(view);
	free(ins);
	free(dtypes);
	free(outs);
	return -(int) kind;
}
