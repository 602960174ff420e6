/*
 * test_text.c
 *	  Unit tests of worker/text.c, the text-embedding fragment: model.json
 *	  parsing, pooling and normalisation on hand-made values; and, on the
 *	  real sentence-embedding model (build/models/minilm, or
 *	  $PGINFER_MODEL_DIR/minilm), fragment_run over FRAG_EMBED_TEXT rows:
 *	  384 values of unit norm, a row's vector the same alone and among
 *	  rows of other lengths, batches cut by rows and by padded tokens,
 *	  related sentences closer than unrelated ones,
 *	  per-row errors for invalid UTF-8 and (truncation off) long texts,
 *	  truncation flags, and a request error for a model without its
 *	  model.json.
 *
 * Threading: single-threaded.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/protocol.h"
#include "tests/unit/testutil.h"
#include "worker/argmax.h"
#include "worker/fragment.h"
#include "worker/model_cache.h"
#include "worker/text.h"

/* model.json: full, defaults, and the errors. */
static void
test_config(void)
{
	text_config c;
	char		err[256];
	const char *full = "{\"max_seq_length\": 256, \"do_lower_case\": false,\n"
		"  \"pooling\": \"cls\", \"normalize\": true, \"vocab\": \"v\\/x.txt\",\n"
		"  \"other\": {\"a\": [1, 2, {\"b\": \"}\"}], \"c\": null}, \"dim\": 384.5}";

	CHECK(text_config_parse(full, strlen(full), &c, err, sizeof(err)) == 0,
		  "full config: %s", err);
	CHECK(c.max_seq_length == 256 && c.lowercase == 0 && c.pooling == TEXT_POOL_CLS &&
		  c.normalize == 1 && strcmp(c.vocab, "v/x.txt") == 0,
		  "full config read as %d %d %d %d %s", c.max_seq_length, c.lowercase,
		  (int) c.pooling, c.normalize, c.vocab);

	CHECK(text_config_parse("{\"max_seq_length\":128}", 22, &c, err, sizeof(err)) == 0,
		  "minimal config: %s", err);
	CHECK(c.max_seq_length == 128 && c.lowercase == 1 && c.pooling == TEXT_POOL_MEAN &&
		  c.normalize == 0 && strcmp(c.vocab, "vocab.txt") == 0,
		  "defaults: %d %d %d %d %s", c.max_seq_length, c.lowercase,
		  (int) c.pooling, c.normalize, c.vocab);

	CHECK(text_config_parse("{}", 2, &c, err, sizeof(err)) != 0 &&
		  strstr(err, "max_seq_length is missing") != NULL, "empty object: %s", err);
	CHECK(text_config_parse("{\"max_seq_length\": 2}", 21, &c, err, sizeof(err)) != 0 &&
		  strstr(err, "outside") != NULL, "max_seq_length 2: %s", err);
	CHECK(text_config_parse("{\"max_seq_length\": 1.5}", 23, &c, err, sizeof(err)) != 0,
		  "fractional max_seq_length accepted");
	CHECK(text_config_parse("{\"max_seq_length\": 8, \"pooling\": \"max\"}", 39, &c,
							err, sizeof(err)) != 0 &&
		  strstr(err, "\"max\"") != NULL, "pooling max: %s", err);
	CHECK(text_config_parse("{\"max_seq_length\": 8, \"normalize\": 1}", 37, &c,
							err, sizeof(err)) != 0 &&
		  strstr(err, "normalize") != NULL, "normalize 1: %s", err);
	CHECK(text_config_parse("[1]", 3, &c, err, sizeof(err)) != 0, "array accepted");
	CHECK(text_config_parse("{\"max_seq_length\": 8", 20, &c, err, sizeof(err)) != 0,
		  "unterminated object accepted");
	CHECK(text_config_parse("{\"max_seq_length\": 8} x", 23, &c, err, sizeof(err)) != 0,
		  "trailing text accepted");
	CHECK(text_config_parse("{\"max_seq_length\": 8, \"x\": [1,}", 31, &c, err,
							sizeof(err)) != 0, "malformed nested value accepted");
}

