/*
 * fuzz_model.c
 *	  libFuzzer harness for the ONNX model loader and executor
 *	  (worker/engine): any bytes must load into a model or fail with a
 *	  message, never crash, leak or read outside the input.  A model that
 *	  loads and whose inputs are all small and of a type the engine holds
 *	  is also run once, on inputs filled with a fixed pattern: the run must
 *	  succeed with every output set, or fail with a message and no output
 *	  left.
 *
 * Built and run by tests/fuzz/fuzz.mk (`make fuzz`, `make check-fuzz`).
 * Single-threaded engine (ie_set_threads(1)) so that runs repeat; tensors
 * are capped at 256 MiB (ie_set_max_tensor_bytes), so that a model asking
 * for more gets the engine's out-of-memory error, which is what must hold.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "worker/engine/engine.h"

/* Inputs above this many elements are not run: the loader is the target. */
#define FUZZ_MAX_INPUT_ELEMS 4096
/* A dynamic dimension of a run's input gets this size. */
#define FUZZ_DYNAMIC_DIM 2

int			LLVMFuzzerInitialize(int *argc, char ***argv);
int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* One engine thread, once. */
int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void) argc;
	(void) argv;
	ie_set_threads(1);
	/* a tensor above 256 MiB fails as out of memory, before libFuzzer's
	 * malloc limit would report it as a finding */
	ie_set_max_tensor_bytes((size_t) 256 << 20);
	return 0;
}

/*
 * Makes the input tensor for graph input i of m, or NULL when it is too
 * big, of a type the engine does not hold, or of an unknown rank.
 */
static ie_tensor *
make_input(const ie_model *m, int i)
{
	ie_dtype	dtype;
	int64_t		dims[IE_MAX_DIMS];
	int			rank = ie_model_input_shape(m, i, &dtype, dims);
	int64_t		numel = 1;
	ie_tensor  *t;
	size_t		esize;
	uint8_t    *p;

	if (rank < 0 || rank > IE_MAX_DIMS)
		return NULL;
	for (int d = 0; d < rank; d++)
	{
		if (dims[d] < 0)
			dims[d] = FUZZ_DYNAMIC_DIM;
		if (dims[d] > FUZZ_MAX_INPUT_ELEMS)
			return NULL;
		numel *= dims[d];
		if (numel > FUZZ_MAX_INPUT_ELEMS)
			return NULL;
	}
	esize = ie_dtype_size(dtype);
	if (esize == 0 || dtype == IE_STRING)
		return NULL;
	t = ie_tensor_new(dtype, rank, dims);
	if (t == NULL)
		return NULL;
	/* small values of every type: byte k is k % 3 (floats stay tiny) */
	p = t->data;
	for (size_t k = 0; k < t->nbytes; k++)
		p[k] = (uint8_t) (k % 3);
	return t;
}

/* Runs m once when every input can be made; checks the run's contract. */
static void
try_run(const ie_model *m)
{
	int			n_in = ie_model_n_inputs(m),
				n_out = ie_model_n_outputs(m);
	ie_tensor **in = calloc((size_t) n_in + 1, sizeof(ie_tensor *));
	ie_tensor **out = calloc((size_t) n_out + 1, sizeof(ie_tensor *));
	char		err[512];
	int			ok = in != NULL && out != NULL;

	for (int i = 0; ok && i < n_in; i++)
		ok = (in[i] = make_input(m, i)) != NULL;
	if (ok)
	{
		err[0] = '\0';
		if (ie_model_run(m, (const ie_tensor *const *) in, out, err, sizeof(err)) == 0)
		{
			for (int j = 0; j < n_out; j++)
				if (out[j] == NULL)
					abort();
		}
		else
		{
			if (err[0] == '\0')
				abort();
			for (int j = 0; j < n_out; j++)
				if (out[j] != NULL)
					abort();
		}
	}
	for (int j = 0; out != NULL && j < n_out; j++)
		ie_tensor_destroy(&out[j]);
	for (int i = 0; in != NULL && i < n_in; i++)
		ie_tensor_destroy(&in[i]);
	free(in);
	free(out);
}

/* One input: load it as a model; run it when it loads. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char		err[512];
	ie_model   *m;

	err[0] = '\0';
	m = ie_model_load_bytes(data, size, err, sizeof(err));
	if (m == NULL)
	{
		if (err[0] == '\0')
			abort();
		return 0;
	}
	try_run(m);
	ie_model_destroy(&m);
	ie_tensor_cache_clear();
	return 0;
}
