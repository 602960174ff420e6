/*
 * tokenizer.c
 *		BERT WordPiece tokenizer: UTF-8 text -> [CLS] ids [SEP].
 *
 *		The steps and their order are those of Hugging Face `tokenizers`
 *		(normalizers/bert.rs, pre_tokenizers/bert.rs, models/wordpiece):
 *		  1. the special tokens written literally in the raw text are cut out
 *		     first (they bypass normalisation);
 *		  2. BertNormalizer: clean_text drops NUL, U+FFFD and control/format/
 *		     private-use characters and turns white space into ' ';
 *		     handle_chinese_chars puts spaces around CJK ideographs; when
 *		     lower-casing, accents are stripped (NFD, then nonspacing marks
 *		     dropped) and every character is lower-cased;
 *		  3. BertPreTokenizer: words end at white space (dropped) and at
 *		     every punctuation character (kept as a word of its own);
 *		  4. WordPiece: greedy longest match from the left, "##" on
 *		     continuations; a word with an unmatched rest, or over 100
 *		     characters, becomes one [UNK].
 *		The Unicode tables are generated (tokenizer_unicode.h, see
 *		tools/gen_tokenizer_unicode.py for the Unicode versions they follow).
 *
 *		Threading: tokenizer_load builds a read-only structure; encode
 *		allocates its scratch per call, so concurrent calls are safe.
 */
#include "worker/tokenizer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/tokenizer_unicode.h"

#define MAX_WORD_CHARS	100		/* WordPiece max_input_chars_per_word */
#define SPECIAL_BASE	0x110000	/* normalised stream: SPECIAL_BASE + i is
									 * special token i, beyond any code point */

/* Special tokens matched in the raw text (tokenizer.json's added tokens of
 * BERT: all special, not normalised, not single-word, no strip). */
static const char *const special_names[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
#define NSPECIAL ((int) (sizeof(special_names) / sizeof(special_names[0])))

struct tokenizer
{
	bool		lowercase;
	char	   *arena;			/* the vocabulary file, lines NUL-terminated */
	uint32_t   *tok_off;		/* token i starts at arena + tok_off[i] */
	uint32_t   *tok_len;
	int			ntokens;
	int32_t    *slots;			/* open addressing: token index or -1 */
	uint32_t	slot_mask;
	int64_t		unk_id;
	int64_t		cls_id;
	int64_t		sep_id;
	int64_t		special_id[NSPECIAL];	/* -1 when not in the vocabulary */
};

/* A growable array of code points. */
typedef struct
{
	uint32_t   *v;
	size_t		n;
	size_t		cap;
} cpbuf;

/* FNV-1a over the concatenation of two byte strings (a prefix and a body). */
static uint32_t
hash2(const char *a, size_t alen, const char *b, size_t blen)
{
	uint32_t	h = 2166136261u;

	for (size_t i = 0; i < alen; i++)
		h = (h ^ (uint8_t) a[i]) * 16777619u;
	for (size_t i = 0; i < blen; i++)
		h = (h ^ (uint8_t) b[i]) * 16777619u;
	return h;
}

/* Index of the token prefix+body in the vocabulary, or -1. */
static int32_t
vocab_find(const tokenizer *tok, const char *prefix, size_t plen, const char *body, size_t blen)
{
	uint32_t	i = hash2(prefix, plen, body, blen) & tok->slot_mask;

	for (;; i = (i + 1) & tok->slot_mask)
	{
		int32_t		t = tok->slots[i];
		const char *s;

		if (t < 0)
			return -1;
		s = tok->arena + tok->tok_off[t];
		if (tok->tok_len[t] == plen + blen && memcmp(s, prefix, plen) == 0 &&
			memcmp(s + plen, body, blen) == 0)
			return t;
	}
}

/* Reads the whole file into a NUL-terminated buffer; NULL with err. */
static char *
read_file(const char *path, size_t *len, char *err, size_t errlen)
{
	FILE	   *f = fopen(path, "rb");
	char	   *buf = NULL;
	long		size;

	if (!f)
	{
		snprintf(err, errlen, "cannot open vocabulary \"%s\": %s", path, strerror(errno));
		return NULL;
	}
	if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0)
	{
		snprintf(err, errlen, "cannot read vocabulary \"%s\": %s", path, strerror(errno));
		goto fail;
	}
	buf = malloc((size_t) size + 1);
	if (!buf)
	{
		snprintf(err, errlen, "out of memory reading vocabulary \"%s\"", path);
		goto fail;
	}
	if (fread(buf, 1, (size_t) size, f) != (size_t) size)
	{
		snprintf(err, errlen, "cannot read vocabulary \"%s\"", path);
		goto fail;
	}
	buf[size] = '\0';
	*len = (size_t) size;
	fclose(f);
	return buf;
fail:
	free(buf);
	fclose(f);
	return NULL;
}

