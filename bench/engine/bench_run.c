/*
 * bench_run.c
 *	  Times ie_model_run() of our ONNX engine on inputs read from raw files,
 *	  for bench/engine/bench.py (which times ONNX Runtime on the same files).
 *
 * Usage: engine-bench-run MODEL THREADS RUNS INPUT...
 * where each INPUT is FILE:DTYPE:D0xD1x... (DTYPE float or int64), one per
 * graph input in declaration order.  A file may hold more rows than the
 * shape asks for: only the leading bytes are read, so one file serves
 * several batch sizes.  Runs the model twice to warm up, then RUNS times,
 * and prints "blas_core=<OpenBLAS kernel family> median_ms=<ms> min_ms=<ms>"
 * on stdout.  With BENCH_OUT0=FILE in the environment the second warm-up's
 * first output is written to FILE as raw bytes (bench.py compares it with
 * ONNX Runtime's).
 *
 * Threading: single-threaded driver; the engine uses ie_set_threads(THREADS).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "worker/engine/engine.h"

#define MAX_INPUTS 8

/* From OpenBLAS: the kernel family it chose (OPENBLAS_CORETYPE or the CPU). */
extern char *openblas_get_corename(void);

/* Seconds on the monotonic clock. */
static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* qsort comparator for doubles. */
static int
cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return (x > y) - (x < y);
}

/*
 * Parses "FILE:DTYPE:D0xD1x..." and reads the tensor's bytes from FILE;
 * returns the new tensor or NULL after printing why.
 */
static ie_tensor *
read_input(const char *spec)
{
	char	   *s = strdup(spec);
	char	   *file,
			   *dt,
			   *shape,
			   *tok,
			   *save = NULL;
	int64_t		dims[IE_MAX_DIMS];
	int			ndim = 0;
	ie_dtype	dtype;
	ie_tensor  *t = NULL;
	FILE	   *f = NULL;

	if (s == NULL)
		return NULL;
	file = s;
	dt = strchr(file, ':');
	if (dt == NULL || (shape = strchr(dt + 1, ':')) == NULL)
	{
		fprintf(stderr, "bad input spec '%s' (want FILE:DTYPE:SHAPE)\n", spec);
		goto fail;
	}
	*dt++ = '\0';
	*shape++ = '\0';
	if (strcmp(dt, "float") == 0)
		dtype = IE_FLOAT;
	else if (strcmp(dt, "int64") == 0)
		dtype = IE_INT64;
	else
	{
		fprintf(stderr, "bad dtype '%s' (float or int64)\n", dt);
		goto fail;
	}
	for (tok = strtok_r(shape, "x", &save); tok != NULL; tok = strtok_r(NULL, "x", &save))
	{
		if (ndim == IE_MAX_DIMS)
		{
			fprintf(stderr, "too many dims in '%s'\n", spec);
			goto fail;
		}
		dims[ndim++] = strtoll(tok, NULL, 10);
	}
	t = ie_tensor_new(dtype, ndim, dims);
	if (t == NULL)
	{
		fprintf(stderr, "cannot allocate input '%s'\n", spec);
		goto fail;
	}
	f = fopen(file, "rb");
	if (f == NULL || fread(t->data, 1, t->nbytes, f) != t->nbytes)
	{
		fprintf(stderr, "cannot read %zu bytes from '%s'\n", t->nbytes, file);
		goto fail;
	}
	fclose(f);
	free(s);
	return t;

fail:
	if (f != NULL)
		fclose(f);
	ie_tensor_destroy(&t);
	free(s);
	return NULL;
}

/* Writes t's data to the file named by BENCH_OUT0, if set; 0 or -1. */
static int
dump_output(const ie_tensor *t)
{
	const char *path = getenv("BENCH_OUT0");
	FILE	   *f;
	int			rc = 0;

	if (path == NULL || *path == '\0')
		return 0;
	if ((f = fopen(path, "wb")) == NULL)
	{
		fprintf(stderr, "cannot write '%s'\n", path);
		return -1;
	}
	if (t->nbytes > 0 && fwrite(t->data, 1, t->nbytes, f) != t->nbytes)
		rc = -1;
	if (fclose(f) != 0 || rc != 0)
	{
		fprintf(stderr, "cannot write '%s'\n", path);
		return -1;
	}
	return 0;
}

/*
 * Runs the model once and frees its outputs (first writing the first to
 * BENCH_OUT0 when dump); 0 or -1 after printing why.
 */
static int
run_once(ie_model *m, const ie_tensor *const *ins, bool dump)
{
	ie_tensor  *outs[16] = {0};
	char		err[1024];
	int			n_out = ie_model_n_outputs(m);

	if (n_out > 16 || ie_model_run(m, ins, outs, err, sizeof(err)) != 0)
	{
		fprintf(stderr, "run failed: %s\n", n_out > 16 ? "too many outputs" : err);
		return -1;
	}
	if (dump && n_out > 0 && dump_output(outs[0]) != 0)
	{
		for (int j = 0; j < n_out; j++)
			ie_tensor_destroy(&outs[j]);
		return -1;
	}
	for (int j = 0; j < n_out; j++)
		ie_tensor_destroy(&outs[j]);
	return 0;
}

int
main(int argc, char **argv)
{
	ie_model   *m = NULL;
	ie_tensor  *ins[MAX_INPUTS] = {0};
	char		err[1024];
	int			threads,
				runs,
				n_in,
				rc = 1;
	double	   *times = NULL;

	if (argc < 5 || argc - 4 > MAX_INPUTS)
	{
		fprintf(stderr, "usage: %s MODEL THREADS RUNS FILE:DTYPE:SHAPE...\n", argv[0]);
		return 2;
	}
	threads = atoi(argv[2]);
	runs = atoi(argv[3]);
	if (runs < 1)
		runs = 1;
	n_in = argc - 4;
	ie_set_threads(threads);
	m = ie_model_load_file(argv[1], err, sizeof(err));
	if (m == NULL)
	{
		fprintf(stderr, "load failed: %s\n", err);
		goto out;
	}
	if (ie_model_n_inputs(m) != n_in)
	{
		fprintf(stderr, "model has %d inputs, %d given\n", ie_model_n_inputs(m), n_in);
		goto out;
	}
	for (int i = 0; i < n_in; i++)
		if ((ins[i] = read_input(argv[4 + i])) == NULL)
			goto out;
	times = calloc(runs, sizeof(double));
	if (times == NULL)
		goto out;
	for (int w = 0; w < 2; w++)
		if (run_once(m, (const ie_tensor *const *) ins, w == 1) != 0)
			goto out;
	for (int r = 0; r < runs; r++)
	{
		double		t0 = now_s();

		if (run_once(m, (const ie_tensor *const *) ins, false) != 0)
			goto out;
		times[r] = (now_s() - t0) * 1000.0;
	}
	qsort(times, runs, sizeof(double), cmp_double);
	printf("blas_core=%s median_ms=%.3f min_ms=%.3f\n", openblas_get_corename(),
		   runs % 2 ? times[runs / 2] : (times[runs / 2 - 1] + times[runs / 2]) / 2,
		   times[0]);
	rc = 0;
out:
	for (int i = 0; i < n_in; i++)
		ie_tensor_destroy(&ins[i]);
	free(times);
	ie_model_destroy(&m);
	return rc;
}
