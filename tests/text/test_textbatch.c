/*
 * test_textbatch.c
 *	  A text's answer does not depend on its batch (worker/text.c), on real
 *	  models: MiniLM (fp32), MiniLM through quantize_dynamic and an LSTM
 *	  classifier without attention_mask, the latter two written by
 *	  tests/text/make_batch_models.py.  For each model, fresh model cache:
 *	  the texts of nomask_reference.tsv in one request (batches of up to
 *	  16 rows), then each text alone; every row's vector must be the one it
 *	  gets alone, and the model's verdict (model_cache_get_layout) the
 *	  probe's: fp32 MiniLM and the LSTM (whose batches hold rows of one
 *	  length) in batches, the quantized MiniLM one at a time.  "The one it
 *	  gets alone" is what the probe (text.c, probe_rows) promises: bit for
 *	  bit where the engine's own kernel runs (ie_gd_enabled) or the rows
 *	  run one at a time, else within rtol 1e-3, atol 1e-5
 *	  (model_calls_rows_match: OpenBLAS's kernels, e.g. its Haswell ones,
 *	  differ by about 1e-7 with the batch's shape).  The LSTM's values must
 *	  be within 1e-5 of ONNX Runtime's on the unpadded text.
 *	  Prints the smallest cosine of a row batched against alone and
 *	  "text_batch: N passed, M failed"; exits non-zero on a failure.
 *
 *	  usage: test_textbatch MODEL_DIR BATCH_DIR
 *	  MODEL_DIR holds minilm/, BATCH_DIR make_batch_models.py's output.
 *
 *	  Single-threaded.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/protocol.h"
#include "worker/engine/gemm_direct.h"
#include "worker/fragment.h"
#include "worker/model_cache.h"
#include "worker/model_calls.h"
#include "tests/text/textutil.h"

#define MAX_TEXTS 16

static char *texts[MAX_TEXTS];
static float ref[MAX_TEXTS][8];
static int	n_ref_values[MAX_TEXTS];
static int	n_texts;

/* Reads nomask_reference.tsv: "<UTF-8 hex>\t<values>" a line; -1 on error. */
static int
read_reference(const char *path)
{
	FILE	   *f = fopen(path, "r");
	char		line[4096];

	if (f == NULL)
		return -1;
	while (n_texts < MAX_TEXTS && fgets(line, sizeof(line), f) != NULL)
	{
		char	   *tab = strchr(line, '\t');
		char	   *p;
		size_t		hex;
		char	   *t;

		if (tab == NULL)
			break;
		hex = (size_t) (tab - line);
		t = calloc(hex / 2 + 1, 1);
		if (t == NULL)
			break;
		for (size_t i = 0; i + 1 < hex; i += 2)
		{
			unsigned	b;

			sscanf(line + i, "%2x", &b);
			t[i / 2] = (char) b;
		}
		p = tab + 1;
		while (n_ref_values[n_texts] < 8)
		{
			char	   *end;
			float		v = strtof(p, &end);

			if (end == p)
				break;
			ref[n_texts][n_ref_values[n_texts]++] = v;
			p = end;
		}
		texts[n_texts++] = t;
	}
	fclose(f);
	return n_texts > 1 ? 0 : -1;
}

/* One FRAG_EMBED_TEXT run of texts[first..first+n) with file; NULL on error. */
static fragment_result *
embed(model_cache *mc, const char *file, int first, int n, char *err,
	  size_t errlen)
{
	Pginfer__ModelSpec spec = PGINFER__MODEL_SPEC__INIT;
	Pginfer__ModelSpec *specs[1] = {&spec};
	Pginfer__Fragment frag = PGINFER__FRAGMENT__INIT;
	Pginfer__RunFragment run = PGINFER__RUN_FRAGMENT__INIT;
	uint64_t	ids[MAX_TEXTS];
	const void *rows[MAX_TEXTS];
	size_t		lens[MAX_TEXTS];
	fragment_result *r = NULL;
	const char *sqlstate = "";

	spec.name = (char *) file;
	spec.file = (char *) file;
	spec.task = "embed_text";
	frag.kind = PGINFER__FRAGMENT_KIND__FRAG_EMBED_TEXT;
	frag.n_models = 1;
	frag.models = specs;
	for (int i = 0; i < n; i++)
	{
		ids[i] = 100 + (uint64_t) i;
		rows[i] = texts[first + i];
		lens[i] = strlen(texts[first + i]);
	}
	run.fragment = &frag;
	run.n_row_ids = (size_t) n;
	run.row_ids = ids;
	if (fragment_run(mc, &run, rows, lens, n, 0, 16, NULL, &r, &sqlstate,
					 err, errlen) != 0)
	{
		fragment_result_destroy(&r);
		return NULL;
	}
	return r;
}