/* Loads vocab.txt: one token a line, id = line index; trailing white space
 * of a line is not part of the token and a later duplicate wins, as in
 * tokenizers' WordPiece::read_file. */
tokenizer *
tokenizer_load(const char *vocab_path, bool lowercase, char *err, size_t errlen)
{
	tokenizer  *tok = calloc(1, sizeof(*tok));
	size_t		len = 0;
	size_t		nlines = 0;
	size_t		nslots = 1;
	char	   *p;

	if (!tok)
	{
		snprintf(err, errlen, "out of memory loading vocabulary \"%s\"", vocab_path);
		return NULL;
	}
	tok->lowercase = lowercase;
	tok->arena = read_file(vocab_path, &len, err, errlen);
	if (!tok->arena)
		goto fail;
	for (size_t i = 0; i < len; i++)
		nlines += tok->arena[i] == '\n';
	if (len > 0 && tok->arena[len - 1] != '\n')
		nlines++;
	if (nlines == 0 || nlines > INT32_MAX / 4 || len > UINT32_MAX)
	{
		snprintf(err, errlen, "vocabulary \"%s\" is empty or too large", vocab_path);
		goto fail;
	}
	while (nslots < 2 * nlines)
		nslots <<= 1;
	tok->tok_off = malloc(nlines * sizeof(uint32_t));
	tok->tok_len = malloc(nlines * sizeof(uint32_t));
	tok->slots = malloc(nslots * sizeof(int32_t));
	if (!tok->tok_off || !tok->tok_len || !tok->slots)
	{
		snprintf(err, errlen, "out of memory loading vocabulary \"%s\"", vocab_path);
		goto fail;
	}
	memset(tok->slots, 0xff, nslots * sizeof(int32_t));
	tok->slot_mask = (uint32_t) (nslots - 1);

	p = tok->arena;
	for (size_t t = 0; t < nlines; t++)
	{
		char	   *nl = memchr(p, '\n', (size_t) (tok->arena + len - p));
		char	   *end = nl ? nl : tok->arena + len;
		size_t		n;
		uint32_t	h;

		*end = '\0';
		n = (size_t) (end - p);
		while (n > 0 && strchr(" \t\r\v\f", p[n - 1]))
			p[--n] = '\0';
		tok->tok_off[t] = (uint32_t) (p - tok->arena);
		tok->tok_len[t] = (uint32_t) n;
		h = hash2("", 0, p, n) & tok->slot_mask;
		for (;; h = (h + 1) & tok->slot_mask)
		{
			int32_t		o = tok->slots[h];

			if (o < 0 || (tok->tok_len[o] == n && memcmp(tok->arena + tok->tok_off[o], p, n) == 0))
			{
				tok->slots[h] = (int32_t) t;
				break;
			}
		}
		p = end + 1;
	}
	tok->ntokens = (int) nlines;
	for (int i = 0; i < NSPECIAL; i++)
		tok->special_id[i] = tokenizer_token_id(tok, special_names[i]);
	tok->unk_id = tokenizer_token_id(tok, "[UNK]");
	tok->cls_id = tokenizer_token_id(tok, "[CLS]");
	tok->sep_id = tokenizer_token_id(tok, "[SEP]");
	if (tok->unk_id < 0 || tok->cls_id < 0 || tok->sep_id < 0)
	{
		snprintf(err, errlen, "vocabulary \"%s\" lacks [UNK], [CLS] or [SEP]", vocab_path);
		goto fail;
	}
	return tok;
fail:
	tokenizer_destroy(&tok);
	return NULL;
}

