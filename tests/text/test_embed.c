/*
 * test_embed.c
 *	  Compares the worker's sentence embeddings (fragment_run over
 *	  FRAG_EMBED_TEXT: worker/text.c's tokenizer -> engine -> mean pooling ->
 *	  L2 norm) with the reference of every text of tests/text/sentences.txt;
 *	  with --classify, the labels of a text classifier (FRAG_CLASSIFY_TEXT)
 *	  with the labels of the reference's largest scores.
 *
 *	  usage: test_embed [--classify LABELS] MODEL_DIR FILE REFERENCE
 *			 [ROWS_PER_REQUEST [MAX_BATCH]]
 *	  FILE is the model, relative to MODEL_DIR (minilm/model.onnx).
 *	  REFERENCE is written by tools/text_reference.py --sentences: one text a
 *	  line, "<UTF-8 hex>\t<n_tokens>\t<cut 0|1>\t<values>", the values from
 *	  the Hugging Face tokenizer + ONNX Runtime on the same model file, one
 *	  text at a time (for a classifier: its scores).  LABELS has the
 *	  classifier's labels, one a line, in the order of its scores.  The texts go to fragment_run in requests of
 *	  ROWS_PER_REQUEST rows (default 64) with model calls of at most
 *	  MAX_BATCH rows (default 16, the worker's default --max-batch), so rows
 *	  are padded among neighbours as the worker pads them.  Each text must
 *	  give the reference's token count and truncation flag, the same number
 *	  of values, and cosine >= 0.9999 with the reference.  Prints the
 *	  minimum cosine, the largest absolute difference of a value, and
 *	  "text_embed: N passed, M failed" (one count per text); exits non-zero
 *	  on any failure.  --classify: each text must get the reference's top
 *	  label, token count and truncation flag; prints how many distinct
 *	  labels were seen and the smallest gap between the reference's two
 *	  best scores, then "text_classify: N passed, M failed".
 *
 *	  Single-threaded.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/protocol.h"
#include "worker/fragment.h"
#include "worker/model_cache.h"
#include "tests/text/textutil.h"

#define MIN_COSINE 0.9999
#define MAX_DIMS 4096
#define MAX_LABELS 1024

/* One reference text. */
typedef struct ref_text
{
	char	   *text;			/* UTF-8 bytes, len of them (NUL after) */
	size_t		len;
	int			n_tokens;
	int			cut;
	int			n_values;
	float	   *values;
} ref_text;

/* --classify: the labels, and how often the worker gave each. */
static char *labels[MAX_LABELS];
static int	n_labels;
static int	label_seen[MAX_LABELS];

/*
 * Parses one reference line into *t (allocating text and values); -1 when
 * the line is malformed.
 */
static int
parse_line(const char *line, ref_text *t)
{
	const char *tab = strchr(line, '\t');
	const char *p;
	char	   *q;
	size_t		hlen;

	memset(t, 0, sizeof(*t));
	if (tab == NULL || (tab - line) % 2 != 0)
		return -1;
	hlen = (size_t) (tab - line);
	t->text = malloc(hlen / 2 + 1);
	t->values = malloc(MAX_DIMS * sizeof(float));
	if (t->text == NULL || t->values == NULL)
		return -1;
	for (size_t i = 0; i < hlen; i += 2)
	{
		int			hi = hexval(line[i]),
					lo = hexval(line[i + 1]);

		if (hi < 0 || lo < 0)
			return -1;
		t->text[i / 2] = (char) (hi * 16 + lo);
	}
	t->len = hlen / 2;
	t->text[t->len] = '\0';
	t->n_tokens = (int) strtol(tab + 1, &q, 10);
	if (*q != '\t')
		return -1;
	t->cut = (int) strtol(q + 1, &q, 10);
	if (*q != '\t')
		return -1;
	p = q + 1;
	while (*p != '\0' && *p != '\n')
	{
		float		v = strtof(p, &q);

		if (q == p || t->n_values == MAX_DIMS)
			return -1;
		t->values[t->n_values++] = v;
		p = q;
		while (*p == ' ')
			p++;
	}
	return t->n_values > 0 ? 0 : -1;
}

