/*
 * text.c
 *	  The text fragments (FRAG_EMBED_TEXT, FRAG_CLASSIFY_TEXT); see text.h.
 *
 * text_run() resolves the model and what lives beside it (text_model,
 * kept in the model_cache), tokenizes every row (a row that fails gets its
 * error and stays out of every batch), sorts the rows by token count and
 * runs them in padded batches (a model without attention_mask: in batches
 * of rows of equal length, unpadded); each row's vector is pooled from its own
 * tokens only (a classifier's scores come from its own row of the
 * output), so padding changes nothing but the arithmetic of the model's
 * operators on the batch.
 *
 * Threading: one call at a time per model_cache.
 */
#include "worker/text.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/protocol.h"
#include "worker/argmax.h"
#include "worker/engine/gemm_direct.h"
#include "worker/log.h"
#include "worker/model_calls.h"
#include "worker/model_store.h"
#include "worker/tokenizer.h"

/* What a text model needs beyond its ONNX file (kept with the model). */
typedef struct text_model
{
	text_config cfg;
	tokenizer  *tok;
	int			in_ids;			/* input index of input_ids */
	int			in_mask;		/* of attention_mask, or -1 */
	int			in_type;		/* of token_type_ids, or -1 */
	int			out;			/* output index of the token embeddings */
	int			out_logits;		/* output index of a classifier's scores */
} text_model;

/* One row's tokens, while the rows wait for their batch. */
typedef struct text_row
{
	int			index;			/* row in the request */
	int			n;				/* ids */
	int64_t    *ids;
} text_row;

/* Most bytes of one text row; see text_set_max_bytes. */
static int64_t text_max_bytes = PGINFER_DEFAULT_MAX_TEXT_BYTES;

/* ---- model.json ---- */

/* A cursor over JSON text. */
typedef struct json_scan
{
	const char *p;
	const char *end;
} json_scan;

/* Skips white space. */
static void
js_ws(json_scan *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' ||
							 *s->p == '\r'))
		s->p++;
}

/*
 * Reads a JSON string at the cursor into out (outlen bytes, truncated,
 * escapes decoded; \u escapes outside ASCII become '?').  0, or -1 when
 * the cursor holds no complete string.
 */
static int
js_string(json_scan *s, char *out, size_t outlen)
{
	size_t		o = 0;

	js_ws(s);
	if (s->p >= s->end || *s->p != '"')
		return -1;
	s->p++;
	while (s->p < s->end && *s->p != '"')
	{
		char		c = *s->p++;

		if (c == '\\')
		{
			if (s->p >= s->end)
				return -1;
			c = *s->p++;
			switch (c)
			{
				case 'n':
					c = '\n';
					break;
				case 't':
					c = '\t';
					break;
				case 'r':
					c = '\r';
					break;
				case 'b':
					c = '\b';
					break;
				case 'f':
					c = '\f';
					break;
				case 'u':
					{
						unsigned	v = 0;

						if (s->end - s->p < 4)
							return -1;
						for (int k = 0; k < 4; k++)
						{
							char		h = *s->p++;

							v <<= 4;
							if (h >= '0' && h <= '9')
								v |= (unsigned) (h - '0');
							else if (h >= 'a' && h <= 'f')
								v |= (unsigned) (h - 'a' + 10);
							else if (h >= 'A' && h <= 'F')
								v |= (unsigned) (h - 'A' + 10);
							else
								return -1;
						}
						c = v > 0 && v < 0x80 ? (char) v : '?';
						break;
					}
				default:
					break;		/* \" \\ \/ stand for themselves */
			}
		}
		if (o + 1 < outlen)
			out[o++] = c;
	}
	if (s->p >= s->end)
		return -1;
	s->p++;
	if (outlen > 0)
		out[o] = '\0';
	return 0;
}

/* Skips one JSON value of any kind (nesting counted); -1 when malformed. */
static int
js_skip(json_scan *s)
{
	int			depth = 0;

	js_ws(s);
	do
	{
		char		tmp[2];

		js_ws(s);
		if (s->p >= s->end)
			return -1;
		if (*s->p == '"')
		{
			if (js_string(s, tmp, sizeof(tmp)) != 0)
				return -1;
		}
		else if (*s->p == '{' || *s->p == '[')
		{
			depth++;
			s->p++;
		}
		else if (*s->p == '}' || *s->p == ']')
		{
			if (depth == 0)
				return -1;
			depth--;
			s->p++;
		}
		else if (*s->p == ',' || *s->p == ':')
		{
			if (depth == 0)
				return -1;
			s->p++;
		}
		else
		{
			const char *start = s->p;

			/* a number, true, false or null */
			while (s->p < s->end && strchr(",:]} \t\r\n", *s->p) == NULL)
				s->p++;
			if (s->p == start)
				return -1;
		}
	} while (depth > 0);
	return 0;
}

/* Reads true or false; -1 on anything else. */
static int
js_bool(json_scan *s, int *out)
{
	js_ws(s);
	if (s->end - s->p >= 4 && strncmp(s->p, "true", 4) == 0)
	{
		s->p += 4;
		*out = 1;
		return 0;
	}
	if (s->end - s->p >= 5 && strncmp(s->p, "false", 5) == 0)
	{
		s->p += 5;
		*out = 0;
		return 0;
	}
	return -1;
}

