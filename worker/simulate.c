/*
 * simulate.c
 *	  The simulated device: the profile reader, the sleeping model loader
 *	  and the sleeping fragment run (see simulate.h).
 *
 * The profile is JSON read by a small recursive-descent scanner that
 * knows the profile's shape and skips any other value.
 *
 * Threading: see simulate.h.
 */
#include "worker/simulate.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/protocol.h"
#include "worker/log.h"
#include "worker/model_calls.h"

typedef struct sim_model
{
	char		file[256];
	uint64_t	bytes;
	int			n_points;
	int			rows[SIM_MAX_POINTS];	/* ascending */
	double		ms[SIM_MAX_POINTS];
} sim_model;

struct sim_profile
{
	char		path[512];
	double		load_bandwidth; /* bytes per second */
	int			output_values;
	int			n_models;
	sim_model	models[SIM_MAX_MODELS];
};

/* The JSON scanner: text, position, and the first error. */
typedef struct scan
{
	const char *s;
	size_t		len;
	size_t		pos;
	char	   *err;
	size_t		errlen;
	int			failed;
} scan;

/* Records the first error (at the current offset); returns -1. */
static int
scan_fail(scan *sc, const char *what)
{
	if (!sc->failed)
		snprintf(sc->err, sc->errlen, "%s at offset %zu", what, sc->pos);
	sc->failed = 1;
	return -1;
}

/* Skips white space; returns the next character, or 0 at the end. */
static char
scan_peek(scan *sc)
{
	while (sc->pos < sc->len && strchr(" \t\r\n", sc->s[sc->pos]) != NULL)
		sc->pos++;
	return sc->pos < sc->len ? sc->s[sc->pos] : 0;
}

/* Consumes character c (after white space) or fails. */
static int
scan_expect(scan *sc, char c)
{
	char		msg[32];

	if (scan_peek(sc) == c)
	{
		sc->pos++;
		return 0;
	}
	snprintf(msg, sizeof(msg), "expected '%c'", c);
	return scan_fail(sc, msg);
}

/* A string into out (escapes kept as the escaped character; \u refused). */
static int
scan_string(scan *sc, char *out, size_t outlen)
{
	size_t		o = 0;

	if (scan_expect(sc, '"') != 0)
		return -1;
	while (sc->pos < sc->len && sc->s[sc->pos] != '"')
	{
		char		c = sc->s[sc->pos++];

		if (c == '\\')
		{
			if (sc->pos >= sc->len || sc->s[sc->pos] == 'u')
				return scan_fail(sc, "unsupported escape in a string");
			c = sc->s[sc->pos++];
			c = c == 'n' ? '\n' : c == 't' ? '\t' : c;
		}
		if (o + 1 >= outlen)
			return scan_fail(sc, "string too long");
		out[o++] = c;
	}
	if (sc->pos >= sc->len)
		return scan_fail(sc, "unterminated string");
	sc->pos++;
	out[o] = '\0';
	return 0;
}

/* A number. */
static int
scan_number(scan *sc, double *out)
{
	char		buf[64];
	size_t		n = 0;
	char	   *end;

	scan_peek(sc);
	while (sc->pos < sc->len && n + 1 < sizeof(buf) &&
		   strchr("+-0123456789.eE", sc->s[sc->pos]) != NULL)
		buf[n++] = sc->s[sc->pos++];
	buf[n] = '\0';
	errno = 0;
	*out = strtod(buf, &end);
	if (n == 0 || *end != '\0' || errno != 0)
		return scan_fail(sc, "expected a number");
	return 0;
}

/* Skips any value. */
static int
scan_skip(scan *sc, int depth)
{
	char		c = scan_peek(sc);
	char		tmp[1024];
	double		d;

	if (depth > 32)
		return scan_fail(sc, "nested too deeply");
	if (c == '"')
		return scan_string(sc, tmp, sizeof(tmp));
	if (c == '{' || c == '[')
	{
		char		close = c == '{' ? '}' : ']';

		sc->pos++;
		if (scan_peek(sc) == close)
		{
			sc->pos++;
			return 0;
		}
		for (;;)
		{
			if (c == '{' && (scan_string(sc, tmp, sizeof(tmp)) != 0 ||
							 scan_expect(sc, ':') != 0))
				return -1;
			if (scan_skip(sc, depth + 1) != 0)
				return -1;
			if (scan_peek(sc) == ',')
			{
				sc->pos++;
				continue;
			}
			return scan_expect(sc, close);
		}
	}
	for (const char *w = "true\0false\0null\0"; *w; w += strlen(w) + 1)
		if (sc->len - sc->pos >= strlen(w) && strncmp(sc->s + sc->pos, w, strlen(w)) == 0)
		{
			sc->pos += strlen(w);
			return 0;
		}
	return scan_number(sc, &d);
}

