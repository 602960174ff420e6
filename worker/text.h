/*
 * text.h
 *	  The text fragments.  FRAG_EMBED_TEXT: UTF-8 text per row -> BERT
 *	  WordPiece token ids -> a sentence-transformers model -> pooling -> L2
 *	  normalisation -> float32[hidden] per row.  FRAG_CLASSIFY_TEXT: UTF-8
 *	  text per row -> token ids -> a text classifier -> the label of its
 *	  largest score per row.
 *
 * A text model is an ONNX file (ModelSpec.file) with, in its folder, the
 * tokenizer's vocab.txt and a model.json that says how to use it:
 *
 *	  {"max_seq_length": 256, "do_lower_case": true, "pooling": "mean",
 *	   "normalize": true, "vocab": "vocab.txt"}
 *
 * (max_seq_length is required; the others default to true, "mean", false
 * and "vocab.txt".)  The model takes int64 [batch, seq] inputs named
 * input_ids, attention_mask and token_type_ids (the last two optional) and
 * gives token embeddings [batch, seq, hidden] as the output named
 * last_hidden_state or token_embeddings (else its first output); a model
 * whose chosen output is [batch, hidden] is taken as already pooled.
 * A text classifier (FRAG_CLASSIFY_TEXT) takes the same inputs and gives
 * its scores as the output named logits (else its first output), float
 * [batch, classes]; a row's answer is ModelSpec.labels[argmax] (the first
 * on ties), and a model with more classes than labels fails the request.
 * Pooling and normalisation do not apply to it.
 *
 * Rows are tokenized ([CLS] tokens [SEP], at most max_seq_length ids),
 * sorted by length and run in batches of at most max_batch rows (and
 * TEXT_MAX_BATCH_TOKENS padded tokens), each padded to its longest row
 * with attention mask 0 and token id 0.  Pooling follows
 * sentence-transformers: "mean" averages the token embeddings where the
 * mask is 1 (sum / max(count, 1e-9)), "cls" takes the first token;
 * normalisation divides by max(L2 norm, 1e-12) (torch.nn.functional.
 * normalize).  Sums run in double.
 *
 * Per-row errors: text that is not valid UTF-8 (22021); with
 * Fragment.truncate_text false, a text longer than max_seq_length tokens
 * (54000, naming its length).  Otherwise a long text is cut and the row's
 * RowResult.truncated is set.  What is wrong with the model (files beside
 * it missing or malformed, inputs or outputs of the wrong kind, a failed
 * run) fails the request.
 *
 * The tokenizer and settings are read on the model's first use and kept
 * with the loaded model in the model_cache (model_cache_set_aux), so
 * unloading the model drops them too.
 *
 * Each model call (one batch) is a sample in the fragment_result: the
 * model file, the batch's rows and the engine's milliseconds for it (the
 * tokenizer and the model load are outside).
 *
 * Threading: one call at a time per model_cache (as fragment.h).
 */
#ifndef INFER_TEXT_H
#define INFER_TEXT_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "common/pg_infer.pb-c.h"
#include "worker/fragment.h"
#include "worker/model_cache.h"

/*
 * Most padded tokens (rows x longest row) in one model call: 8 rows of
 * 256 tokens, whose attention scores (rows x 12 heads x 256 x 256 floats
 * for MiniLM) take 25 MB; more rows of shorter texts.
 */
#define TEXT_MAX_BATCH_TOKENS 2048

/* Most rows in one model call, whatever max_batch allows. */
#define TEXT_MAX_BATCH_ROWS 32

/*
 * A model call's rows (sorted by length) are at most TEXT_PAD_RATIO times
 * its shortest row's tokens plus TEXT_PAD_SLACK long, so that padding adds
 * about a quarter to the tokens run (counted over tests/text/sentences.txt
 * with 64-row requests: 1.56x tokens without the bound, 1.11x with it).
 */
#define TEXT_PAD_RATIO 1.25
#define TEXT_PAD_SLACK 2

/* Largest max_seq_length a model.json may give. */
#define TEXT_MAX_SEQ_LENGTH 8192

/* Largest model.json read. */
#define TEXT_MAX_CONFIG_BYTES (1 << 20)

typedef enum text_pooling
{
	TEXT_POOL_MEAN,				/* mean over the tokens whose mask is 1 */
	TEXT_POOL_CLS				/* the first token's embedding */
} text_pooling;

/* A text model's model.json. */
typedef struct text_config
{
	int			max_seq_length; /* ids per row, [CLS] and [SEP] included */
	int			lowercase;		/* do_lower_case */
	text_pooling pooling;
	int			normalize;		/* L2-normalise the pooled vector */
	char		vocab[256];		/* vocabulary file, relative to the model's folder */
} text_config;

/*
 * Parses a model.json (a JSON object; unknown keys are skipped) of len
 * bytes into *cfg.  Returns 0, or -1 with a message in err (not JSON, a
 * key of the wrong type, max_seq_length missing or outside 3 ..
 * TEXT_MAX_SEQ_LENGTH, an unknown pooling).
 */
int			text_config_parse(const char *json, size_t len, text_config *cfg,
							  char *err, size_t errlen);

/*
 * Pools one row's token embeddings hidden[seq][dim] (row-major) with its
 * attention mask[seq] into out[dim], as text.h's header says.
 */
void		text_pool(const float *hidden, const int64_t *mask, int seq, int dim,
					  text_pooling pooling, float *out);

/* Divides v[0..dim) by max(its L2 norm, 1e-12), in place. */
void		text_normalize(float *v, int dim);

/*
 * Sets the most bytes one text row may have (--max-text-bytes; <= 0: the
 * default, PGINFER_DEFAULT_MAX_TEXT_BYTES).  A longer row fails alone with
 * 54000 before it is tokenized (nothing is allocated for it).  Call before
 * any thread runs text_run; text_get_max_bytes returns the limit in force.
 */
void		text_set_max_bytes(int64_t max_bytes);
int64_t		text_get_max_bytes(void);

/*
 * Runs FRAG_EMBED_TEXT or FRAG_CLASSIFY_TEXT (run->fragment->kind;
 * run->fragment->models[0] is the text model) over n_rows texts rows[i]
 * of rows_len[i] bytes into r (n_rows rows; row ids set here).  max_batch (>= 1) caps the rows of one model call.
 * Returns 0 (row failures are in their rows), or -1 with *sqlstate and a
 * message in err when the request as a whole cannot run; a non-zero *stop
 * between two model calls abandons the request (FRAGMENT_SQLSTATE_SHUTDOWN).
 */
int			text_run(model_cache *mc, const Pginfer__RunFragment *run,
					 const void *const *rows, const size_t *rows_len,
					 int n_rows, int max_batch, volatile sig_atomic_t *stop,
					 fragment_result *r, const char **sqlstate, char *err,
					 size_t errlen);

#endif							/* INFER_TEXT_H */