/* Reads an integer (no fraction, no exponent); -1 on anything else. */
static int
js_int(json_scan *s, long *out)
{
	char		buf[32];
	size_t		n = 0;
	char	   *endp;

	js_ws(s);
	while (s->p < s->end && n + 1 < sizeof(buf) &&
		   ((*s->p >= '0' && *s->p <= '9') || (n == 0 && *s->p == '-')))
		buf[n++] = *s->p++;
	buf[n] = '\0';
	if (n == 0 || (s->p < s->end && strchr(".eE", *s->p) != NULL))
		return -1;
	errno = 0;
	*out = strtol(buf, &endp, 10);
	return errno == 0 && *endp == '\0' ? 0 : -1;
}

/* Parses model.json; see text.h. */
int
text_config_parse(const char *json, size_t len, text_config *cfg,
				  char *err, size_t errlen)
{
	json_scan	s = {json, json + len};
	bool		have_len = false;

	memset(cfg, 0, sizeof(*cfg));
	cfg->lowercase = 1;
	cfg->pooling = TEXT_POOL_MEAN;
	cfg->normalize = 0;
	snprintf(cfg->vocab, sizeof(cfg->vocab), "vocab.txt");

	js_ws(&s);
	if (s.p >= s.end || *s.p != '{')
	{
		snprintf(err, errlen, "not a JSON object");
		return -1;
	}
	s.p++;
	js_ws(&s);
	if (s.p < s.end && *s.p == '}')
		s.p++;
	else
	{
		for (;;)
		{
			char		key[64];
			char		val[256];
			int			rc = 0;

			if (js_string(&s, key, sizeof(key)) != 0)
			{
				snprintf(err, errlen, "malformed JSON: a key was expected at byte %zu",
						 (size_t) (s.p - json));
				return -1;
			}
			js_ws(&s);
			if (s.p >= s.end || *s.p != ':')
			{
				snprintf(err, errlen, "malformed JSON: ':' was expected after \"%s\"", key);
				return -1;
			}
			s.p++;
			if (strcmp(key, "max_seq_length") == 0)
			{
				long		v = 0;

				rc = js_int(&s, &v);
				if (rc == 0 && (v < 3 || v > TEXT_MAX_SEQ_LENGTH))
				{
					snprintf(err, errlen, "max_seq_length %ld is outside 3 .. %d",
							 v, TEXT_MAX_SEQ_LENGTH);
					return -1;
				}
				cfg->max_seq_length = (int) v;
				have_len = rc == 0;
			}
			else if (strcmp(key, "do_lower_case") == 0)
				rc = js_bool(&s, &cfg->lowercase);
			else if (strcmp(key, "normalize") == 0)
				rc = js_bool(&s, &cfg->normalize);
			else if (strcmp(key, "pooling") == 0)
			{
				rc = js_string(&s, val, sizeof(val));
				if (rc == 0 && strcmp(val, "mean") == 0)
					cfg->pooling = TEXT_POOL_MEAN;
				else if (rc == 0 && strcmp(val, "cls") == 0)
					cfg->pooling = TEXT_POOL_CLS;
				else if (rc == 0)
				{
					snprintf(err, errlen, "pooling \"%s\" is not supported (use \"mean\" or \"cls\")",
							 val);
					return -1;
				}
			}
			else if (strcmp(key, "vocab") == 0)
			{
				rc = js_string(&s, cfg->vocab, sizeof(cfg->vocab));
				if (rc == 0 && cfg->vocab[0] == '\0')
					rc = -1;
			}
			else
				rc = js_skip(&s);
			if (rc != 0)
			{
				snprintf(err, errlen, "\"%s\" has a value of the wrong type or malformed JSON",
						 key);
				return -1;
			}
			js_ws(&s);
			if (s.p < s.end && *s.p == ',')
			{
				s.p++;
				continue;
			}
			if (s.p < s.end && *s.p == '}')
			{
				s.p++;
				break;
			}
			snprintf(err, errlen, "malformed JSON: ',' or '}' was expected at byte %zu",
					 (size_t) (s.p - json));
			return -1;
		}
	}
	js_ws(&s);
	if (s.p != s.end)
	{
		snprintf(err, errlen, "malformed JSON: text after the object at byte %zu",
				 (size_t) (s.p - json));
		return -1;
	}
	if (!have_len)
	{
		snprintf(err, errlen, "max_seq_length is missing");
		return -1;
	}
	return 0;
}

/* ---- pooling ---- */

/* Pools hidden[seq][dim] with mask[seq] into out[dim]; see text.h. */
void
text_pool(const float *hidden, const int64_t *mask, int seq, int dim,
		  text_pooling pooling, float *out)
{
	double		count = 0;

	if (pooling == TEXT_POOL_CLS || seq < 1)
	{
		for (int d = 0; d < dim; d++)
			out[d] = seq >= 1 ? hidden[d] : 0.0f;
		return;
	}
	for (int d = 0; d < dim; d++)
	{
		double		sum = 0;

		for (int t = 0; t < seq; t++)
			if (mask[t] != 0)
				sum += hidden[(size_t) t * dim + d];
		out[d] = (float) sum;
	}
	for (int t = 0; t < seq; t++)
		count += mask[t] != 0 ? 1 : 0;
	/* sentence-transformers clamps the count at 1e-9 */
	if (count < 1e-9)
		count = 1e-9;
	for (int d = 0; d < dim; d++)
		out[d] = (float) (out[d] / count);
}

/* Divides v by max(||v||, 1e-12); see text.h. */
void
text_normalize(float *v, int dim)
{
	double		ss = 0,
				norm;

	for (int d = 0; d < dim; d++)
		ss += (double) v[d] * v[d];
	norm = sqrt(ss);
	if (norm < 1e-12)
		norm = 1e-12;
	for (int d = 0; d < dim; d++)
		v[d] = (float) (v[d] / norm);
}