/* compute_ms: [[rows, ms], ...] into m, sorted by rows. */
static int
scan_points(scan *sc, sim_model *m)
{
	if (scan_expect(sc, '[') != 0)
		return -1;
	if (scan_peek(sc) == ']')
	{
		sc->pos++;
		return 0;
	}
	for (;;)
	{
		double		rows,
					ms;
		int			k;

		if (m->n_points == SIM_MAX_POINTS)
			return scan_fail(sc, "too many compute_ms points");
		if (scan_expect(sc, '[') != 0 || scan_number(sc, &rows) != 0 ||
			scan_expect(sc, ',') != 0 || scan_number(sc, &ms) != 0 ||
			scan_expect(sc, ']') != 0)
			return -1;
		if (rows < 1 || rows > 1e6 || rows != (int) rows || ms < 0 || ms > 3.6e6)
			return scan_fail(sc, "a compute_ms point must be [rows >= 1, 0 <= ms <= 3600000]");
		/* insertion in ascending order of rows */
		for (k = m->n_points; k > 0 && m->rows[k - 1] > (int) rows; k--)
		{
			m->rows[k] = m->rows[k - 1];
			m->ms[k] = m->ms[k - 1];
		}
		m->rows[k] = (int) rows;
		m->ms[k] = ms;
		m->n_points++;
		if (scan_peek(sc) == ',')
		{
			sc->pos++;
			continue;
		}
		return scan_expect(sc, ']');
	}
}

/* One model's object into m. */
static int
scan_model(scan *sc, sim_model *m)
{
	char		key[64];
	double		d;

	if (scan_expect(sc, '{') != 0)
		return -1;
	if (scan_peek(sc) == '}')
	{
		sc->pos++;
		return 0;
	}
	for (;;)
	{
		if (scan_string(sc, key, sizeof(key)) != 0 || scan_expect(sc, ':') != 0)
			return -1;
		if (strcmp(key, "bytes") == 0)
		{
			if (scan_number(sc, &d) != 0)
				return -1;
			if (d < 0 || d > 1e15)
				return scan_fail(sc, "bytes out of range");
			m->bytes = (uint64_t) d;
		}
		else if (strcmp(key, "compute_ms") == 0)
		{
			if (scan_points(sc, m) != 0)
				return -1;
		}
		else if (scan_skip(sc, 0) != 0)
			return -1;
		if (scan_peek(sc) == ',')
		{
			sc->pos++;
			continue;
		}
		return scan_expect(sc, '}');
	}
}

/* The top-level object into p. */
static int
scan_profile(scan *sc, sim_profile *p)
{
	char		key[256];
	double		d;

	if (scan_expect(sc, '{') != 0)
		return -1;
	for (;;)
	{
		if (scan_string(sc, key, sizeof(key)) != 0 || scan_expect(sc, ':') != 0)
			return -1;
		if (strcmp(key, "load_bandwidth") == 0)
		{
			if (scan_number(sc, &d) != 0)
				return -1;
			if (d <= 0)
				return scan_fail(sc, "load_bandwidth must be positive");
			p->load_bandwidth = d;
		}
		else if (strcmp(key, "output_values") == 0)
		{
			if (scan_number(sc, &d) != 0)
				return -1;
			if (d < 0 || d > 65536)
				return scan_fail(sc, "output_values must be from 0 to 65536");
			p->output_values = (int) d;
		}
		else if (strcmp(key, "models") == 0)
		{
			if (scan_expect(sc, '{') != 0)
				return -1;
			while (scan_peek(sc) != '}')
			{
				sim_model  *m;

				if (p->n_models == SIM_MAX_MODELS)
					return scan_fail(sc, "too many models");
				m = &p->models[p->n_models];
				if (scan_string(sc, m->file, sizeof(m->file)) != 0 ||
					scan_expect(sc, ':') != 0 || scan_model(sc, m) != 0)
					return -1;
				if (m->n_points == 0)
					return scan_fail(sc, "a model needs compute_ms points");
				p->n_models++;
				if (scan_peek(sc) == ',')
					sc->pos++;
			}
			sc->pos++;
		}
		else if (scan_skip(sc, 0) != 0)
			return -1;
		if (scan_peek(sc) == ',')
		{
			sc->pos++;
			continue;
		}
		return scan_expect(sc, '}');
	}
}