/* Reads every line of path into *out (*n of them); -1 with a message. */
static int
read_reference(const char *path, ref_text **out, int *n)
{
	FILE	   *f = fopen(path, "r");
	char	   *line = NULL;
	size_t		cap = 0;
	int			alloc = 0;

	*out = NULL;
	*n = 0;
	if (f == NULL)
	{
		printf("FAIL cannot open %s (run tools/text_reference.py --sentences)\n", path);
		return -1;
	}
	while (getline(&line, &cap, f) > 0)
	{
		if (*n == alloc)
		{
			ref_text   *grown;

			alloc = alloc > 0 ? alloc * 2 : 256;
			grown = realloc(*out, (size_t) alloc * sizeof(**out));
			if (grown == NULL)
				break;
			*out = grown;
		}
		if (parse_line(line, &(*out)[*n]) != 0)
		{
			printf("FAIL %s:%d: malformed line\n", path, *n + 1);
			free((*out)[*n].text);
			free((*out)[*n].values);
			free(line);
			fclose(f);
			return -1;
		}
		(*n)++;
	}
	free(line);
	fclose(f);
	return *n > 0 ? 0 : -1;
}

/* Reads --classify's labels file, one label a line; -1 when unreadable. */
static int
read_labels(const char *path)
{
	FILE	   *f = fopen(path, "r");
	char		line[1024];

	if (f == NULL)
		return -1;
	while (n_labels < MAX_LABELS && fgets(line, sizeof(line), f) != NULL)
	{
		line[strcspn(line, "\n")] = '\0';
		labels[n_labels++] = strdup(line);
	}
	fclose(f);
	return n_labels > 0 ? 0 : -1;
}

/*
 * Compares the labels of r (texts refs[first..first+n)) with the labels of
 * the references' largest scores; *min_gap gets the smallest gap between
 * a reference's two best scores.
 */
static void
compare_labels(const fragment_result *r, const ref_text *refs, int first, int n,
			   double *min_gap)
{
	for (int i = 0; i < n; i++)
	{
		const ref_text *t = &refs[first + i];
		const Pginfer__RowResult *row = &r->rows[i];
		int			best = 0,
					second = -1;

		for (int k = 1; k < t->n_values; k++)
		{
			if (t->values[k] > t->values[best])
			{
				second = best;
				best = k;
			}
			else if (second < 0 || t->values[k] > t->values[second])
				second = k;
		}
		if (second >= 0 && t->values[best] - t->values[second] < *min_gap)
			*min_gap = t->values[best] - t->values[second];
		if (t->n_values > n_labels)
		{
			CHECK(0, "text %d: %d scores but %d labels", first + i + 1, t->n_values, n_labels);
			continue;
		}
		CHECK(row->ok && strcmp(row->text, labels[best]) == 0 &&
			  (int) row->n_tokens == t->n_tokens && (int) row->truncated == t->cut,
			  "text %d: ok=%d label \"%s\" (%u tokens, cut %d), expected \"%s\" "
			  "(%d tokens, cut %d) %s", first + i + 1, (int) row->ok, row->text,
			  row->n_tokens, (int) row->truncated, labels[best], t->n_tokens, t->cut,
			  row->message);
		for (int k = 0; row->ok && k < n_labels; k++)
			if (strcmp(row->text, labels[k]) == 0)
				label_seen[k]++;
	}
}

/*
 * --classify: a registration with fewer labels than the model has scores
 * fails the whole request with 22023, naming both counts.
 */