/* ---- the text model beside the ONNX file ---- */

/* Frees a text_model (model_cache aux_free). */
static void
text_model_free(void *p)
{
	text_model *tm = p;

	if (tm == NULL)
		return;
	tokenizer_destroy(&tm->tok);
	free(tm);
}

/*
 * "dir/folder-of-file/name" into a new string: name beside the model file
 * (file is relative and already checked by the model cache).  NULL when
 * memory runs out.
 */
static char *
beside(const char *dir, const char *file, const char *name)
{
	const char *slash = strrchr(file, '/');
	int			flen = slash != NULL ? (int) (slash - file) : 0;
	size_t		n = strlen(dir) + (size_t) flen + strlen(name) + 3;
	char	   *s = malloc(n);

	if (s == NULL)
		return NULL;
	if (flen > 0)
		snprintf(s, n, "%s/%.*s/%s", dir, flen, file, name);
	else
		snprintf(s, n, "%s/%s", dir, name);
	return s;
}

/* Reads the model.json beside spec->file into *cfg; -1 with sqlstate/err. */
static int
read_config(model_cache *mc, const Pginfer__ModelSpec *spec, text_config *cfg,
			const char **sqlstate, char *err, size_t errlen)
{
	char	   *path = beside(model_cache_dir(mc), spec->file, "model.json");
	char	   *buf = NULL;
	FILE	   *f = NULL;
	struct stat st;
	size_t		got;
	char		perr[256];
	int			rc = -1;

	*sqlstate = PGINFER_SQLSTATE_OUT_OF_MEMORY;
	if (path == NULL)
	{
		snprintf(err, errlen, "out of memory");
		goto done;
	}
	*sqlstate = PGINFER_SQLSTATE_BAD_PARAM;
	if (model_store_check_inside(model_cache_dir(mc), path, "model.json",
								 spec->file, err, errlen) != 0)
		goto done;
	*sqlstate = PGINFER_SQLSTATE_NO_MODEL;
	if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
	{
		snprintf(err, errlen, "text model \"%s\" has no model.json beside it (%s); a text model is a folder in the model directory (model.onnx, vocab.txt, model.json), copied there whole: infer.upload_model carries a model.onnx alone",
				 spec->file, path);
		goto done;
	}
	*sqlstate = PGINFER_SQLSTATE_BAD_PARAM;
	if (st.st_size > TEXT_MAX_CONFIG_BYTES)
	{
		snprintf(err, errlen, "model.json of text model \"%s\" has %lld bytes, more than %d",
				 spec->file, (long long) st.st_size, TEXT_MAX_CONFIG_BYTES);
		goto done;
	}
	buf = malloc((size_t) st.st_size + 1);
	f = fopen(path, "rb");
	if (buf == NULL || f == NULL)
	{
		*sqlstate = buf == NULL ? PGINFER_SQLSTATE_OUT_OF_MEMORY : PGINFER_SQLSTATE_NO_MODEL;
		snprintf(err, errlen, "could not read model.json of text model \"%s\": %s",
				 spec->file, buf == NULL ? "out of memory" : strerror(errno));
		goto done;
	}
	got = fread(buf, 1, (size_t) st.st_size, f);
	if (text_config_parse(buf, got, cfg, perr, sizeof(perr)) != 0)
	{
		snprintf(err, errlen, "model.json of text model \"%s\": %s", spec->file, perr);
		goto done;
	}
	rc = 0;

done:
	if (f != NULL)
		fclose(f);
	free(buf);
	free(path);
	return rc;
}

/*
 * Finds the model's inputs and output by name and checks their kinds
 * (int64 inputs of rank 2, a float output); -1 with err.
 */
static int
bind_io(const ie_model *model, const char *file, text_model *tm,
		char *err, size_t errlen)
{
	tm->in_ids = tm->in_mask = tm->in_type = -1;
	tm->out = tm->out_logits = 0;
	for (int i = 0; i < ie_model_n_inputs(model); i++)
	{
		const char *name = ie_model_input_name(model, i);
		int64_t		dims[IE_MAX_DIMS];
		ie_dtype	dtype = IE_UNDEFINED;
		int			rank = ie_model_input_shape(model, i, &dtype, dims);

		if (strcmp(name, "input_ids") == 0)
			tm->in_ids = i;
		else if (strcmp(name, "attention_mask") == 0)
			tm->in_mask = i;
		else if (strcmp(name, "token_type_ids") == 0)
			tm->in_type = i;
		else
		{
			snprintf(err, errlen, "text model \"%s\" has an input \"%s\"; a text model takes "
					 "input_ids, attention_mask and token_type_ids", file, name);
			return -1;
		}
		if (dtype != IE_INT64 || rank != 2)
		{
			snprintf(err, errlen, "input \"%s\" of text model \"%s\" is not an int64 "
					 "[batch, sequence] tensor", name, file);
			return -1;
		}
	}
	if (tm->in_ids < 0)
	{
		snprintf(err, errlen, "text model \"%s\" has no input named input_ids", file);
		return -1;
	}
	for (int j = 0; j < ie_model_n_outputs(model); j++)
	{
		const char *name = ie_model_output_name(model, j);

		if (strcmp(name, "last_hidden_state") == 0 ||
			strcmp(name, "token_embeddings") == 0)
			tm->out = j;
		else if (strcmp(name, "logits") == 0)
			tm->out_logits = j;
	}
	if (ie_model_n_outputs(model) < 1)
	{
		snprintf(err, errlen, "text model \"%s\" has no outputs", file);
		return -1;
	}
	return 0;
}

