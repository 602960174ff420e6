/*
 * fuzz_tokenizer.c
 *	  libFuzzer harness for the WordPiece tokenizer (worker/tokenizer.c):
 *	  any bytes, valid UTF-8 or not, must encode into at most max_len ids,
 *	  each a vocabulary id, starting with [CLS] and ending with [SEP], or
 *	  fail with a message; never crash or read outside the input.
 *
 * The vocabulary is the text model's (FUZZ_VOCAB, default
 * build/models/minilm/vocab.txt).  The first input byte picks max_len
 * (2..129) and the lower-casing mode, so that truncation is exercised.
 * Built and run by tests/fuzz/fuzz.mk.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/tokenizer.h"

int			LLVMFuzzerInitialize(int *argc, char ***argv);
int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static tokenizer *tok_lower;
static tokenizer *tok_cased;
static int64_t id_cls,
			id_sep;

/* Loads the vocabulary twice (uncased and cased); exits when it cannot. */
int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *path = getenv("FUZZ_VOCAB");
	char		err[256];

	(void) argc;
	(void) argv;
	if (path == NULL)
		path = "build/models/minilm/vocab.txt";
	tok_lower = tokenizer_load(path, true, err, sizeof(err));
	tok_cased = tokenizer_load(path, false, err, sizeof(err));
	if (tok_lower == NULL || tok_cased == NULL)
	{
		fprintf(stderr, "fuzz_tokenizer: %s (set FUZZ_VOCAB)\n", err);
		exit(2);
	}
	id_cls = tokenizer_token_id(tok_lower, "[CLS]");
	id_sep = tokenizer_token_id(tok_lower, "[SEP]");
	return 0;
}

/* One input: byte 0 chooses max_len and casing, the rest is the text. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int64_t		ids[130];
	char		err[256];
	bool		truncated = false;
	const tokenizer *tok;
	int			max_len,
				n,
				vocab;
	char	   *text;

	if (size == 0)
		return 0;
	max_len = 2 + (data[0] & 0x7f);
	tok = (data[0] & 0x80) ? tok_cased : tok_lower;
	vocab = tokenizer_vocab_size(tok);
	/* exact-size copy so that AddressSanitizer sees overreads */
	text = malloc(size - 1 ? size - 1 : 1);
	if (text == NULL)
		return 0;
	memcpy(text, data + 1, size - 1);
	err[0] = '\0';
	n = tokenizer_encode(tok, text, size - 1, max_len, ids, &truncated, err, sizeof(err));
	if (n < 0)
	{
		if (err[0] == '\0')
			abort();
	}
	else
	{
		if (n < 2 || n > max_len || ids[0] != id_cls || ids[n - 1] != id_sep)
			abort();
		for (int i = 0; i < n; i++)
			if (ids[i] < 0 || ids[i] >= vocab)
				abort();
		if (truncated && n != max_len)
			abort();
	}
	free(text);
	return 0;
}