static void
test_too_few_labels(model_cache *mc, const char *file, const ref_text *t)
{
	Pginfer__ModelSpec spec = PGINFER__MODEL_SPEC__INIT;
	Pginfer__ModelSpec *specs[1] = {&spec};
	Pginfer__Fragment frag = PGINFER__FRAGMENT__INIT;
	Pginfer__RunFragment run = PGINFER__RUN_FRAGMENT__INIT;
	uint64_t	id = 1;
	const void *row = t->text;
	size_t		len = t->len;
	fragment_result *r = NULL;
	const char *sqlstate = "";
	char		err[512] = "";
	int			rc;

	spec.name = "classifier";
	spec.file = (char *) file;
	spec.task = "classify_text";
	spec.n_labels = 3;
	spec.labels = labels;
	frag.kind = PGINFER__FRAGMENT_KIND__FRAG_CLASSIFY_TEXT;
	frag.n_models = 1;
	frag.models = specs;
	frag.truncate_text = 1;
	run.fragment = &frag;
	run.n_row_ids = 1;
	run.row_ids = &id;
	rc = fragment_run(mc, &run, &row, &len, 1, 0, 16, NULL, &r, &sqlstate, err,
					  sizeof(err));
	CHECK(rc != 0 && strcmp(sqlstate, "22023") == 0 && strstr(err, "but has 3 labels") != NULL,
		  "3 labels for %d scores: rc %d, %s %s", n_labels, rc, sqlstate, err);
	fragment_result_destroy(&r);
}

/* Seconds since an arbitrary point, monotonic. */
static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/*
 * Compares the rows of r (texts refs[0..n)) with their references, updating
 * the figures.
 */
static void
compare(const fragment_result *r, const ref_text *refs, int first, int n,
		double *min_cos, int *min_at, double *max_diff)
{
	for (int i = 0; i < n; i++)
	{
		const ref_text *t = &refs[first + i];
		const Pginfer__RowResult *row = &r->rows[i];
		double		dot = 0,
					aa = 0,
					bb = 0,
					cos;

		if (!row->ok || r->n_values[i] != (size_t) t->n_values ||
			(int) row->n_tokens != t->n_tokens || (int) row->truncated != t->cut)
		{
			CHECK(0, "text %d: ok=%d, %zu values, %u tokens, cut %d; expected %d values, "
				  "%d tokens, cut %d (%s)", first + i + 1, (int) row->ok, r->n_values[i],
				  row->n_tokens, (int) row->truncated, t->n_values, t->n_tokens, t->cut,
				  row->message);
			continue;
		}
		for (int d = 0; d < t->n_values; d++)
		{
			double		a = r->values[i][d],
						b = t->values[d];

			dot += a * b;
			aa += a * a;
			bb += b * b;
			if (fabs(a - b) > *max_diff)
				*max_diff = fabs(a - b);
		}
		cos = dot / sqrt(aa * bb);
		if (cos < *min_cos)
		{
			*min_cos = cos;
			*min_at = first + i + 1;
		}
		CHECK(cos >= MIN_COSINE, "text %d (%d tokens): cosine %.7f < %.4f",
			  first + i + 1, t->n_tokens, cos, MIN_COSINE);
	}
}