/*
 * The loaded model of spec and its text_model, loading and attaching
 * the latter on first use.  -1 with sqlstate/err.
 */
static int
get_text_model(model_cache *mc, const Pginfer__ModelSpec *spec,
			   const ie_model **model, text_model **tmp,
			   const char **sqlstate, char *err, size_t errlen)
{
	text_model *tm;
	char	   *vocab = NULL;
	char		lerr[512];

	*model = model_cache_get(mc, spec, sqlstate, err, errlen);
	if (*model == NULL)
		return -1;
	tm = model_cache_get_aux(mc, spec->file);
	if (tm != NULL)
	{
		*tmp = tm;
		return 0;
	}
	tm = calloc(1, sizeof(*tm));
	if (tm == NULL)
	{
		*sqlstate = PGINFER_SQLSTATE_OUT_OF_MEMORY;
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (read_config(mc, spec, &tm->cfg, sqlstate, err, errlen) != 0)
		goto fail;
	*sqlstate = PGINFER_SQLSTATE_BAD_PARAM;
	if (model_path_check(tm->cfg.vocab, lerr, sizeof(lerr)) != 0)
	{
		snprintf(err, errlen, "vocab of text model \"%s\": %s", spec->file, lerr);
		goto fail;
	}
	if (bind_io(*model, spec->file, tm, err, errlen) != 0)
		goto fail;
	vocab = beside(model_cache_dir(mc), spec->file, tm->cfg.vocab);
	if (vocab == NULL)
	{
		*sqlstate = PGINFER_SQLSTATE_OUT_OF_MEMORY;
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	if (model_store_check_inside(model_cache_dir(mc), vocab, "vocabulary",
								 spec->file, err, errlen) != 0)
		goto fail;				/* *sqlstate is _BAD_PARAM */
	tm->tok = tokenizer_load(vocab, tm->cfg.lowercase != 0, lerr, sizeof(lerr));
	if (tm->tok == NULL)
	{
		*sqlstate = PGINFER_SQLSTATE_NO_MODEL;
		snprintf(err, errlen, "could not load the vocabulary of text model \"%s\": %s",
				 spec->file, lerr);
		goto fail;
	}
	if (model_cache_set_aux(mc, spec->file, tm, text_model_free) != 0)
	{
		*sqlstate = PGINFER_SQLSTATE_INTERNAL;
		snprintf(err, errlen, "text model \"%s\" is not in the model cache", spec->file);
		goto fail;
	}
	log_info("text model \"%s\": vocabulary %s, max_seq_length %d, %s pooling%s",
			 spec->file, tm->cfg.vocab, tm->cfg.max_seq_length,
			 tm->cfg.pooling == TEXT_POOL_MEAN ? "mean" : "cls",
			 tm->cfg.normalize ? ", normalized" : "");
	free(vocab);
	*tmp = tm;
	return 0;

fail:
	free(vocab);
	text_model_free(tm);
	return -1;
}

/* ---- rows ---- */

/*
 * Tokenizes row i (text of len bytes) into *tr; a row that cannot be
 * embedded gets its error in r and tr->ids stays NULL.  -1 only when
 * memory runs out.
 */
static int
tokenize_row(const text_model *tm, const Pginfer__ModelSpec *spec,
			 int truncate, int classify, const char *text, size_t len,
			 fragment_result *r, int i, text_row *tr)
{
	int			max = tm->cfg.max_seq_length;
	bool		truncated = false;
	char		terr[256] = "";
	int			n;

	tr->index = i;
	tr->ids = malloc((size_t) max * sizeof(int64_t));
	if (tr->ids == NULL)
		return -1;
	n = tokenizer_encode(tm->tok, text, len, max, tr->ids, &truncated,
						 terr, sizeof(terr));
	if (n < 0)
	{
		fragment_row_error(r, i, PGINFER_SQLSTATE_BAD_TEXT,
						   "text is not valid UTF-8", terr,
						   "Send text in UTF-8 (the extension converts from the database encoding).");
		goto reject;
	}
	if (truncated && !truncate)
	{
		char		msg[256];
		int64_t    *all = NULL;
		int			full = -1;

		/* Every token takes at least one byte: len + 2 ids hold them all. */
		if (len < ((size_t) 1 << 24))
			all = malloc((len + 2) * sizeof(int64_t));
		if (all != NULL)
			full = tokenizer_encode(tm->tok, text, len, (int) len + 2, all, &truncated,
									terr, sizeof(terr));
		free(all);
		if (full > max)
			snprintf(msg, sizeof(msg), "text of %d tokens is longer than the %d tokens "
					 "model \"%s\" takes", full, max, spec->name[0] ? spec->name : spec->file);
		else
			snprintf(msg, sizeof(msg), "text is longer than the %d tokens model \"%s\" takes",
					 max, spec->name[0] ? spec->name : spec->file);
		fragment_row_error(r, i, PGINFER_SQLSTATE_TOO_LARGE, msg, NULL,
						   classify ?
						   "Set infer.text_truncate to on to classify the text's first tokens, "
						   "or split the text." :
						   "Set infer.text_truncate to on to embed the text's first tokens, "
						   "or split the text.");
		goto reject;
	}
	tr->n = n;
	r->rows[i].truncated = truncated ? 1 : 0;
	r->rows[i].n_tokens = (uint32_t) n;
	return 0;

reject:
	free(tr->ids);
	tr->ids = NULL;
	return 0;
}

/* Sets the text row limit; see text.h. */
void
text_set_max_bytes(int64_t max_bytes)
{
	text_max_bytes = max_bytes > 0 ? max_bytes : PGINFER_DEFAULT_MAX_TEXT_BYTES;
}

/* The text row limit in force; see text.h. */
int64_t
text_get_max_bytes(void)
{
	return text_max_bytes;
}

/*
 * Whether row i's text of len bytes is within text_max_bytes; if not, the
 * row gets its 54000 error in r (naming the model and the limit), before
 * anything is allocated for it.
 */
static bool
row_within_limit(const Pginfer__ModelSpec *spec, size_t len, fragment_result *r,
				 int i)
{
	char		msg[256];
	char		detail[256];

	if ((uint64_t) len <= (uint64_t) text_max_bytes)
		return true;
	snprintf(msg, sizeof(msg), "text of %zu bytes is longer than the worker's limit of %lld bytes",
			 len, (long long) text_max_bytes);
	snprintf(detail, sizeof(detail), "The text was for model \"%s\"; it was not tokenized.",
			 spec->name[0] ? spec->name : spec->file);
	fragment_row_error(r, i, PGINFER_SQLSTATE_TOO_LARGE, msg, detail,
					   "Split the text, or raise the worker's --max-text-bytes.");
	return false;
}

/* qsort order of text_rows: by token count, then by row. */
static int
cmp_rows(const void *a, const void *b)
{
	const text_row *x = a,
			   *y = b;

	if (x->n != y->n)
		return x->n < y->n ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

/* A classifier's labels (model_cache_get_labels), in score order. */
typedef struct text_labels
{
	const char *const *v;
	size_t		n;
} text_labels;

/*
 * Stores a classifier's answer for the rows of a batch: out is its scores
 * [n, k]; row k gets labels->v[argmax of its scores] as text.  -1 with
 * sqlstate/err when the output is not [n, k] float or the labels are not
 * one per score.
 */
static int
store_labels(const ie_tensor *out, const Pginfer__ModelSpec *spec,
			 const text_labels *labels, const char *out_name,
			 const text_row *rows, int n, fragment_result *r,
			 const char **sqlstate, char *err, size_t errlen)
{
	size_t		k;

	*sqlstate = PGINFER_SQLSTATE_BAD_PARAM;
	if (out == NULL || out->dtype != IE_FLOAT || out->ndim != 2 || out->dims[0] != n ||
		out->dims[1] < 1)
	{
		snprintf(err, errlen, "output \"%s\" of text classifier \"%s\" is not a float "
				 "[batch, classes] tensor", out_name, spec->file);
		return -1;
	}
	k = (size_t) out->dims[1];
	if (k != labels->n)
	{
		model_cache_labels_mismatch("text classifier", spec, k, labels->n,
									err, errlen);
		return -1;
	}
	for (int j = 0; j < n; j++)
	{
		Pginfer__RowResult *row = &r->rows[rows[j].index];
		const char *label = labels->v[argmax((const float *) out->data + (size_t) j * k, k)];
		char	   *s = strdup(label != NULL ? label : "");

		if (s == NULL)
		{
			*sqlstate = PGINFER_SQLSTATE_OUT_OF_MEMORY;
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		if (row->text != NULL && row->text != (char *) protobuf_c_empty_string)
			free(row->text);
		row->text = s;
		row->ok = 1;
	}
	return 0;
}

/*
 * Runs rows[0..n) (sorted, so rows[n-1] is the longest) as one batch and
 * stores each row's vector (a classifier, labels not NULL: its label) in
 * r, replacing what a run before stored there, with the model call's time
 * as one sample of n rows.  answer not NULL: the output the answers come
 * from (the token embeddings, or the classifier's scores) is handed to the
 * caller there, who owns it.  1 when the model run itself failed: sqlstate
 * from its kind (model_calls_sqlstate), err the engine's message past its
 * opening (ie_message_body); -1 with sqlstate/err on any other error.
 */
static int
run_batch(const ie_model *model, const text_model *tm,
		  const Pginfer__ModelSpec *spec, const text_labels *labels,
		  const text_row *rows, int n, fragment_result *r, ie_tensor **answer,
		  const char **sqlstate, char *err, size_t errlen)
{
	int			len = rows[n - 1].n;
	int64_t		dims[2] = {n, len};
	int			n_in = ie_model_n_inputs(model),
				n_out = ie_model_n_outputs(model);
	ie_tensor  *ids = ie_tensor_new(IE_INT64, 2, dims);
	ie_tensor  *mask = ie_tensor_new(IE_INT64, 2, dims);
	ie_tensor  *types = ie_tensor_new(IE_INT64, 2, dims);
	const ie_tensor **inputs = calloc((size_t) n_in, sizeof(*inputs));
	ie_tensor **outputs = calloc((size_t) n_out, sizeof(*outputs));
	const ie_tensor *out;
	char		lerr[512];
	double		t0;
	int			run;
	int			rc = -1;

	*sqlstate = PGINFER_SQLSTATE_OUT_OF_MEMORY;
	if (ids == NULL || mask == NULL || types == NULL)
	{
		/* over --max-tensor-bytes (54000), a row may be at fault: as a run */
		run = model_calls_tensor_failed(err, errlen, "a batch of %d texts of %d tokens",
										n, len);
		*sqlstate = model_calls_sqlstate((ie_error_kind) -run);
		rc = 1;
		goto done;
	}
	if (inputs == NULL || outputs == NULL)
	{
		snprintf(err, errlen, "out of memory for a batch of %d texts of %d tokens", n, len);
		goto done;
	}
	/* Padding: id 0 ([PAD] in BERT vocabularies), mask 0, type 0. */
	for (int k = 0; k < n; k++)
	{
		int64_t    *id_row = (int64_t *) ids->data + (size_t) k * len;
		int64_t    *mask_row = (int64_t *) mask->data + (size_t) k * len;

		memcpy(id_row, rows[k].ids, (size_t) rows[k].n * sizeof(int64_t));
		for (int t = 0; t < rows[k].n; t++)
			mask_row[t] = 1;
	}
	inputs[tm->in_ids] = ids;
	if (tm->in_mask >= 0)
		inputs[tm->in_mask] = mask;
	if (tm->in_type >= 0)
		inputs[tm->in_type] = types;

	r->model_runs++;
	t0 = model_calls_now_ms();
	if ((run = ie_model_run(model, inputs, outputs, lerr, sizeof(lerr))) == 0)
		fragment_result_add_sample(r, spec->file, n, model_calls_now_ms() - t0);
	else
	{
		*sqlstate = model_calls_sqlstate((ie_error_kind) -run);
		snprintf(err, errlen, "%s", ie_message_body(lerr));
		rc = 1;
		goto done;
	}
	if (labels != NULL)
	{
		rc = store_labels(outputs[tm->out_logits], spec, labels,
						  ie_model_output_name(model, tm->out_logits), rows, n, r,
						  sqlstate, err, errlen);
		if (rc == 0 && answer != NULL)
		{
			*answer = outputs[tm->out_logits];
			outputs[tm->out_logits] = NULL;
		}
		goto done;
	}
	out = outputs[tm->out];
	*sqlstate = PGINFER_SQLSTATE_BAD_PARAM;
	if (out == NULL || out->dtype != IE_FLOAT ||
		!((out->ndim == 3 && out->dims[0] == n && out->dims[1] == len && out->dims[2] >= 1) ||
		  (out->ndim == 2 && out->dims[0] == n && out->dims[1] >= 1)))
	{
		snprintf(err, errlen, "output \"%s\" of text model \"%s\" is not a float "
				 "[batch, sequence, hidden] or [batch, hidden] tensor",
				 ie_model_output_name(model, tm->out), spec->file);
		goto done;
	}
	for (int k = 0; k < n; k++)
	{
		int			dim = (int) out->dims[out->ndim - 1];
		Pginfer__RowResult *row = &r->rows[rows[k].index];
		float	   *v = malloc((size_t) dim * sizeof(float));

		if (v == NULL)
		{
			*sqlstate = PGINFER_SQLSTATE_OUT_OF_MEMORY;
			snprintf(err, errlen, "out of memory for %d values", dim);
			goto done;
		}
		if (out->ndim == 3)
			text_pool((const float *) out->data + (size_t) k * len * dim,
					  (const int64_t *) mask->data + (size_t) k * len,
					  rows[k].n, dim, tm->cfg.pooling, v);
		else
			memcpy(v, (const float *) out->data + (size_t) k * dim,
				   (size_t) dim * sizeof(float));
		if (tm->cfg.normalize)
			text_normalize(v, dim);
		free(r->values[rows[k].index]);
		r->values[rows[k].index] = v;
		r->n_values[rows[k].index] = (size_t) dim;
		row->n_values = (uint32_t) dim;
		row->ok = 1;
	}
	if (answer != NULL)
	{
		*answer = outputs[tm->out];
		outputs[tm->out] = NULL;
	}
	rc = 0;

done:
	for (int j = 0; outputs != NULL && j < n_out; j++)
		ie_tensor_destroy(&outputs[j]);
	free(outputs);
	free(inputs);
	ie_tensor_destroy(&ids);
	ie_tensor_destroy(&mask);
	ie_tensor_destroy(&types);
	return rc;
}

/*
 * Whether a text batch's failed run (model_calls_sqlstate of its kind) may
 * be its rows' fault, so that they run again alone: what the model cannot
 * take (XX000: a shape or an index) or a tensor over the worker's limit
 * (54000); not memory running out nor what the engine lacks.
 */
static bool
row_may_be_at_fault(const char *sqlstate)
{
	return strcmp(sqlstate, PGINFER_SQLSTATE_INTERNAL) == 0 ||
		strcmp(sqlstate, PGINFER_SQLSTATE_TOO_LARGE) == 0;
}

/*
 * The values of row k of a run's answer output t (run_batch) that the row's
 * answer comes from: of a [batch, sequence, hidden] output, its own tokens'
 * (ntok of the len in the batch), not the padding's; of a [batch, hidden]
 * or [batch, classes] output, its row.  NULL when t has no such row.
 */
static const float *
row_answer(const ie_tensor *t, int k, int len, int ntok, size_t *count)
{
	if (t == NULL || t->dtype != IE_FLOAT || t->ndim < 2 || t->dims[0] <= k)
		return NULL;
	if (t->ndim == 3 && t->dims[1] == len)
	{
		*count = (size_t) ntok * (size_t) t->dims[2];
		return (const float *) t->data + (size_t) k * (size_t) len * (size_t) t->dims[2];
	}
	if (t->ndim != 2)
		return NULL;
	*count = (size_t) t->dims[1];
	return (const float *) t->data + (size_t) k * *count;
}

/*
 * Whether the model's rows may share a batch, from the first batch of two
 * or more rows of other ids, rows[0..n), that ran (batched, its answer
 * output; run_batch): its first row (the shortest, the most padded) and
 * the last one of other ids than it run again alone (their answers stored
 * in r, replacing the batch's), and each must give the values it got in
 * the batch (model_calls_rows_match): bit for bit where the engine's own
 * matrix kernel runs (ie_gd_enabled: AVX-512), with which the fp32 text
 * path is bit-identical across batches; elsewhere OpenBLAS's kernels
 * differ by a few 1e-6 with the batch's shape, so within ONNX's backend
 * tolerance, still far below what a model that mixes a batch's rows
 * shows: DynamicQuantizeLinear (quantize_dynamic) takes one scale over the
 * whole batch tensor (MiniLM's rows moved to cosine 0.96-0.99 against
 * alone), and a model without attention_mask that gets padding reads it
 * (text_run batches such a model's rows only at equal lengths).
 * The verdict is kept with the loaded model and logged once
 * (model_cache_keep_layout).  1 the rows may share a batch, 0 not, 2 no
 * verdict (every row alike, or a row failed alone), -1 with sqlstate/err on
 * a request error.
 */
static int
probe_rows(model_cache *mc, const ie_model *model, const text_model *tm,
		   const Pginfer__ModelSpec *spec, const text_labels *labels,
		   const text_row *rows, int n, const ie_tensor *batched,
		   fragment_result *r, const char **sqlstate, char *err, size_t errlen)
{
	int			probe[2] = {0, -1};
	int			len = rows[n - 1].n;
	int			verdict = 1;

	for (int k = n - 1; k > 0 && probe[1] < 0; k--)
		if (rows[k].n != rows[0].n ||
			memcmp(rows[k].ids, rows[0].ids, (size_t) rows[0].n * sizeof(int64_t)) != 0)
			probe[1] = k;
	if (probe[1] < 0)
		return 2;
	for (int j = 0; j < 2 && verdict == 1; j++)
	{
		const text_row *row = &rows[probe[j]];
		ie_tensor  *alone = NULL;
		const float *a,
				   *b;
		size_t		na = 0,
					nb = 0;
		int			c;

		c = run_batch(model, tm, spec, labels, row, 1, r, &alone, sqlstate, err, errlen);
		if (c != 0)
		{
			ie_tensor_destroy(&alone);
			if (c < 0)
				return -1;
			/* the rows run alone next (run_rows), where the row gets its error */
			err[0] = '\0';
			return 2;
		}
		b = row_answer(batched, probe[j], len, row->n, &nb);
		a = row_answer(alone, 0, row->n, row->n, &na);
		if (a == NULL || b == NULL)
			verdict = 2;
		else if (na != nb || !model_calls_rows_match(b, a, na, ie_gd_enabled()))
			verdict = 0;
		ie_tensor_destroy(&alone);
	}
	if (verdict == 2)
		return 2;
	model_cache_keep_layout(mc, spec->file,
							verdict ? MODEL_LAYOUT_ROWS_FIRST : MODEL_LAYOUT_NOT_ROWS,
							"text model",
							verdict ? "rows of a batch, run alone, give the answers they got in the batch"
							: "a row of a batch, run alone, does not give the answer it got in the batch (the model mixes the rows of a batch: a dynamically quantized model's DynamicQuantizeLinear takes one scale over the batch)");
	return verdict;
}

/*
 * Runs rows[0..n) through run_batch, and when the batch's run fails in a
 * way a row may be at fault for (row_may_be_at_fault), each row alone: a
 * row that fails alone gets the error (22023, or 54000 for a tensor over
 * the limit, naming its length in tokens), the others their vectors.
 * When a batch failed for a shape (XX000) where every row alone runs (an
 * export that fixed a batch of 1 inside), the verdict is kept with the
 * loaded model (model_cache_set_layout, MODEL_LAYOUT_NOT_ROWS), and its
 * rows run alone from then on, without the batched run first.  The first
 * batch that runs, with no verdict kept yet, is probed (probe_rows): when
 * its rows' answers depend on the batch they run alone, now and from then
 * on.  0, or -1 with sqlstate/err on a request error.
 */
static int
run_rows(model_cache *mc, const ie_model *model, const text_model *tm,
		 const Pginfer__ModelSpec *spec, const text_labels *labels,
		 const text_row *rows, int n, fragment_result *r,
		 const char **sqlstate, char *err, size_t errlen)
{
	char		msg[768];
	bool		batch_failed = false;	/* for a shape, with n > 1 rows */
	int			ran = 0;		/* rows that ran alone */
	int			layout = n > 1 ? model_cache_get_layout(mc, spec->file) : 0;
	int			c;

	if (layout != MODEL_LAYOUT_NOT_ROWS)
	{
		ie_tensor  *batched = NULL;
		int			verdict = 1;

		c = run_batch(model, tm, spec, labels, rows, n, r,
					  n > 1 && layout == 0 ? &batched : NULL, sqlstate, err, errlen);
		if (c == 0 && batched != NULL)
			verdict = probe_rows(mc, model, tm, spec, labels, rows, n, batched, r,
								 sqlstate, err, errlen);
		ie_tensor_destroy(&batched);
		if (verdict < 0)
			return -1;
		if (verdict == 0)
			goto alone;			/* the batch's answers were not the rows' own */
		if (c != 1)
			return c;
		if (!row_may_be_at_fault(*sqlstate))
			goto request_error;
		batch_failed = n > 1 && strcmp(*sqlstate, PGINFER_SQLSTATE_INTERNAL) == 0;
		if (n > 1)
			log_debug("text model \"%s\": a %d-row batch failed (%s); running rows alone",
					  spec->file, n, err);
	}
alone:
	for (int k = 0; k < n; k++)
	{
		if (n > 1)
		{
			c = run_batch(model, tm, spec, labels, rows + k, 1, r, NULL, sqlstate, err,
						  errlen);
			if (c == 0)
			{
				ran++;
				continue;
			}
			if (c < 0)
				return -1;
			if (!row_may_be_at_fault(*sqlstate))
				goto request_error;
		}
		if (strcmp(*sqlstate, PGINFER_SQLSTATE_TOO_LARGE) == 0)
		{
			snprintf(msg, sizeof(msg), "text model \"%s\" needs a tensor larger than the worker allows for the row's text of %d tokens: %s",
					 spec->file, rows[k].n, err);
			fragment_row_error(r, rows[k].index, PGINFER_SQLSTATE_TOO_LARGE, msg, NULL,
							   "Shorten the text, lower the model's max_seq_length in its model.json, or start the worker with a larger --max-tensor-bytes.");
			continue;
		}
		snprintf(msg, sizeof(msg), "text model \"%s\" cannot take the row's text of %d tokens: %s",
				 spec->file, rows[k].n, err);
		fragment_row_error(r, rows[k].index, PGINFER_SQLSTATE_BAD_PARAM, msg, NULL,
						   "Check the model's max_seq_length in its model.json against the longest sequence the model takes, or shorten the text.");
	}
	if (batch_failed && ran == n &&
		model_cache_set_layout(mc, spec->file, MODEL_LAYOUT_NOT_ROWS) == 0)
		log_info("text model \"%s\": a batch failed where its rows alone run; rows run one at a time",
				 spec->file);
	return 0;

request_error:
	/* memory, or what the engine lacks: every row would fail alike */
	snprintf(msg, sizeof(msg), "%s", err);
	snprintf(err, errlen, "text model \"%s\" failed: %s", spec->file, msg);
	return -1;
}

/* Runs FRAG_EMBED_TEXT or FRAG_CLASSIFY_TEXT over the rows; see text.h. */
int
text_run(model_cache *mc, const Pginfer__RunFragment *run,
		 const void *const *rows, const size_t *rows_len, int n_rows,
		 int max_batch, volatile sig_atomic_t *stop, fragment_result *r,
		 const char **sqlstate, char *err, size_t errlen)
{
	const Pginfer__Fragment *frag = run->fragment;
	const Pginfer__ModelSpec *spec;
	const ie_model *model = NULL;
	text_model *tm = NULL;
	text_row   *tr = NULL;
	text_labels labels = {NULL, 0};
	int			classify = frag->kind == PGINFER__FRAGMENT_KIND__FRAG_CLASSIFY_TEXT;
	int			n_ok = 0,
				rc = -1;

	*sqlstate = PGINFER_SQLSTATE_BAD_PARAM;
	if (frag->n_models < 1)
	{
		snprintf(err, errlen, "%s fragment has no model",
				 classify ? "classify_text" : "embed_text");
		return -1;
	}
	spec = frag->models[0];
	if (classify &&
		model_cache_get_labels(mc, spec, &labels.v, &labels.n, sqlstate, err,
							   errlen) != 0)
		return -1;
	if (get_text_model(mc, spec, &model, &tm, sqlstate, err, errlen) != 0)
		return -1;
	if (max_batch < 1)
		max_batch = 1;
	if (max_batch > TEXT_MAX_BATCH_ROWS)
		max_batch = TEXT_MAX_BATCH_ROWS;

	tr = calloc(n_rows > 0 ? (size_t) n_rows : 1, sizeof(*tr));
	if (tr == NULL)
		goto oom;
	for (int i = 0; i < n_rows; i++)
	{
		text_row	one = {0};

		r->rows[i].row_id = run->row_ids[i];
		if (!row_within_limit(spec, rows_len[i], r, i))
			continue;
		if (tokenize_row(tm, spec, frag->truncate_text, classify, rows[i],
						 rows_len[i], r, i, &one) != 0)
			goto oom;
		if (one.ids != NULL)
			tr[n_ok++] = one;
	}
	qsort(tr, (size_t) n_ok, sizeof(*tr), cmp_rows);

	for (int start = 0; start < n_ok;)
	{
		int			n = 1;

		if (stop != NULL && *stop)
		{
			*sqlstate = FRAGMENT_SQLSTATE_SHUTDOWN;
			snprintf(err, errlen, "the run was stopped between rows; %d of %d texts were not run",
					 n_ok - start, n_rows);
			goto done;
		}
		/*
		 * sorted: the batch's longest row is its last.  A row much longer
		 * than the batch's first starts a new batch, so that padding stays
		 * near TEXT_PAD_RATIO of the tokens (padding cancelled batching's
		 * gain: bench/text).  A model without attention_mask cannot tell
		 * padding from tokens: its batches hold rows of one length, unpadded.
		 */
		while (start + n < n_ok && n < max_batch &&
			   (size_t) (n + 1) * (size_t) tr[start + n].n <= TEXT_MAX_BATCH_TOKENS &&
			   tr[start + n].n <= tr[start].n * TEXT_PAD_RATIO + TEXT_PAD_SLACK &&
			   (tm->in_mask >= 0 || tr[start + n].n == tr[start].n))
			n++;
		if (run_rows(mc, model, tm, spec, classify ? &labels : NULL, tr + start, n,
					 r, sqlstate, err, errlen) != 0)
			goto done;
		start += n;
	}
	rc = 0;
	goto done;

oom:
	*sqlstate = PGINFER_SQLSTATE_OUT_OF_MEMORY;
	snprintf(err, errlen, "out of memory for %d texts", n_rows);
done:
	for (int k = 0; tr != NULL && k < n_ok; k++)
		free(tr[k].ids);
	free(tr);
	return rc;
}
