/*
 * gpu_bench.c
 *	  gpu-bench: runs real models on real inputs on the CPU and on a CUDA
 *	  device, compares the outputs, and times the device at several batch
 *	  sizes (tests/gpu/run.sh prints the table).
 *
 *	  gpu-bench [--device cpu|cuda:N] [--precision fp32|tf32|fp16|bf16]
 *				[--tf32 on|off] [--tol T] [--seconds S]
 *				[--batches 1,8,32,128] NAME:UNIT:DIR ...
 *
 * DIR is a test folder (model.onnx, test_data_set_0/input_<i>.pb and, when
 * present, output_<j>.pb from ONNX Runtime), as tools/make_model_tests.py
 * and tests/onnx/make_text_tests.py write them; UNIT names what one row of
 * dimension 0 is ("images", "sentences").  For each folder: the model runs
 * on the CPU and on the device on the same inputs; every float output must
 * have ||gpu - cpu||_2 / ||cpu||_2 <= T (default 1e-4; run.sh uses 1e-2 with
 * TF32, FP16 and BF16), other outputs must be equal.  The device model is
 * loaded with --precision (default fp32; --tf32 on is --precision tf32),
 * the CPU model always computes in FP32.  Then the inputs are tiled along
 * dimension 0 to each batch size and the device is timed: one warm-up run
 * (it fills the memory pool), then runs until S seconds (default 1) have
 * passed, at least 2 and at most 50.  One line per model:
 *
 *	  RESULT <name> <unit> precision=<p> rel_l2=<x> ort_l2=<x|-> ok=<0|1> cpu_ms_row=<ms> b<B>=<rows/s>|err ...
 *
 * and "gpu-bench: N passed, M failed" at the end; exit status 1 when a
 * comparison failed, 2 on bad usage, 77 when the device cannot be used.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "onnx/onnx.pb-c.h"
#include "worker/engine/engine.h"
#include "worker/engine/model_int.h"

#define MAX_IO 16
#define MAX_BATCHES 8

/* Monotonic seconds. */
static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Reads a serialized TensorProto file into *out; 0 or -1 (message on stderr). */
static int
read_pb(const char *path, ie_tensor **out)
{
	FILE	   *f = fopen(path, "rb");
	long		n;
	void	   *buf = NULL;
	Onnx__TensorProto *tp = NULL;
	char		err[512];
	int			rc = -1;

	*out = NULL;
	if (f == NULL)
		return -1;
	if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0)
		goto done;
	buf = malloc(n > 0 ? (size_t) n : 1);
	if (buf == NULL || fread(buf, 1, (size_t) n, f) != (size_t) n)
		goto done;
	tp = onnx__tensor_proto__unpack(NULL, (size_t) n, buf);
	if (tp == NULL)
	{
		fprintf(stderr, "gpu-bench: %s is not a TensorProto\n", path);
		goto done;
	}
	if (ie_tensor_from_proto(tp, out, err, sizeof(err)) != 0)
	{
		fprintf(stderr, "gpu-bench: %s: %s\n", path, err);
		goto done;
	}
	rc = 0;
done:
	if (tp != NULL)
		onnx__tensor_proto__free_unpacked(tp, NULL);
	free(buf);
	fclose(f);
	return rc;
}

/*
 * ||a - b||_2 / ||b||_2 for float tensors of the same shape; 0 or 1 for
 * other types (equal or not); INFINITY when the shapes differ.
 */
static double
rel_l2(const ie_tensor *a, const ie_tensor *b)
{
	double		num = 0,
				den = 0;
	int64_t		n;

	if (a == NULL || b == NULL || a->dtype != b->dtype || a->ndim != b->ndim)
		return INFINITY;
	for (int d = 0; d < a->ndim; d++)
		if (a->dims[d] != b->dims[d])
			return INFINITY;
	if (a->dtype != IE_FLOAT)
		return memcmp(a->data, b->data, a->nbytes) == 0 ? 0.0 : 1.0;
	n = ie_tensor_numel(a);
	for (int64_t i = 0; i < n; i++)
	{
		double		x = ((const float *) a->data)[i],
					y = ((const float *) b->data)[i];

		num += (x - y) * (x - y);
		den += y * y;
	}
	if (den == 0)
		return num == 0 ? 0.0 : INFINITY;
	return sqrt(num / den);
}

/* in tiled along dimension 0 to rows (rows of in repeated cyclically). */
static ie_tensor *
tile(const ie_tensor *in, int64_t rows)
{
	int64_t		dims[IE_MAX_DIMS];
	ie_tensor  *t;
	size_t		row_bytes;

	if (in->ndim == 0 || in->dims[0] == 0)
		return ie_tensor_clone(in);
	memcpy(dims, in->dims, sizeof(dims));
	dims[0] = rows;
	t = ie_tensor_new_uninit(in->dtype, in->ndim, dims);
	if (t == NULL)
		return NULL;
	row_bytes = in->nbytes / (size_t) in->dims[0];
	for (int64_t r = 0; r < rows; r++)
		memcpy((char *) t->data + (size_t) r * row_bytes,
			   (const char *) in->data + (size_t) (r % in->dims[0]) * row_bytes, row_bytes);
	return t;
}