/* Mean and CLS pooling and normalisation on small hand-made values. */
static void
test_pool(void)
{
	/* 3 tokens x 2 dims; the last token is padding */
	const float hidden[6] = {1, 2, 3, 6, 100, -100};
	const int64_t mask[3] = {1, 1, 0};
	const int64_t none[3] = {0, 0, 0};
	float		out[2];
	float		v[3] = {3, 0, 4};
	float		z[2] = {0, 0};

	text_pool(hidden, mask, 3, 2, TEXT_POOL_MEAN, out);
	CHECK(out[0] == 2.0f && out[1] == 4.0f, "mean pooling gave %g %g", out[0], out[1]);
	text_pool(hidden, mask, 2, 2, TEXT_POOL_MEAN, out);
	CHECK(out[0] == 2.0f && out[1] == 4.0f, "mean pooling of the unpadded row gave %g %g",
		  out[0], out[1]);
	text_pool(hidden, mask, 3, 2, TEXT_POOL_CLS, out);
	CHECK(out[0] == 1.0f && out[1] == 2.0f, "cls pooling gave %g %g", out[0], out[1]);
	text_pool(hidden, none, 3, 2, TEXT_POOL_MEAN, out);
	CHECK(out[0] == 0.0f && out[1] == 0.0f, "mean of no tokens gave %g %g", out[0], out[1]);

	text_normalize(v, 3);
	CHECK(fabsf(v[0] - 0.6f) < 1e-7f && v[1] == 0.0f && fabsf(v[2] - 0.8f) < 1e-7f,
		  "normalize gave %g %g %g", v[0], v[1], v[2]);
	text_normalize(z, 2);
	CHECK(z[0] == 0.0f && z[1] == 0.0f, "normalize of zero gave %g %g", z[0], z[1]);
}

/* One FRAG_EMBED_TEXT run of n texts with file; NULL with err on a request error. */
static fragment_result *
embed(model_cache *mc, const char *file, const char *const *texts, int n,
	  int truncate, int max_batch, const char **sqlstate, char *err, size_t errlen)
{
	Pginfer__ModelSpec spec = PGINFER__MODEL_SPEC__INIT;
	Pginfer__ModelSpec *specs[1] = {&spec};
	Pginfer__Fragment frag = PGINFER__FRAGMENT__INIT;
	Pginfer__RunFragment run = PGINFER__RUN_FRAGMENT__INIT;
	uint64_t	ids[16];
	const void *rows[16];
	size_t		lens[16];
	fragment_result *r = NULL;

	spec.name = "minilm";
	spec.file = (char *) file;
	spec.task = "embed_text";
	frag.kind = PGINFER__FRAGMENT_KIND__FRAG_EMBED_TEXT;
	frag.n_models = 1;
	frag.models = specs;
	frag.truncate_text = truncate;
	for (int i = 0; i < n; i++)
	{
		ids[i] = 100 + (uint64_t) i;
		rows[i] = texts[i];
		lens[i] = strlen(texts[i]);
	}
	run.fragment = &frag;
	run.n_row_ids = (size_t) n;
	run.row_ids = ids;
	if (fragment_run(mc, &run, rows, lens, n, 0, max_batch, NULL, &r, sqlstate,
					 err, errlen) != 0)
		return NULL;
	return r;
}

/* Cosine of two vectors of n floats. */
static double
cosine(const float *a, const float *b, size_t n)
{
	double		d = 0,
				aa = 0,
				bb = 0;

	for (size_t i = 0; i < n; i++)
	{
		d += (double) a[i] * b[i];
		aa += (double) a[i] * a[i];
		bb += (double) b[i] * b[i];
	}
	return d / sqrt(aa * bb);
}

/* A text of about n words (far more tokens than the model takes for n > 300). */
static char *
long_text(int n)
{
	static const char *const words[] = {"database", "tables", "hold", "rows",
	"of", "text", "and", "numbers", "queried", "with", "SQL"};
	size_t		cap = (size_t) n * 12 + 1,
				o = 0;
	char	   *s = malloc(cap);

	for (int i = 0; i < n && s != NULL; i++)
		o += (size_t) snprintf(s + o, cap - o, "%s ", words[i % 11]);
	return s;
}