/* Frees the tokenizer and nulls the caller's pointer. */
void
tokenizer_destroy(tokenizer **tok)
{
	if (!tok || !*tok)
		return;
	free((*tok)->arena);
	free((*tok)->tok_off);
	free((*tok)->tok_len);
	free((*tok)->slots);
	free(*tok);
	*tok = NULL;
}

/* The id of token (a NUL-terminated string) or -1. */
int64_t
tokenizer_token_id(const tokenizer *tok, const char *token)
{
	return vocab_find(tok, "", 0, token, strlen(token));
}

/* The number of entries of the vocabulary. */
int
tokenizer_vocab_size(const tokenizer *tok)
{
	return tok->ntokens;
}

/* Binary search of the sorted runs of toku_props or toku_ccc: the value of
 * the run holding cp, 0 when none does. */
static uint8_t
range_lookup(const toku_range *r, size_t n, uint32_t cp)
{
	size_t		lo = 0;
	size_t		hi = n;

	while (lo < hi)
	{
		size_t		mid = (lo + hi) / 2;

		if (cp < r[mid].lo)
			hi = mid;
		else if (cp > r[mid].hi)
			lo = mid + 1;
		else
			return r[mid].val;
	}
	return 0;
}

/* The TOKU_* flags of cp (tokenizer_unicode.h), ASCII without a search. */
static uint8_t
props(uint32_t cp)
{
	if (cp < 128)
	{
		/* fast path; same answers as the table */
		if (cp == '\t' || cp == '\n' || cp == '\r' || cp == ' ')
			return TOKU_WS;
		if (cp == '\v' || cp == '\f')
			return TOKU_CTRL | TOKU_WS;
		if (cp < 32 || cp == 127)
			return TOKU_CTRL;
		if ((cp >= '!' && cp <= '/') || (cp >= ':' && cp <= '@') ||
			(cp >= '[' && cp <= '`') || (cp >= '{' && cp <= '~'))
			return TOKU_PUNCT;
		return 0;
	}
	return range_lookup(toku_props, sizeof(toku_props) / sizeof(toku_props[0]), cp);
}

/* Canonical combining class of cp (0 below U+0300, the first mark). */
static uint8_t
ccc(uint32_t cp)
{
	if (cp < 0x300)
		return 0;
	return range_lookup(toku_ccc, sizeof(toku_ccc) / sizeof(toku_ccc[0]), cp);
}

/* Binary search of a mapping table; NULL when cp has no entry. */
static const toku_map *
map_lookup(const toku_map *m, size_t n, uint32_t cp)
{
	size_t		lo = 0;
	size_t		hi = n;

	while (lo < hi)
	{
		size_t		mid = (lo + hi) / 2;

		if (cp < m[mid].cp)
			hi = mid;
		else if (cp > m[mid].cp)
			lo = mid + 1;
		else
			return &m[mid];
	}
	return NULL;
}

/* CJK ideograph blocks that BertNormalizer surrounds with spaces (BERT's
 * _is_chinese_char; tokenizers' is_chinese_char). */