/* Reads and checks the profile; see simulate.h. */
sim_profile *
sim_profile_load(const char *path, char *err, size_t errlen)
{
	sim_profile *p = NULL;
	FILE	   *f = NULL;
	char	   *buf = NULL;
	size_t		len;
	char		serr[256];
	scan		sc;

	p = calloc(1, sizeof(*p));
	buf = malloc(SIM_MAX_PROFILE_BYTES + 1);
	if (p == NULL || buf == NULL)
	{
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	f = fopen(path, "rb");
	if (f == NULL)
	{
		snprintf(err, errlen, "could not open simulation profile \"%s\": %s",
				 path, strerror(errno));
		goto fail;
	}
	len = fread(buf, 1, SIM_MAX_PROFILE_BYTES + 1, f);
	if (len > SIM_MAX_PROFILE_BYTES)
	{
		snprintf(err, errlen, "simulation profile \"%s\" is larger than %d bytes",
				 path, SIM_MAX_PROFILE_BYTES);
		goto fail;
	}
	snprintf(p->path, sizeof(p->path), "%s", path);
	p->load_bandwidth = 1e9;
	p->output_values = 8;
	memset(&sc, 0, sizeof(sc));
	sc.s = buf;
	sc.len = len;
	sc.err = serr;
	sc.errlen = sizeof(serr);
	if (scan_profile(&sc, p) != 0)
	{
		snprintf(err, errlen, "simulation profile \"%s\": %s", path, serr);
		goto fail;
	}
	fclose(f);
	free(buf);
	return p;

fail:
	if (f != NULL)
		fclose(f);
	free(buf);
	free(p);
	return NULL;
}

/* Frees *pp. */
void
sim_profile_destroy(sim_profile **pp)
{
	if (pp == NULL)
		return;
	free(*pp);
	*pp = NULL;
}

/* Number of models. */
int
sim_profile_n_models(const sim_profile *p)
{
	return p->n_models;
}

/* The profile's model of file, or NULL. */
static const sim_model *
find_model(const sim_profile *p, const char *file)
{
	for (int i = 0; i < p->n_models; i++)
		if (strcmp(p->models[i].file, file) == 0)
			return &p->models[i];
	return NULL;
}

/* Simulated compute ms of file over rows (see simulate.h); -1 unknown. */
double
sim_profile_compute_ms(const sim_profile *p, const char *file, int rows)
{
	const sim_model *m = find_model(p, file);
	int			k;

	if (m == NULL)
		return -1;
	if (rows <= m->rows[0])
		return m->ms[0];
	for (k = 1; k < m->n_points; k++)
		if (rows <= m->rows[k])
			return m->ms[k - 1] + (m->ms[k] - m->ms[k - 1]) *
				(rows - m->rows[k - 1]) / (double) (m->rows[k] - m->rows[k - 1]);
	return m->ms[m->n_points - 1] * rows / (double) m->rows[m->n_points - 1];
}

/*
 * Sleeps ms milliseconds (in slices of at most 20 ms, so that stop is
 * seen); -1 when stopped.  Each slice sleeps until an absolute time on the
 * monotonic clock, the end of the whole sleep at most: a late wake-up (a
 * busy host) delays the next slice's start, not the end, so the lateness
 * of the slices does not add up.  Measured under bench/placement's bursts
 * (128 backends on 2 cores), relative slices made a 182 ms run of opt take
 * 324 ms.
 */
static int
sleep_ms(double ms, volatile sig_atomic_t *stop)
{
	int64_t		end;

	if (!(ms > 0))
		return 0;
	end = ie_now_ns() + (int64_t) ((ms < 1e9 ? ms : 1e9) * 1e6);	/* 11.6 days at most */
	for (;;)
	{
		int64_t		now = ie_now_ns();
		int64_t		until = end - now < 20000000 ? end : now + 20000000;
		struct timespec ts;

		if (now >= end)
			return 0;
		if (stop != NULL && *stop)
			return -1;
		ts.tv_sec = (time_t) (until / 1000000000);
		ts.tv_nsec = (long) (until % 1000000000);
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
	}
}

/* The model_loader's size(): the profile's bytes, or -1 for an unknown file. */
static int
loader_size(void *ctx, const char *file, uint64_t *bytes, char *err, size_t errlen)
{
	const sim_profile *p = ctx;
	const sim_model *m = find_model(p, file);

	if (m == NULL)
	{
		snprintf(err, errlen, "model file \"%s\" is not in the simulation profile \"%s\"",
				 file, p->path);
		return -1;
	}
	*bytes = m->bytes;
	return 0;
}

/* The model_loader's load(): sleeps bytes / load_bandwidth. */
static int
loader_load(void *ctx, const char *file, char *err, size_t errlen)
{
	const sim_profile *p = ctx;
	const sim_model *m = find_model(p, file);

	if (m == NULL)
		return loader_size(ctx, file, NULL, err, errlen);
	sleep_ms(m->bytes / p->load_bandwidth * 1000.0, NULL);
	return 0;
}

/* Makes mc load through the profile; see simulate.h. */
void
sim_attach(sim_profile *p, model_cache *mc)
{
	model_loader l = {loader_size, loader_load, p};

	model_cache_set_loader(mc, &l);
	for (int i = 0; i < p->n_models; i++)
		model_cache_declare(mc, p->models[i].file, p->models[i].bytes,
							p->models[i].bytes / p->load_bandwidth * 1000.0);
}

/* The stages of a fragment chain, in order, into st; returns their count. */
static int
chain_stages(const Pginfer__Fragment *f, const Pginfer__Fragment **st, int max)
{
	int			n = 0;

	for (; f != NULL && n < max; f = f->next)
		st[n++] = f;
	return n;
}

/* strdup that gives protobuf-c's empty string when memory runs out. */
static char *
dup_or_empty(const char *s)
{
	char	   *d = strdup(s);

	return d != NULL ? d : (char *) protobuf_c_empty_string;
}

/* Fills row k of r (request row i, fragment block f) with the placeholder answer. */
static int
fill_row(const sim_profile *p, fragment_result *r, int k, int f, uint64_t row_id,
		 const Pginfer__Fragment *last, const void *row, size_t row_len)
{
	Pginfer__RowResult *rr = &r->rows[k];
	const Pginfer__ModelSpec *m = last->n_models > 0 ?
		last->models[last->n_models - 1] : NULL;
	const char *name = m == NULL ? "" : m->name[0] != '\0' ? m->name : m->file;
	uint8_t		d[32];
	char		buf[512];

	rr->row_id = row_id;
	rr->ok = 1;
	rr->fragment = (uint32_t) f;
	model_sha256(row, row_len, d);
	switch (last->kind)
	{
		case PGINFER__FRAGMENT_KIND__FRAG_PREDICT:
		case PGINFER__FRAGMENT_KIND__FRAG_EMBED_TEXT:
			rr->n_values = (uint32_t) p->output_values;
			r->n_values[k] = (size_t) p->output_values;
			if (p->output_values > 0)
			{
				r->values[k] = calloc((size_t) p->output_values, sizeof(float));
				if (r->values[k] == NULL)
					return -1;
			}
			break;
		case PGINFER__FRAGMENT_KIND__FRAG_DETECT_TEXT:
			snprintf(buf, sizeof(buf),
					 "{\"sim\":\"%s:%02x%02x%02x%02x%02x%02x%02x%02x\"}", name,
					 d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]);
			rr->json = dup_or_empty(buf);
			break;
		default:
			snprintf(buf, sizeof(buf), "sim:%s:%02x%02x%02x%02x%02x%02x%02x%02x",
					 name, d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]);
			rr->text = dup_or_empty(buf);
			break;
	}
	return 0;
}

