/*
 * test_device.c
 *	  The engine's device API (engine.h: ie_device_parse, ie_set_device,
 *	  ie_device_memory, ie_model_device, the precisions) on whatever
 *	  machine runs it.
 *
 * Without a usable CUDA device (or in a build without CUDA) choosing
 * cuda:0 must fail with a message naming the cause and leave the default
 * on the CPU, and a model must still load and run on the CPU.  With one,
 * cuda:0 must be accepted, report its memory, and run a Relu model with
 * the CPU's result.  Prints "gpu-device: N passed, M failed".
 *
 *	  gpu-test-device NODE_TEST_DIR
 */
#include <stdio.h>
#include <string.h>

#include "tests/gpu/check.h"
#include "worker/engine/engine.h"

/* Loads NODE_TEST_DIR/test_relu/model.onnx and runs it on [-1, 0, 2]; 0 when y = [0, 0, 2]. */
static int
run_relu(const char *node_dir, int want_device, char *err, size_t errlen)
{
	char		path[4096];
	ie_model   *m;
	int64_t		dims[3] = {3, 4, 5};
	ie_tensor  *x = ie_tensor_new(IE_FLOAT, 3, dims);
	ie_tensor  *y = NULL;
	int			rc = -1;

	snprintf(path, sizeof(path), "%s/test_relu/model.onnx", node_dir);
	m = ie_model_load_file(path, err, errlen);
	if (m == NULL || x == NULL)
		goto done;
	if (ie_model_device(m) != want_device)
	{
		snprintf(err, errlen, "model device %d, want %d", ie_model_device(m), want_device);
		goto done;
	}
	for (int i = 0; i < 60; i++)
		((float *) x->data)[i] = (float) (i % 3) - 1.0f;
	if (ie_model_run(m, (const ie_tensor *const *) &x, &y, err, errlen) != 0)
		goto done;
	rc = 0;
	for (int i = 0; i < 60; i++)
	{
		float		want = (i % 3) == 2 ? 1.0f : 0.0f;

		if (((float *) y->data)[i] != want)
		{
			snprintf(err, errlen, "y[%d] = %g, want %g", i, ((float *) y->data)[i], want);
			rc = -1;
			break;
		}
	}
done:
	ie_tensor_destroy(&x);
	ie_tensor_destroy(&y);
	ie_model_destroy(&m);
	return rc;
}

/*
 * Precisions (engine.h): the names parse both ways, a bad one is refused
 * naming the accepted ones, a CPU model loaded with FP16 records it, a
 * load without options is FP32, and an unknown value fails the load.
 */
static void
check_precision(const char *node_dir)
{
	static const char *const names[] = {"fp32", "tf32", "fp16", "bf16"};
	char		err[1024],
				path[4096];
	ie_precision p = IE_PRECISION_BF16;
	ie_load_opts opts = {.precision = IE_PRECISION_FP16};
	ie_model   *m;

	for (int i = 0; i < 4; i++)
		check(ie_precision_parse(names[i], &p, err, sizeof(err)) == 0 && (int) p == i &&
			  strcmp(ie_precision_name(p), names[i]) == 0, "precision name", names[i]);
	check(ie_precision_parse("", &p, err, sizeof(err)) == 0 && p == IE_PRECISION_FP32,
		  "empty precision is fp32", NULL);
	check(ie_precision_parse("fp64", &p, err, sizeof(err)) == -1 &&
		  strstr(err, "fp32, tf32, fp16 or bf16") != NULL, "fp64 refused", err);
	check(ie_precision_name((ie_precision) 4) == NULL, "no name for 4", NULL);
	snprintf(path, sizeof(path), "%s/test_relu/model.onnx", node_dir);
	m = ie_model_load_file_opts(path, &opts, err, sizeof(err));
	check(m != NULL && ie_model_precision(m) == IE_PRECISION_FP16 &&
		  ie_model_device(m) == IE_DEVICE_CPU, "fp16 model on the cpu", err);
	ie_model_destroy(&m);
	m = ie_model_load_file(path, err, sizeof(err));
	check(m != NULL && ie_model_precision(m) == IE_PRECISION_FP32, "default fp32", err);
	ie_model_destroy(&m);
	opts.precision = (ie_precision) 7;
	m = ie_model_load_file_opts(path, &opts, err, sizeof(err));
	check(m == NULL && strstr(err, "unknown precision 7") != NULL, "precision 7 refused", err);
	ie_model_destroy(&m);
}