static bool
is_chinese(uint32_t c)
{
	return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
		(c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
		(c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
		(c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

/* Appends cp, growing the buffer; -1 when out of memory. */
static int
cp_push(cpbuf *b, uint32_t cp)
{
	if (b->n == b->cap)
	{
		size_t		cap = b->cap ? 2 * b->cap : 64;
		uint32_t   *v = realloc(b->v, cap * sizeof(uint32_t));

		if (!v)
			return -1;
		b->v = v;
		b->cap = cap;
	}
	b->v[b->n++] = cp;
	return 0;
}

/* Appends the full canonical decomposition of cp (Hangul syllables by the
 * Unicode arithmetic, chapter 3.12). */
static int
push_decomposed(cpbuf *b, uint32_t cp)
{
	const toku_map *m;

	if (cp >= 0xAC00 && cp <= 0xD7A3)
	{
		uint32_t	s = cp - 0xAC00;

		if (cp_push(b, 0x1100 + s / 588) < 0 || cp_push(b, 0x1161 + (s % 588) / 28) < 0)
			return -1;
		return s % 28 ? cp_push(b, 0x11A7 + s % 28) : 0;
	}
	if (cp < 0xC0 || !(m = map_lookup(toku_decomp, sizeof(toku_decomp) / sizeof(toku_decomp[0]), cp)))
		return cp_push(b, cp);
	for (int i = 0; i < m->len; i++)
		if (cp_push(b, toku_decomp_pool[m->off + i]) < 0)
			return -1;
	return 0;
}

/* Canonical ordering (Unicode chapter 3.11): a stable sort by combining
 * class of every run of characters whose class is not 0.  Short runs by
 * insertion, long ones by counting sort, so that a text of many marks
 * costs linear time.  -1 when out of memory. */
static int
canonical_order(cpbuf *b)
{
	size_t		i = 0;

	while (i < b->n)
	{
		size_t		j = i;

		while (j < b->n && ccc(b->v[j]) != 0)
			j++;
		if (j - i > 16)
		{
			size_t		count[257] = {0};
			uint32_t   *tmp = malloc((j - i) * sizeof(uint32_t));

			if (!tmp)
				return -1;
			for (size_t k = i; k < j; k++)
				count[ccc(b->v[k]) + 1]++;
			for (int c = 1; c < 257; c++)
				count[c] += count[c - 1];
			for (size_t k = i; k < j; k++)
				tmp[count[ccc(b->v[k])]++] = b->v[k];
			memcpy(b->v + i, tmp, (j - i) * sizeof(uint32_t));
			free(tmp);
		}
		else
		{
			for (size_t k = i + 1; k < j; k++)
			{
				uint32_t	c = b->v[k];
				uint8_t		kc = ccc(c);
				size_t		m = k;

				while (m > i && ccc(b->v[m - 1]) > kc)
				{
					b->v[m] = b->v[m - 1];
					m--;
				}
				b->v[m] = c;
			}
		}
		i = j > i ? j : i + 1;
	}
	return 0;
}

/* Decodes one UTF-8 sequence at s (n bytes left) into *cp; its length, or
 * 0 when it is not well-formed (RFC 3629: no overlongs, no surrogates,
 * nothing above U+10FFFF). */
static int
utf8_decode(const uint8_t *s, size_t n, uint32_t *cp)
{
	uint32_t	c = s[0];
	int			len;
	uint32_t	min;

	if (c < 0x80)
	{
		*cp = c;
		return 1;
	}
	if (c >= 0xC2 && c <= 0xDF)
		len = 2, min = 0x80, c &= 0x1F;
	else if (c >= 0xE0 && c <= 0xEF)
		len = 3, min = 0x800, c &= 0x0F;
	else if (c >= 0xF0 && c <= 0xF4)
		len = 4, min = 0x10000, c &= 0x07;
	else
		return 0;
	if ((size_t) len > n)
		return 0;
	for (int i = 1; i < len; i++)
	{
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3F);
	}
	if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
		return 0;
	*cp = c;
	return len;
}

/* Writes cp as UTF-8 at out; its length. */
static int
utf8_encode(uint32_t cp, char *out)
{
	if (cp < 0x80)
	{
		out[0] = (char) cp;
		return 1;
	}
	if (cp < 0x800)
	{
		out[0] = (char) (0xC0 | (cp >> 6));
		out[1] = (char) (0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000)
	{
		out[0] = (char) (0xE0 | (cp >> 12));
		out[1] = (char) (0x80 | ((cp >> 6) & 0x3F));
		out[2] = (char) (0x80 | (cp & 0x3F));
		return 3;
	}
	out[0] = (char) (0xF0 | (cp >> 18));
	out[1] = (char) (0x80 | ((cp >> 12) & 0x3F));
	out[2] = (char) (0x80 | ((cp >> 6) & 0x3F));
	out[3] = (char) (0x80 | (cp & 0x3F));
	return 4;
}

/* Index of the special token written at text[i..], or -1. */
static int
special_at(const tokenizer *tok, const char *text, size_t len, size_t i)
{
	if (text[i] != '[')
		return -1;
	for (int s = 0; s < NSPECIAL; s++)
	{
		size_t		n = strlen(special_names[s]);

		if (tok->special_id[s] >= 0 && n <= len - i && memcmp(text + i, special_names[s], n) == 0)
			return s;
	}
	return -1;
}

/* Steps 1 and 2: raw text -> normalised code points, special tokens as
 * SPECIAL_BASE + index.  -1 with err for invalid UTF-8 or no memory. */
static int
normalize(const tokenizer *tok, const char *text, size_t len, cpbuf *out, char *err, size_t errlen)
{
	cpbuf		pre = {0};
	size_t		i = 0;

	while (i < len)
	{
		uint32_t	cp;
		int			n;
		int			s = special_at(tok, text, len, i);
		int			rc = 0;

		if (s >= 0)
		{
			rc = cp_push(&pre, SPECIAL_BASE + (uint32_t) s);
			i += strlen(special_names[s]);
			if (rc < 0)
				goto nomem;
			continue;
		}
		n = utf8_decode((const uint8_t *) text + i, len - i, &cp);
		if (n == 0)
		{
			snprintf(err, errlen, "invalid UTF-8 in text at byte %zu", i);
			goto fail;
		}
		i += (size_t) n;
		if (cp == 0 || cp == 0xFFFD || (props(cp) & TOKU_CTRL))
			continue;
		if (props(cp) & TOKU_WS)
		{
			if (cp_push(&pre, ' ') < 0)
				goto nomem;
			continue;
		}
		/* CJK compatibility ideographs get their spaces, then decompose */
		if (is_chinese(cp))
			rc = cp_push(&pre, ' ');
		if (rc == 0)
			rc = tok->lowercase ? push_decomposed(&pre, cp) : cp_push(&pre, cp);
		if (rc == 0 && is_chinese(cp))
			rc = cp_push(&pre, ' ');
		if (rc < 0)
			goto nomem;
	}
	if (!tok->lowercase)
	{
		*out = pre;
		return 0;
	}

	/* strip accents, then lower-case */
	if (canonical_order(&pre) < 0)
		goto nomem;
	for (size_t k = 0; k < pre.n; k++)
	{
		uint32_t	cp = pre.v[k];
		const toku_map *m;

		if (cp >= SPECIAL_BASE)
		{
			if (cp_push(out, cp) < 0)
				goto nomem;
			continue;
		}
		if (props(cp) & TOKU_MN)
			continue;
		if (cp < 128)
			m = NULL;
		else
			m = map_lookup(toku_lower, sizeof(toku_lower) / sizeof(toku_lower[0]), cp);
		if (!m)
		{
			if (cp_push(out, cp >= 'A' && cp <= 'Z' ? cp + 32 : cp) < 0)
				goto nomem;
			continue;
		}
		for (int j = 0; j < m->len; j++)
			if (cp_push(out, toku_lower_pool[m->off + j]) < 0)
				goto nomem;
	}
	free(pre.v);
	return 0;
nomem:
	snprintf(err, errlen, "out of memory tokenizing %zu bytes of text", len);
fail:
	free(pre.v);
	return -1;
}

/* Step 4 for one word (n code points at w): appends its WordPiece ids to
 * ids[*count..], at most cap in all; sets *full when one did not fit.
 * word is scratch space of at least 4 * n bytes. */
static void
wordpiece(const tokenizer *tok, const uint32_t *w, size_t n, char *word, int64_t *ids,
		  int *count, int cap, bool *full)
{
	int64_t		pieces[4 * MAX_WORD_CHARS];
	int			npieces = 0;
	size_t		blen = 0;
	size_t		start = 0;

	if (n > MAX_WORD_CHARS)
		goto unk;
	for (size_t i = 0; i < n; i++)
		blen += (size_t) utf8_encode(w[i], word + blen);
	while (start < blen)
	{
		size_t		end = blen;
		int32_t		t = -1;

		while (start < end)
		{
			t = start == 0 ? vocab_find(tok, "", 0, word, end)
				: vocab_find(tok, "##", 2, word + start, end - start);
			if (t >= 0)
				break;
			do
				end--;
			while (end > start && ((uint8_t) word[end] & 0xC0) == 0x80);
		}
		if (t < 0)
			goto unk;
		pieces[npieces++] = t;
		start = end;
	}
	for (int i = 0; i < npieces; i++)
	{
		if (*count == cap)
		{
			*full = true;
			return;
		}
		ids[(*count)++] = pieces[i];
	}
	return;
unk:
	if (*count == cap)
		*full = true;
	else
		ids[(*count)++] = tok->unk_id;
}

/* Encodes text as [CLS] tokens [SEP], cut to max_len ids with [SEP] kept
 * (what the library's truncation gives).  -1 with err on invalid UTF-8,
 * max_len < 2 or no memory. */
int
tokenizer_encode(const tokenizer *tok, const char *text, size_t len, int max_len,
				 int64_t *ids, bool *truncated, char *err, size_t errlen)
{
	cpbuf		norm = {0};
	char		word[4 * MAX_WORD_CHARS];
	int			count = 1;
	int			cap;
	bool		full = false;
	size_t		i = 0;

	if (truncated)
		*truncated = false;
	if (!tok || !ids || max_len < 2 || (!text && len > 0))
	{
		snprintf(err, errlen, "tokenizer_encode: bad arguments (max_len %d)", max_len);
		return -1;
	}
	if (normalize(tok, text, len, &norm, err, errlen) < 0)
	{
		free(norm.v);
		return -1;
	}

	/* Step 3: words end at white space and around punctuation. */
	ids[0] = tok->cls_id;
	cap = max_len - 1;
	while (i < norm.n && !full)
	{
		uint32_t	cp = norm.v[i];
		uint8_t		p;
		size_t		j;

		if (cp >= SPECIAL_BASE)
		{
			if (count == cap)
				full = true;
			else
				ids[count++] = tok->special_id[cp - SPECIAL_BASE];
			i++;
			continue;
		}
		p = props(cp);
		if (p & TOKU_WS)
		{
			i++;
			continue;
		}
		if (p & TOKU_PUNCT)
		{
			wordpiece(tok, &norm.v[i], 1, word, ids, &count, cap, &full);
			i++;
			continue;
		}
		j = i + 1;
		while (j < norm.n && norm.v[j] < SPECIAL_BASE && !(props(norm.v[j]) & (TOKU_WS | TOKU_PUNCT)))
			j++;
		wordpiece(tok, &norm.v[i], j - i, word, ids, &count, cap, &full);
		i = j;
	}
	free(norm.v);
	ids[count++] = tok->sep_id;
	if (truncated)
		*truncated = full;
	return count;
}