/*
 * The texts batched and alone through dir's file (a fresh cache): the same
 * (bit for bit where the probe promises it), the verdict layout, and with
 * check_ref the reference.
 */
static void
test_model(const char *dir, const char *file, int layout, int check_ref)
{
	char		err[1024] = "";
	model_cache *mc = model_cache_new(dir, err, sizeof(err));
	fragment_result *all = NULL;
	double		min_cos = 1;
	int			same = 0;
	double		maxref = 0;
	int			close = 0;		/* not bit for bit, within the tolerance */
	bool		exact = ie_gd_enabled() || layout == MODEL_LAYOUT_NOT_ROWS;

	CHECK(mc != NULL, "model cache on %s: %s", dir, err);
	if (mc == NULL)
		return;
	all = embed(mc, file, 0, n_texts, err, sizeof(err));
	CHECK(all != NULL, "%s: batch of %d: %s", file, n_texts, err);
	if (all == NULL)
		goto done;
	CHECK(model_cache_get_layout(mc, file) == layout, "%s: verdict %d, expected %d",
		  file, model_cache_get_layout(mc, file), layout);
	for (int i = 0; i < n_texts; i++)
	{
		fragment_result *one = embed(mc, file, i, 1, err, sizeof(err));
		size_t		n = all->n_values[i];

		CHECK(one != NULL && all->rows[i].ok && one->rows[0].ok &&
			  one->n_values[0] == n && n > 0, "%s: row %d: %s", file, i, err);
		if (one == NULL || one->n_values[0] != n || n == 0)
		{
			fragment_result_destroy(&one);
			continue;
		}
		min_cos = fmin(min_cos, cosine(all->values[i], one->values[0], n));
		if (memcmp(all->values[i], one->values[0], n * sizeof(float)) == 0)
			same++;
		else if (!exact && model_calls_rows_match(all->values[i], one->values[0], n, false))
			close++;
		else
			printf("%s: row %d (%u tokens) batched differs from alone, cosine %.6f\n",
				   file, i, all->rows[i].n_tokens,
				   cosine(all->values[i], one->values[0], n));
		if (check_ref)
		{
			CHECK((int) n == n_ref_values[i], "%s: row %d has %zu values, reference %d",
				  file, i, n, n_ref_values[i]);
			for (size_t k = 0; k < n && (int) k < n_ref_values[i]; k++)
				maxref = fmax(maxref, fabs((double) one->values[0][k] - ref[i][k]));
			for (size_t k = 0; k < n && (int) k < n_ref_values[i]; k++)
				maxref = fmax(maxref, fabs((double) all->values[i][k] - ref[i][k]));
		}
		fragment_result_destroy(&one);
	}
	CHECK(same + close == n_texts, "%s: %d of %d rows the same batched and alone (%s)",
		  file, same + close, n_texts,
		  exact ? "bit for bit" : "within rtol 1e-3, atol 1e-5");
	if (check_ref)
		CHECK(maxref <= 1e-5, "%s: max |diff| to ONNX Runtime unpadded %g", file, maxref);
	printf("text_batch: %s: %d of %d rows bit-identical batched and alone, %d within the tolerance (%s; min cosine %.6f, %d model calls for the batch)",
		   file, same, n_texts, close,
		   exact ? "bit for bit required" : "the engine's own kernel is off",
		   min_cos, all->model_runs);
	if (check_ref)
		printf(", max |diff| to ONNX Runtime %.3g", maxref);
	printf("\n");

done:
	fragment_result_destroy(&all);
	model_cache_destroy(&mc);
}

int
main(int argc, char **argv)
{
	char		path[1024];

	if (argc != 3)
	{
		fprintf(stderr, "usage: test_textbatch MODEL_DIR BATCH_DIR\n");
		return 2;
	}
	snprintf(path, sizeof(path), "%s/nomask_reference.tsv", argv[2]);
	if (read_reference(path) != 0)
	{
		printf("FAIL cannot read %s\ntext_batch: 0 passed, 1 failed\n", path);
		return 1;
	}
	test_model(argv[1], "minilm/model.onnx", MODEL_LAYOUT_ROWS_FIRST, 0);
	test_model(argv[2], "qdyn/model.onnx", MODEL_LAYOUT_NOT_ROWS, 0);
	test_model(argv[2], "nomask/model.onnx", MODEL_LAYOUT_ROWS_FIRST, 1);
	for (int i = 0; i < n_texts; i++)
		free(texts[i]);
	printf("text_batch: %d passed, %d failed\n", passed, failed);
	return failed == 0 ? 0 : 1;
}