int
main(int argc, char **argv)
{
	const char *node_dir = argc > 1 ? argv[1] : "/usr/include/onnx/backend/test/data/node";
	char		err[1024];
	int			dev = 99;
	uint64_t	fr = 1,
				tot = 1;
	int			have_gpu;

	/* parsing */
	check(ie_device_parse("cpu", &dev, err, sizeof(err)) == 0 && dev == IE_DEVICE_CPU,
		  "parse cpu", NULL);
	check(ie_device_parse("cuda", &dev, err, sizeof(err)) == 0 && dev == 0, "parse cuda", NULL);
	check(ie_device_parse("cuda:3", &dev, err, sizeof(err)) == 0 && dev == 3, "parse cuda:3", NULL);
	check(ie_device_parse("gpu", &dev, err, sizeof(err)) != 0 &&
		  strstr(err, "\"cuda:N\"") != NULL, "parse gpu fails naming the forms", err);
	check(ie_device_parse("cuda:", &dev, err, sizeof(err)) != 0, "parse cuda: fails", NULL);
	check(ie_device_parse("cuda:-1", &dev, err, sizeof(err)) != 0, "parse cuda:-1 fails", NULL);
	check(ie_device_parse("cuda:1x", &dev, err, sizeof(err)) != 0, "parse cuda:1x fails", NULL);

	/* the CPU has no device memory to report */
	check(ie_device_memory(IE_DEVICE_CPU, &fr, &tot, err, sizeof(err)) != 0 && fr == 0 &&
		  tot == 0, "cpu memory query fails", NULL);
	check(ie_set_device(IE_DEVICE_CPU, err, sizeof(err)) == 0 &&
		  ie_get_device() == IE_DEVICE_CPU, "set cpu", err);

	err[0] = '\0';
	have_gpu = ie_set_device(0, err, sizeof(err)) == 0;
	if (!have_gpu)
	{
		printf("no usable CUDA device here: %s\n", err);
		check(strstr(err, "cannot use cuda:0: ") != NULL &&
			  (strstr(err, "no usable CUDA device or driver") != NULL ||
			   strstr(err, "no CUDA device found") != NULL ||
			   strstr(err, "built without CUDA") != NULL),
			  "cuda:0 refused with the cause", err);
		check(ie_get_device() == IE_DEVICE_CPU, "default stays cpu", NULL);
		check(ie_device_memory(0, &fr, &tot, err, sizeof(err)) != 0,
			  "cuda:0 memory query fails", NULL);
		check(run_relu(node_dir, IE_DEVICE_CPU, err, sizeof(err)) == 0,
			  "relu on the cpu", err);
	}
	else
	{
		check(ie_get_device() == 0, "default is cuda:0", NULL);
		check(ie_device_memory(0, &fr, &tot, err, sizeof(err)) == 0 && tot > 0 && fr <= tot,
			  "cuda:0 memory", err);
		printf("cuda:0: %llu of %llu bytes free\n", (unsigned long long) fr,
			   (unsigned long long) tot);
		check(run_relu(node_dir, 0, err, sizeof(err)) == 0, "relu on cuda:0", err);
		check(ie_set_device(1000, err, sizeof(err)) != 0 && ie_get_device() == 0,
			  "cuda:1000 refused", err);
		check(ie_set_device(IE_DEVICE_CPU, err, sizeof(err)) == 0 &&
			  run_relu(node_dir, IE_DEVICE_CPU, err, sizeof(err)) == 0, "relu on the cpu", err);
	}
	check_precision(node_dir);
	printf("gpu-device: %d passed, %d failed\n", passed, failed);
	return failed > 0 ? 1 : 0;
}
