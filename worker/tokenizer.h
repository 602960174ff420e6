/*
 * tokenizer.h
 *		BERT WordPiece tokenizer for the text-embedding models (MiniLM class).
 *
 *		Gives the ids of the Hugging Face `tokenizers` library configured as a
 *		BERT tokenizer (BertNormalizer with clean_text and
 *		handle_chinese_chars; BertPreTokenizer; WordPiece with "##"
 *		continuations, [UNK] for unknown words and words over 100 characters;
 *		[CLS] ... [SEP]).  The special tokens [CLS], [SEP], [PAD], [UNK] and
 *		[MASK] written literally in the text become their ids, as in the
 *		library.  tests/text compares every id with the library's.
 *
 *		Threading: a loaded tokenizer is read-only; any number of threads may
 *		call tokenizer_encode on it at once.
 */
#ifndef TOKENIZER_H
#define TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tokenizer tokenizer;

/* Loads a WordPiece vocabulary (vocab.txt, one token per line, id = line
 * number - 1); lowercase = BERT uncased (lower-casing + accent stripping).
 * NULL with err on failure (unreadable file, no [CLS], [SEP] or [UNK]). */
tokenizer *tokenizer_load(const char *vocab_path, bool lowercase, char *err, size_t errlen);

/* Frees the tokenizer and sets *tok to NULL; NULL or *tok NULL is a no-op. */
void tokenizer_destroy(tokenizer **tok);

/* Encodes len bytes of UTF-8 text as [CLS] tokens [SEP] into ids (int64, at
 * most max_len entries including the two specials; max_len >= 2).  Returns
 * the number of ids written, sets *truncated when tokens were dropped to fit;
 * -1 with err for invalid UTF-8.  Attention mask = 1 for the n ids, token
 * type ids = 0. */
int tokenizer_encode(const tokenizer *tok, const char *text, size_t len, int max_len,
					 int64_t *ids, bool *truncated, char *err, size_t errlen);

/* The id of a token of the vocabulary, or -1 when it has none. */
int64_t tokenizer_token_id(const tokenizer *tok, const char *token);

/* The number of tokens in the vocabulary. */
int tokenizer_vocab_size(const tokenizer *tok);

#endif							/* TOKENIZER_H */