/* Loads path for device; NULL with the message printed. */
static ie_model *
load_for(const char *path, int device, ie_precision precision)
{
	char		err[1024];
	ie_model   *m;
	ie_load_opts opts = {.precision = precision};

	if (ie_set_device(device, err, sizeof(err)) != 0)
	{
		fprintf(stderr, "gpu-bench: %s\n", err);
		return NULL;
	}
	m = ie_model_load_file_opts(path, &opts, err, sizeof(err));
	if (m == NULL)
		fprintf(stderr, "gpu-bench: %s\n", err);
	return m;
}

/* Runs m on ins into outs (n_out of them); seconds taken, or -1 (message printed). */
static double
run_once(const ie_model *m, ie_tensor **ins, ie_tensor **outs)
{
	char		err[2048];
	double		t0 = now_s();

	if (ie_model_run(m, (const ie_tensor *const *) ins, outs, err, sizeof(err)) != 0)
	{
		fprintf(stderr, "gpu-bench: %s\n", err);
		return -1;
	}
	return now_s() - t0;
}

typedef struct options
{
	int			device;
	ie_precision precision;
	double		tol;
	double		seconds;
	int			n_batches;
	int64_t		batches[MAX_BATCHES];
} options;

/* One NAME:UNIT:DIR; returns 1 when its comparison passed, 0 when not. */
static int
bench_one(const options *o, const char *name, const char *unit, const char *dir)
{
	char		path[4096];
	ie_tensor  *ins[MAX_IO] = {NULL},
			   *cpu[MAX_IO] = {NULL},
			   *gpu[MAX_IO] = {NULL},
			   *ort[MAX_IO] = {NULL};
	ie_model   *mc = NULL,
			   *mg = NULL;
	int			n_in = 0,
				n_out = 0,
				ok = 0;
	double		worst = 0,
				worst_ort = -1,
				cpu_s = -1;
	char		line[1024];
	size_t		len;

	snprintf(path, sizeof(path), "%s/model.onnx", dir);
	mc = load_for(path, IE_DEVICE_CPU, IE_PRECISION_FP32);
	mg = load_for(path, o->device, o->precision);
	if (mc == NULL || mg == NULL)
		goto done;
	n_in = ie_model_n_inputs(mc);
	n_out = ie_model_n_outputs(mc);
	if (n_in > MAX_IO || n_out > MAX_IO)
	{
		fprintf(stderr, "gpu-bench: %s: too many inputs or outputs\n", name);
		goto done;
	}
	for (int i = 0; i < n_in; i++)
	{
		snprintf(path, sizeof(path), "%s/test_data_set_0/input_%d.pb", dir, i);
		if (read_pb(path, &ins[i]) != 0)
		{
			fprintf(stderr, "gpu-bench: %s: cannot read %s\n", name, path);
			goto done;
		}
	}
	for (int j = 0; j < n_out; j++)
	{
		snprintf(path, sizeof(path), "%s/test_data_set_0/output_%d.pb", dir, j);
		read_pb(path, &ort[j]);	/* optional */
	}
	/* the CPU's second run is timed (the first fills its buffer cache) */
	if (run_once(mc, ins, cpu) < 0)
		goto done;
	for (int j = 0; j < n_out; j++)
		ie_tensor_destroy(&cpu[j]);
	if ((cpu_s = run_once(mc, ins, cpu)) < 0 || run_once(mg, ins, gpu) < 0)
		goto done;
	for (int j = 0; j < n_out; j++)
	{
		double		e = rel_l2(gpu[j], cpu[j]);

		if (!(e <= worst))
			worst = e;
		if (ort[j] != NULL)
		{
			e = rel_l2(gpu[j], ort[j]);
			if (!(e <= worst_ort))
				worst_ort = e;
		}
	}
	ok = worst <= o->tol;
	if (!ok)
		fprintf(stderr, "gpu-bench: %s: device output differs from the CPU's: rel-l2 %.3g > %.3g\n",
				name, worst, o->tol);

	len = snprintf(line, sizeof(line), "RESULT %s %s precision=%s rel_l2=%.3g ort_l2=", name, unit,
				   ie_precision_name(o->precision), worst);
	len += worst_ort >= 0 ? snprintf(line + len, sizeof(line) - len, "%.3g", worst_ort) :
		snprintf(line + len, sizeof(line) - len, "-");
	len += snprintf(line + len, sizeof(line) - len, " ok=%d cpu_ms_row=%.1f", ok,
					cpu_s * 1e3 / (ins[0]->ndim > 0 && ins[0]->dims[0] > 0 ? ins[0]->dims[0] : 1));
	for (int b = 0; b < o->n_batches && len < sizeof(line); b++)
	{
		ie_tensor  *tin[MAX_IO] = {NULL},
				   *tout[MAX_IO] = {NULL};
		double		total = 0,
					t;
		int			runs = 0;
		bool		failed = false;

		for (int i = 0; i < n_in && !failed; i++)
			failed = (tin[i] = tile(ins[i], o->batches[b])) == NULL;
		/* warm-up: the pool grows to this batch's shapes */
		if (!failed && (t = run_once(mg, tin, tout)) < 0)
			failed = true;
		while (!failed && runs < 50 && (runs < 2 || total < o->seconds))
		{
			for (int j = 0; j < n_out; j++)
				ie_tensor_destroy(&tout[j]);
			if ((t = run_once(mg, tin, tout)) < 0)
				failed = true;
			else
			{
				total += t;
				runs++;
			}
		}
		if (failed)
			len += snprintf(line + len, sizeof(line) - len, " b%lld=err",
							(long long) o->batches[b]);
		else
			len += snprintf(line + len, sizeof(line) - len, " b%lld=%.1f",
							(long long) o->batches[b], o->batches[b] * runs / total);
		for (int i = 0; i < n_in; i++)
			ie_tensor_destroy(&tin[i]);
		for (int j = 0; j < n_out; j++)
			ie_tensor_destroy(&tout[j]);
	}
	printf("%s\n", line);
	fflush(stdout);

done:
	for (int i = 0; i < MAX_IO; i++)
	{
		ie_tensor_destroy(&ins[i]);
		ie_tensor_destroy(&cpu[i]);
		ie_tensor_destroy(&gpu[i]);
		ie_tensor_destroy(&ort[i]);
	}
	ie_model_destroy(&mc);
	ie_model_destroy(&mg);
	if (!ok)
		printf("FAIL %s\n", name);
	return ok;
}