/* Fragment f (0: fragment, else more_fragments[f - 1]) of run; NULL if none. */
static const Pginfer__Fragment *
run_fragment(const Pginfer__RunFragment *run, int f)
{
	if (f == 0)
		return run->fragment;
	for (size_t i = 0; i < run->n_more_fragments; i++)
		if (run->more_fragments[i] != NULL && --f == 0)
			return run->more_fragments[i];
	return NULL;
}

/* The simulated fragment run; see simulate.h. */
int
sim_run(sim_profile *p, model_cache *mc, const Pginfer__RunFragment *run,
		const Pginfer__RunFragment *const *row_runs,
		const void *const *rows, const size_t *rows_len, int n_rows,
		int max_batch, volatile sig_atomic_t *stop,
		state_sample *samples, int max_samples, int *n_samples,
		fragment_result **out, const char **sqlstate, char *err, size_t errlen)
{
	const Pginfer__Fragment *frags[1 + 64];
	int			nf = 0;
	fragment_result *r = NULL;
	double		t0 = model_calls_now_ms();

	*out = NULL;
	*n_samples = 0;
	if (max_batch < 1)
		max_batch = 1;
	*sqlstate = PGINFER_SQLSTATE_PROTOCOL;
	if (run->fragment == NULL || (int) run->n_row_ids != n_rows)
	{
		snprintf(err, errlen, "request with %zu row ids and %d rows",
				 run->n_row_ids, n_rows);
		return -1;
	}
	frags[nf++] = run->fragment;
	for (size_t i = 0; i < run->n_more_fragments && nf < 65; i++)
		if (run->more_fragments[i] != NULL)
			frags[nf++] = run->more_fragments[i];

	/* Every stage of every fragment: load its models, then compute. */
	for (int f = 0; f < nf; f++)
	{
		const Pginfer__Fragment *st[16];
		int			ns = chain_stages(frags[f], st, 16);

		for (int s = 0; s < ns; s++)
		{
			for (size_t m = 0; m < st[s]->n_models; m++)
			{
				const Pginfer__ModelSpec *spec = st[s]->models[m];

				if (spec == NULL || spec->file[0] == '\0')
					continue;
				if (model_cache_acquire(mc, spec, NULL, sqlstate, err, errlen) != 0)
					return -1;
			}
			for (size_t m = 0; m < st[s]->n_models; m++)
			{
				const Pginfer__ModelSpec *spec = st[s]->models[m];

				if (spec == NULL || spec->file[0] == '\0')
					continue;
				for (int off = 0; off < n_rows; off += max_batch)
				{
					int			chunk = n_rows - off < max_batch ? n_rows - off : max_batch;
					double		want = sim_profile_compute_ms(p, spec->file, chunk);
					double		t1 = model_calls_now_ms();

					if (want < 0)
						want = 0;
					if (sleep_ms(want, stop) != 0)
					{
						*sqlstate = FRAGMENT_SQLSTATE_SHUTDOWN;
						snprintf(err, errlen, "the run was stopped in a model call");
						return -1;
					}
					if (*n_samples < max_samples)
					{
						state_sample *smp = &samples[(*n_samples)++];

						snprintf(smp->file, sizeof(smp->file), "%s", spec->file);
						smp->rows = chunk;
						smp->ms = model_calls_now_ms() - t1;
					}
				}
			}
		}
	}

	r = fragment_result_new(n_rows * nf);
	if (r == NULL)
		goto oom;
	r->n_fragments = nf;
	for (int f = 0; f < nf; f++)
		for (int i = 0; i < n_rows; i++)
		{
			const Pginfer__Fragment *last = row_runs != NULL ?
				run_fragment(row_runs[i], f) : NULL;

			if (last == NULL)
				last = frags[f];
			while (last->next != NULL)
				last = last->next;
			if (fill_row(p, r, f * n_rows + i, f, run->row_ids[i], last,
						 rows[i], rows_len[i]) != 0)
				goto oom;
		}
	r->compute_ms = model_calls_now_ms() - t0;
	*out = r;
	return 0;

oom:
	fragment_result_destroy(&r);
	*sqlstate = PGINFER_SQLSTATE_OUT_OF_MEMORY;
	snprintf(err, errlen, "out of memory for a simulated result of %d rows", n_rows);
	return -1;
}