int
main(int argc, char **argv)
{
	ref_text   *refs = NULL;
	int			n_refs = 0;
	int			classify = argc > 2 && strcmp(argv[1], "--classify") == 0;
	const char *name = classify ? "text_classify" : "text_embed";
	int			per_request,
				max_batch;
	char		err[1024] = "";
	const char *sqlstate = "";
	model_cache *mc = NULL;
	double		min_cos = 2,
				max_diff = 0,
				min_gap = 1e30,
				t0;
	int			min_at = 0,
				model_runs = 0,
				distinct = 0;

	if (classify)
	{
		if (read_labels(argv[2]) != 0)
		{
			printf("FAIL cannot read labels from %s\n%s: 0 passed, 1 failed\n", argv[2], name);
			return 1;
		}
		argc -= 2;
		argv += 2;
	}
	per_request = argc > 4 ? atoi(argv[4]) : 64;
	max_batch = argc > 5 ? atoi(argv[5]) : 16;
	if (argc < 4 || per_request < 1 || max_batch < 1)
	{
		fprintf(stderr, "usage: test_embed [--classify LABELS] MODEL_DIR FILE REFERENCE "
				"[ROWS_PER_REQUEST [MAX_BATCH]]\n");
		return 2;
	}
	if (read_reference(argv[3], &refs, &n_refs) != 0)
	{
		printf("%s: 0 passed, 1 failed\n", name);
		return 1;
	}
	mc = model_cache_new(argv[1], err, sizeof(err));
	if (mc == NULL)
	{
		printf("FAIL model cache on %s: %s\n%s: 0 passed, 1 failed\n", argv[1], err, name);
		return 1;
	}

	if (classify && n_labels > 3)
		test_too_few_labels(mc, argv[2], &refs[n_refs - 1]);
	t0 = now_s();
	for (int first = 0; first < n_refs; first += per_request)
	{
		int			n = n_refs - first < per_request ? n_refs - first : per_request;
		Pginfer__ModelSpec spec = PGINFER__MODEL_SPEC__INIT;
		Pginfer__ModelSpec *specs[1] = {&spec};
		Pginfer__Fragment frag = PGINFER__FRAGMENT__INIT;
		Pginfer__RunFragment run = PGINFER__RUN_FRAGMENT__INIT;
		uint64_t   *ids = calloc((size_t) n, sizeof(uint64_t));
		const void **rows = calloc((size_t) n, sizeof(void *));
		size_t	   *lens = calloc((size_t) n, sizeof(size_t));
		fragment_result *r = NULL;

		if (ids == NULL || rows == NULL || lens == NULL)
		{
			CHECK(0, "out of memory");
			free(ids);
			free(rows);
			free(lens);
			break;
		}
		spec.name = classify ? "classifier" : "embedder";
		spec.file = argv[2];
		spec.task = classify ? "classify_text" : "embed_text";
		spec.n_labels = classify ? (size_t) n_labels : 0;
		spec.labels = classify ? labels : NULL;
		frag.kind = classify ? PGINFER__FRAGMENT_KIND__FRAG_CLASSIFY_TEXT :
			PGINFER__FRAGMENT_KIND__FRAG_EMBED_TEXT;
		frag.n_models = 1;
		frag.models = specs;
		frag.truncate_text = 1;
		for (int i = 0; i < n; i++)
		{
			ids[i] = (uint64_t) (first + i);
			rows[i] = refs[first + i].text;
			lens[i] = refs[first + i].len;
		}
		run.fragment = &frag;
		run.n_row_ids = (size_t) n;
		run.row_ids = ids;
		if (fragment_run(mc, &run, rows, lens, n, 0, max_batch, NULL, &r,
						 &sqlstate, err, sizeof(err)) != 0)
			CHECK(0, "texts %d..%d: request failed: %s %s", first + 1, first + n,
				  sqlstate, err);
		else
		{
			if (classify)
				compare_labels(r, refs, first, n, &min_gap);
			else
				compare(r, refs, first, n, &min_cos, &min_at, &max_diff);
			model_runs += r->model_runs;
		}
		fragment_result_destroy(&r);
		free(ids);
		free(rows);
		free(lens);
	}
	if (classify)
	{
		for (int k = 0; k < n_labels; k++)
			distinct += label_seen[k] > 0;
		printf("%s: %d texts in %.1f s (%d model calls, requests of %d rows, batches of at "
			   "most %d): %d of %d labels given; smallest gap between the reference's two "
			   "best scores %.2e\n", name, n_refs, now_s() - t0, model_runs, per_request,
			   max_batch, distinct, n_labels, min_gap);
		/* a real test set spreads over several labels */
		CHECK(distinct >= 5, "only %d distinct labels over %d texts", distinct, n_refs);
	}
	else
		printf("%s: %d texts in %.1f s (%d model calls, requests of %d rows, batches of at "
			   "most %d): min cosine %.9f (1 - %.1e, text %d), max |diff| %.2e\n",
			   name, n_refs, now_s() - t0, model_runs, per_request, max_batch, min_cos,
			   1 - min_cos, min_at, max_diff);
	printf("%s: %d passed, %d failed\n", name, passed, failed);

	model_cache_destroy(&mc);
	for (int i = 0; i < n_refs; i++)
	{
		free(refs[i].text);
		free(refs[i].values);
	}
	free(refs);
	for (int k = 0; k < n_labels; k++)
		free(labels[k]);
	return failed == 0 && passed >= n_refs ? 0 : 1;
}