/* Prints the usage and exits 2. */
static void
usage(void)
{
	fprintf(stderr, "usage: gpu-bench [--device cpu|cuda:N] [--precision fp32|tf32|fp16|bf16]\n"
			"                 [--tf32 on|off] [--tol T] [--seconds S]\n"
			"                 [--batches 1,8,32,128] NAME:UNIT:DIR ...\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	options		o = {0, IE_PRECISION_FP32, 1e-4, 1.0, 4, {1, 8, 32, 128}};
	char		err[1024];
	int			passed = 0,
				failed = 0;
	int			i;

	for (i = 1; i < argc && strncmp(argv[i], "--", 2) == 0; i += 2)
	{
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (v == NULL)
			usage();
		if (strcmp(argv[i], "--device") == 0)
		{
			if (ie_device_parse(v, &o.device, err, sizeof(err)) != 0)
				usage();
		}
		else if (strcmp(argv[i], "--tf32") == 0)
			o.precision = strcmp(v, "on") == 0 ? IE_PRECISION_TF32 : IE_PRECISION_FP32;
		else if (strcmp(argv[i], "--precision") == 0)
		{
			if (ie_precision_parse(v, &o.precision, err, sizeof(err)) != 0)
				usage();
		}
		else if (strcmp(argv[i], "--tol") == 0)
			o.tol = atof(v);
		else if (strcmp(argv[i], "--seconds") == 0)
			o.seconds = atof(v);
		else if (strcmp(argv[i], "--batches") == 0)
		{
			char	   *s = (char *) v,
					   *end;

			o.n_batches = 0;
			while (*s && o.n_batches < MAX_BATCHES)
			{
				o.batches[o.n_batches] = strtoll(s, &end, 10);
				if (end == s || o.batches[o.n_batches] < 1)
					usage();
				o.n_batches++;
				s = *end == ',' ? end + 1 : end;
			}
		}
		else
			usage();
	}
	if (i >= argc)
		usage();
	if (ie_set_device(o.device, err, sizeof(err)) != 0)
	{
		fprintf(stderr, "gpu-bench: %s\n", err);
		return 77;
	}
	for (; i < argc; i++)
	{
		char	   *spec = strdup(argv[i]);
		char	   *unit = spec ? strchr(spec, ':') : NULL;
		char	   *dir = unit ? strchr(unit + 1, ':') : NULL;

		if (dir == NULL)
			usage();
		*unit++ = '\0';
		*dir++ = '\0';
		if (bench_one(&o, spec, unit, dir))
			passed++;
		else
			failed++;
		free(spec);
	}
	printf("gpu-bench: %d passed, %d failed\n", passed, failed);
	return failed > 0 ? 1 : 0;
}
