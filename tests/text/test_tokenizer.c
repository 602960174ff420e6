/*
 * test_tokenizer.c
 *	  Compares worker/tokenizer.c with the Hugging Face tokenizer, id by id.
 *
 *	  usage: test_tokenizer VOCAB EXPECTED
 *	  EXPECTED is written by tools/tokenizer_reference.py: one case a line,
 *	  "<text as UTF-8 hex>\t<max_len>\t<truncated 0|1>\t<ids>".  Every case is
 *	  encoded and must give exactly those ids and that truncation flag.  Then
 *	  the cases the library cannot produce: invalid UTF-8, bad arguments, a
 *	  missing vocabulary, max_len 2.  Prints "text: N passed, M failed" (one
 *	  count per case) and exits non-zero on any failure.
 *
 *	  Single-threaded.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/tokenizer.h"
#include "tests/text/textutil.h"

#define MAX_IDS 1024

/* Decodes n hex digits at s into out; the byte count, or -1. */
static long
unhex(const char *s, size_t n, char *out)
{
	if (n % 2)
		return -1;
	for (size_t i = 0; i < n; i += 2)
	{
		int			hi = hexval(s[i]);
		int			lo = hexval(s[i + 1]);

		if (hi < 0 || lo < 0)
			return -1;
		out[i / 2] = (char) (hi * 16 + lo);
	}
	return (long) (n / 2);
}

/* Runs every case of the expected file; -1 when it cannot be read. */
static int
run_expected(const tokenizer *tok, const char *path)
{
	FILE	   *f = fopen(path, "r");
	char	   *line = NULL;
	size_t		cap = 0;
	ssize_t		n;
	int			lineno = 0;
	int64_t		want[MAX_IDS];
	int64_t		got[MAX_IDS];

	if (!f)
	{
		printf("FAIL cannot open %s (run tools/tokenizer_reference.py)\n", path);
		return -1;
	}
	while ((n = getline(&line, &cap, f)) > 0)
	{
		char	   *tab1 = strchr(line, '\t');
		char	   *text;
		char	   *p;
		char		err[256] = "";
		long		tlen;
		int			max_len;
		int			want_cut;
		int			nwant = 0;
		int			ngot;
		bool		cut = false;

		lineno++;
		if (!tab1)
		{
			CHECK(false, "%s:%d: malformed line", path, lineno);
			continue;
		}
		text = malloc((size_t) (tab1 - line) / 2 + 1);
		tlen = unhex(line, (size_t) (tab1 - line), text);
		max_len = (int) strtol(tab1 + 1, &p, 10);
		want_cut = (int) strtol(p + 1, &p, 10);
		while (*p == '\t' || *p == ' ')
		{
			char	   *q;
			long long	v = strtoll(p + 1, &q, 10);

			if (q == p + 1 || nwant == MAX_IDS)
				break;
			want[nwant++] = v;
			p = q;
		}
		if (tlen < 0 || max_len < 2 || max_len > MAX_IDS)
		{
			CHECK(false, "%s:%d: malformed line", path, lineno);
			free(text);
			continue;
		}
		ngot = tokenizer_encode(tok, text, (size_t) tlen, max_len, got, &cut, err, sizeof(err));
		if (ngot == nwant && cut == (want_cut == 1) &&
			memcmp(got, want, (size_t) nwant * sizeof(int64_t)) == 0)
			passed++;
		else
		{
			int			k = 0;

			while (k < ngot && k < nwant && got[k] == want[k])
				k++;
			CHECK(false, "%s:%d: text \"%.*s\" max_len %d: %d ids (cut %d), want %d (cut %d); "
				  "first difference at %d: got %lld, want %lld %s",
				  path, lineno, (int) (tlen > 60 ? 60 : tlen), text, max_len, ngot, cut,
				  nwant, want_cut, k, k < ngot ? (long long) got[k] : -1LL,
				  k < nwant ? (long long) want[k] : -1LL, err);
		}
		free(text);
	}
	free(line);
	fclose(f);
	CHECK(lineno > 0, "%s is empty", path);
	return 0;
}

/* Cases outside what the library can be asked: invalid UTF-8 and bad
 * arguments must fail with a message, max_len 2 keeps only the specials. */
static void
run_edge_cases(tokenizer *tok, const char *vocab)
{
	static const char *const invalid[] = {
		"\xff", "abc\x80", "\xc0\xaf", "\xe0\x80\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80",
		"ok \xe2\x82", "\xf0\x9f\x98", "caf\xc3",
	};
	int64_t		ids[8];
	char		err[256];
	bool		cut;
	tokenizer  *t2;
	int64_t		cls = tokenizer_token_id(tok, "[CLS]");
	int64_t		sep = tokenizer_token_id(tok, "[SEP]");

	for (size_t i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++)
	{
		int			n;

		err[0] = '\0';
		n = tokenizer_encode(tok, invalid[i], strlen(invalid[i]), 8, ids, &cut, err, sizeof(err));
		CHECK(n == -1 && strstr(err, "invalid UTF-8") != NULL,
			  "invalid UTF-8 case %zu: got %d, err \"%s\"", i, n, err);
	}
	CHECK(tokenizer_encode(tok, "hello", 5, 1, ids, &cut, err, sizeof(err)) == -1,
		  "max_len 1 must fail");
	CHECK(tokenizer_encode(tok, "hello world", 11, 2, ids, &cut, err, sizeof(err)) == 2 &&
		  ids[0] == cls && ids[1] == sep && cut, "max_len 2: [CLS] [SEP], cut");
	CHECK(tokenizer_encode(tok, NULL, 0, 4, ids, &cut, err, sizeof(err)) == 2 && !cut,
		  "NULL empty text: [CLS] [SEP]");
	CHECK(cls == 101 && sep == 102 && tokenizer_vocab_size(tok) == 30522 &&
		  tokenizer_token_id(tok, "##ing") == 2075 && tokenizer_token_id(tok, "no-such") == -1,
		  "vocabulary ids of MiniLM's vocab.txt");

	err[0] = '\0';
	t2 = tokenizer_load("/nonexistent/vocab.txt", true, err, sizeof(err));
	CHECK(t2 == NULL && strstr(err, "/nonexistent/vocab.txt") != NULL, "missing vocabulary: \"%s\"", err);
	t2 = tokenizer_load(vocab, false, err, sizeof(err));
	CHECK(t2 != NULL, "cased load: %s", err);
	if (t2)
	{
		/* cased: "Hello" stays upper-case and is not in the uncased vocabulary */
		int			n = tokenizer_encode(t2, "Hello", 5, 8, ids, &cut, err, sizeof(err));

		CHECK(n == 3 && ids[1] == tokenizer_token_id(tok, "[UNK]"), "cased Hello: %d ids", n);
	}
	tokenizer_destroy(&t2);
	CHECK(t2 == NULL, "destroy nulls the pointer");
	tokenizer_destroy(&t2);
}

int
main(int argc, char **argv)
{
	char		err[256];
	tokenizer  *tok;

	if (argc != 3)
	{
		fprintf(stderr, "usage: %s VOCAB EXPECTED\n", argv[0]);
		return 2;
	}
	tok = tokenizer_load(argv[1], true, err, sizeof(err));
	CHECK(tok != NULL, "load: %s", err);
	if (tok)
	{
		run_expected(tok, argv[2]);
		run_edge_cases(tok, argv[1]);
	}
	tokenizer_destroy(&tok);
	printf("text: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