/* fragment_run on the real model: see the banner. */
static void
test_model(void)
{
	const char *dir = getenv("PGINFER_MODEL_DIR");
	char		path[1024];
	char		err[1024] = "";
	const char *sqlstate = "";
	model_cache *mc = NULL;
	fragment_result *all = NULL,
			   *one = NULL,
			   *r = NULL;
	char	   *longest = long_text(400);
	const char *texts[7] = {
		"A man is eating food.",
		"hello world",
		"",
		"A man is eating a piece of bread.",
		"The stock market fell sharply on Tuesday as investors worried about rates.",
		"Caf\xc3\xa9 cr\xc3\xa8me br\xc3\xbbl\xc3\xa9\x65, \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e and \xf0\x9f\x98\x80 emoji\r\nsecond line",
		longest,
	};
	const char *bad[3] = {"valid text", "bad \xff\xfe bytes", longest};
	double		maxdiff = 0;
	int			identical = 1;
	float		one_hello[384];		/* "hello world" alone */

	if (dir == NULL)
		dir = "build/models";
	snprintf(path, sizeof(path), "%s/minilm/model.onnx", dir);
	CHECK(access(path, R_OK) == 0, "%s is missing: run make models", path);
	if (access(path, R_OK) != 0 || longest == NULL)
		goto done;
	mc = model_cache_new(dir, err, sizeof(err));
	CHECK(mc != NULL, "model cache: %s", err);
	if (mc == NULL)
		goto done;

	all = embed(mc, "minilm/model.onnx", texts, 7, 1, 16, &sqlstate, err, sizeof(err));
	CHECK(all != NULL, "batch of 7: %s %s", sqlstate, err);
	if (all == NULL)
		goto done;
	for (int i = 0; i < 7; i++)
	{
		double		ss = 0;

		CHECK(all->rows[i].ok && all->n_values[i] == 384 && all->rows[i].n_values == 384 &&
			  all->rows[i].row_id == 100 + (uint64_t) i,
			  "row %d: ok=%d n=%zu id=%llu %s", i, (int) all->rows[i].ok, all->n_values[i],
			  (unsigned long long) all->rows[i].row_id, all->rows[i].message);
		if (!all->rows[i].ok || all->n_values[i] != 384)
			goto done;
		for (int d = 0; d < 384; d++)
			ss += (double) all->values[i][d] * all->values[i][d];
		CHECK(fabs(sqrt(ss) - 1) < 1e-5, "row %d has norm %.7f", i, sqrt(ss));
	}
	CHECK(all->rows[1].n_tokens == 4 && !all->rows[1].truncated,
		  "\"hello world\" has %u tokens (truncated %d), expected 4",
		  all->rows[1].n_tokens, (int) all->rows[1].truncated);
	CHECK(all->rows[2].n_tokens == 2, "\"\" has %u tokens, expected 2", all->rows[2].n_tokens);
	CHECK(all->rows[6].truncated && all->rows[6].n_tokens == 256,
		  "the long text: truncated %d, %u tokens", (int) all->rows[6].truncated,
		  all->rows[6].n_tokens);
	/*
	 * batched under the padding bound (text.h, TEXT_PAD_RATIO): the rows
	 * sorted by tokens (2, 4 | 8, 11 | the next two | 256) make 4 model
	 * calls for 7 rows, not 7 (nor 1, as before that bound), and the
	 * model's first batch of two rows is probed once a load (text.c,
	 * probe_rows): its two rows run again alone, 6 calls in all
	 */
	CHECK(all->model_runs == 6, "7 rows took %d model calls, expected 6", all->model_runs);
	CHECK(model_cache_get_layout(mc, "minilm/model.onnx") == MODEL_LAYOUT_ROWS_FIRST,
		  "the probe of MiniLM's first batch kept verdict %d, expected rows in batches",
		  model_cache_get_layout(mc, "minilm/model.onnx"));

	/* related sentences are closer than unrelated ones */
	CHECK(cosine(all->values[0], all->values[3], 384) >
		  cosine(all->values[0], all->values[4], 384) + 0.3,
		  "cos(food, bread) %.4f vs cos(food, stocks) %.4f",
		  cosine(all->values[0], all->values[3], 384),
		  cosine(all->values[0], all->values[4], 384));

	/* each row alone gives the vector it got among the others */
	for (int i = 0; i < 7; i++)
	{
		one = embed(mc, "minilm/model.onnx", &texts[i], 1, 1, 16, &sqlstate, err,
					sizeof(err));
		CHECK(one != NULL && one->rows[0].ok && one->n_values[0] == 384,
			  "row %d alone: %s", i, err);
		if (one == NULL || !one->rows[0].ok || one->n_values[0] != 384)
			goto done;
		for (int d = 0; d < 384; d++)
		{
			double		diff = fabs((double) one->values[0][d] - all->values[i][d]);

			if (diff > maxdiff)
				maxdiff = diff;
			if (one->values[0][d] != all->values[i][d])
				identical = 0;
		}
		if (i == 1)
			memcpy(one_hello, one->values[0], sizeof(one_hello));
		fragment_result_destroy(&one);
	}
	CHECK(maxdiff <= 1e-6, "a row alone and in a batch differ by %g", maxdiff);
	printf("test_text: a row alone vs in a batch of 7: %s (max |diff| %.3g)\n",
		   identical ? "bit-identical" : "not bit-identical", maxdiff);

	/* max_batch 2: four model calls, the same vectors */
	r = embed(mc, "minilm/model.onnx", texts, 7, 1, 2, &sqlstate, err, sizeof(err));
	CHECK(r != NULL && r->model_runs == 4, "max_batch 2: %d model calls (%s)",
		  r ? r->model_runs : -1, err);
	for (int i = 0; r != NULL && i < 7; i++)
		CHECK(r->rows[i].ok && cosine(r->values[i], all->values[i], 384) > 0.999999,
			  "row %d with max_batch 2", i);
	fragment_result_destroy(&r);

	/* 9 texts of 256 tokens: TEXT_MAX_BATCH_TOKENS splits them 8 + 1 */
	{
		const char *nine[9];

		for (int i = 0; i < 9; i++)
			nine[i] = longest;
		r = embed(mc, "minilm/model.onnx", nine, 9, 1, 16, &sqlstate, err, sizeof(err));
		CHECK(r != NULL && r->model_runs == 2 && r->rows[8].ok &&
			  cosine(r->values[8], all->values[6], 384) > 0.999999,
			  "9 long texts: %d model calls (%s)", r ? r->model_runs : -1, err);
		fragment_result_destroy(&r);
	}

	/* per-row errors: invalid UTF-8; a long text with truncation off */
	r = embed(mc, "minilm/model.onnx", bad, 3, 0, 16, &sqlstate, err, sizeof(err));
	CHECK(r != NULL, "bad rows: %s", err);
	if (r != NULL)
	{
		CHECK(r->rows[0].ok && r->n_values[0] == 384, "valid row among bad ones failed");
		CHECK(!r->rows[1].ok && strcmp(r->rows[1].sqlstate, PGINFER_SQLSTATE_BAD_TEXT) == 0,
			  "invalid UTF-8: ok=%d sqlstate %s", (int) r->rows[1].ok, r->rows[1].sqlstate);
		CHECK(!r->rows[2].ok && strcmp(r->rows[2].sqlstate, PGINFER_SQLSTATE_TOO_LARGE) == 0 &&
			  strstr(r->rows[2].message, "tokens is longer than the 256 tokens") != NULL &&
			  strstr(r->rows[2].hint, "infer.text_truncate") != NULL,
			  "long text, truncation off: %s: %s (%s)", r->rows[2].sqlstate,
			  r->rows[2].message, r->rows[2].hint);
		CHECK(r->rows[1].row_id == 101 && r->rows[2].row_id == 102, "row ids of failed rows");
	}
	fragment_result_destroy(&r);

	/* --max-text-bytes: a row one byte over fails alone (54000), at it is embedded */
	text_set_max_bytes(11);
	CHECK(text_get_max_bytes() == 11, "text limit %lld", (long long) text_get_max_bytes());
	{
		const char *two[2] = {"hello world!", "hello world"};

		r = embed(mc, "minilm/model.onnx", two, 2, 1, 16, &sqlstate, err, sizeof(err));
		CHECK(r != NULL && !r->rows[0].ok && r->rows[0].row_id == 100 &&
			  strcmp(r->rows[0].sqlstate, PGINFER_SQLSTATE_TOO_LARGE) == 0 &&
			  strcmp(r->rows[0].message, "text of 12 bytes is longer than the worker's limit of 11 bytes") == 0 &&
			  strstr(r->rows[0].hint, "--max-text-bytes") != NULL,
			  "12 bytes over a limit of 11: %s", r ? r->rows[0].message : err);
		CHECK(r != NULL && r->rows[1].ok &&
			  memcmp(r->values[1], one_hello, sizeof(one_hello)) == 0,
			  "11 bytes at a limit of 11: not the vector of \"hello world\" (%s)", err);
		fragment_result_destroy(&r);
	}
	text_set_max_bytes(0);
	CHECK(text_get_max_bytes() == PGINFER_DEFAULT_MAX_TEXT_BYTES, "default text limit %lld",
		  (long long) text_get_max_bytes());

	/* unloading (any spelling) drops the tokenizer too; the next request reloads both */
	CHECK(model_cache_get_aux(mc, "./minilm//model.onnx") != NULL, "no text data kept with the model");
	CHECK(model_cache_unload(mc, "./minilm//model.onnx") == 1, "unload failed");
	CHECK(model_cache_get_aux(mc, "minilm/model.onnx") == NULL, "text data outlived its model");
	r = embed(mc, "minilm/model.onnx", &texts[1], 1, 1, 16, &sqlstate, err, sizeof(err));
	CHECK(r != NULL && r->rows[0].ok && memcmp(r->values[0], one_hello, sizeof(one_hello)) == 0,
		  "after a reload \"hello world\" differs (%s)", err);
	fragment_result_destroy(&r);

	/* a model file without model.json beside it fails the request */
	{
		char		tmpl[] = "/tmp/test_text_XXXXXX";
		char	   *tdir = mkdtemp(tmpl);
		char		link[1100],
					target[2048];
		model_cache *mc2 = NULL;

		CHECK(tdir != NULL, "mkdtemp");
		if (tdir != NULL)
		{
			snprintf(link, sizeof(link), "%s/model.onnx", tdir);
			if (path[0] == '/')
				snprintf(target, sizeof(target), "%s", path);
			else
			{
				char		cwd[512];

				snprintf(target, sizeof(target), "%s/%s",
						 getcwd(cwd, sizeof(cwd)) ? cwd : ".", path);
			}
			/* a copy, not a link: a link out of the model directory is refused */
			{
				size_t		n = 0;
				uint8_t    *bytes = tu_read_file(target, &n);
				FILE	   *f = bytes ? fopen(link, "wb") : NULL;

				CHECK(f != NULL && fwrite(bytes, 1, n, f) == n, "copy to %s", link);
				if (f)
					fclose(f);
				free(bytes);
			}
			mc2 = model_cache_new(tdir, err, sizeof(err));
			r = mc2 ? embed(mc2, "model.onnx", texts, 1, 1, 16, &sqlstate, err,
							sizeof(err)) : NULL;
			CHECK(r == NULL && strcmp(sqlstate, PGINFER_SQLSTATE_NO_MODEL) == 0 &&
				  strstr(err, "model.json") != NULL,
				  "no model.json: %s %s", sqlstate, err);
			fragment_result_destroy(&r);
			model_cache_destroy(&mc2);
			unlink(link);
			rmdir(tdir);
		}
	}

done:
	fragment_result_destroy(&one);
	fragment_result_destroy(&all);
	fragment_result_destroy(&r);
	model_cache_destroy(&mc);
	free(longest);
}

/*
 * The classifiers' argmax: the first largest, and the first NaN wherever
 * it is, as numpy.argmax.
 */
static void
test_argmax(void)
{
	const float ties[] = {1, 3, 3, 2};
	const float nan_mid[] = {0, NAN, 5, 1};
	const float nan_last[] = {0, 5, NAN};
	const float all_nan[] = {NAN, NAN};
	const float one[] = {-1};

	CHECK(argmax(ties, 4) == 1, "argmax of {1,3,3,2} is the first 3, index 1");
	CHECK(argmax(nan_mid, 4) == 1, "argmax of {0,NaN,5,1} is the NaN's index 1 (numpy)");
	CHECK(argmax(nan_last, 3) == 2, "argmax of {0,5,NaN} is the NaN's index 2 (numpy)");
	CHECK(argmax(all_nan, 2) == 0, "argmax of {NaN,NaN} is 0");
	CHECK(argmax(one, 1) == 0, "argmax of one value is 0");
}

int
main(void)
{
	test_argmax();
	test_config();
	test_pool();
	test_model();
	return tu_report("test_text");
}
