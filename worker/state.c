/*
 * state.c
 *	  The worker's state publisher, compute timings and host memory (see
 *	  state.h).
 *
 * Threading: one thread owns each object (see state.h).
 */
#include "worker/state.h"

#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "common/protocol.h"
#include "worker/curve.h"
#include "worker/engine/engine.h"
#include "worker/log.h"

struct state_pub
{
	void	   *sock;			/* PUB */
	char	   *endpoint;
	int64_t		last_us;		/* when the last message went; 0: never */
	int			dirty;			/* changed since the last message */
};

typedef struct timing
{
	char	   *file;
	int			rows;
	double		ms;
	uint64_t	runs;
	uint64_t	stamp;			/* update order, for replacing the oldest */
} timing;

struct state_timings
{
	timing		t[STATE_MAX_TIMINGS];
	int			n;
	uint64_t	clock;
};

/* Default state endpoint; see state.h. */
int
state_default_endpoint(const char *request_endpoint, char *buf, size_t buflen)
{
	int			n;

	if (strncmp(request_endpoint, "tcp://", 6) == 0)
	{
		const char *host = request_endpoint + 6;
		const char *colon = strrchr(host, ':');
		int			hlen = colon != NULL ? (int) (colon - host) : (int) strlen(host);

		n = snprintf(buf, buflen, "tcp://%.*s:*", hlen, host);
	}
	else
		n = snprintf(buf, buflen, "%s.state", request_endpoint);
	return n >= 0 && (size_t) n < buflen ? 0 : -1;
}

/* New publisher bound to endpoint; see state.h. */
state_pub *
state_pub_new(void *ctx, const char *endpoint, char *err, size_t errlen)
{
	state_pub  *p = calloc(1, sizeof(*p));
	int			hwm = STATE_SNDHWM;
	int			linger = 0;
	char		last[256];
	size_t		last_len = sizeof(last);

	if (p == NULL)
	{
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	p->sock = zmq_socket(ctx, ZMQ_PUB);
	if (p->sock == NULL)
	{
		snprintf(err, errlen, "could not create a PUB socket: %s", zmq_strerror(errno));
		goto fail;
	}
	zmq_setsockopt(p->sock, ZMQ_SNDHWM, &hwm, sizeof(hwm));
	zmq_setsockopt(p->sock, ZMQ_LINGER, &linger, sizeof(linger));
	/* a CURVE server like the request socket, when CURVE is on */
	if (curve_apply_server(p->sock, err, errlen) != 0)
		goto fail;
	if (zmq_bind(p->sock, endpoint) != 0)
	{
		snprintf(err, errlen, "could not bind the state socket to \"%s\": %s",
				 endpoint, zmq_strerror(errno));
		goto fail;
	}
	if (zmq_getsockopt(p->sock, ZMQ_LAST_ENDPOINT, last, &last_len) != 0)
		snprintf(last, sizeof(last), "%s", endpoint);
	p->endpoint = strdup(last);
	if (p->endpoint == NULL)
	{
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	p->dirty = 1;
	return p;

fail:
	state_pub_destroy(&p);
	return NULL;
}

/* Closes the socket; sets *pp to NULL. */
void
state_pub_destroy(state_pub **pp)
{
	if (pp == NULL || *pp == NULL)
		return;
	if ((*pp)->sock != NULL)
		zmq_close((*pp)->sock);
	free((*pp)->endpoint);
	free(*pp);
	*pp = NULL;
}

/* The bound endpoint. */
const char *
state_pub_endpoint(const state_pub *p)
{
	return p->endpoint;
}

/* Notes a change. */
void
state_pub_changed(state_pub *p)
{
	p->dirty = 1;
}

/* Milliseconds until the next message is due. */
int
state_pub_wait_ms(const state_pub *p, int64_t now_us)
{
	/* 80% of the period: wake-ups on a busy host come late. */
	int64_t		gap_us = p->dirty ? PGINFER_STATE_COALESCE_MS * (int64_t) 1000 :
		PGINFER_STATE_PERIOD_MS * (int64_t) 800;
	int64_t		left;

	if (p->last_us == 0)
		return 0;
	left = p->last_us + gap_us - now_us;
	return left <= 0 ? 0 : (int) ((left + 999) / 1000);
}

/* Whether a message is due now. */
int
state_pub_due(const state_pub *p, int64_t now_us)
{
	return state_pub_wait_ms(p, now_us) == 0;
}

/* Publishes one state message without blocking; see state.h. */
int
state_pub_send(state_pub *p, const void *buf, size_t len, int64_t now_us)
{
	int			rc;

	p->last_us = now_us;
	p->dirty = 0;
	/* sent again when a signal interrupts it (the SIGCONT handler, say) */
	while ((rc = zmq_send(p->sock, buf, len, ZMQ_DONTWAIT)) < 0 &&
		   zmq_errno() == EINTR)
		;
	if (rc < 0)
	{
		if (zmq_errno() != EAGAIN)
			log_debug("state message dropped: %s", zmq_strerror(zmq_errno()));
		return -1;
	}
	return 0;
}

/* New empty timings table. */
state_timings *
state_timings_new(void)
{
	return calloc(1, sizeof(state_timings));
}

/* Frees *tp and its strings. */
void
state_timings_destroy(state_timings **tp)
{
	if (tp == NULL || *tp == NULL)
		return;
	for (int i = 0; i < (*tp)->n; i++)
		free((*tp)->t[i].file);
	free(*tp);
	*tp = NULL;
}

/* Folds one run into the table (EWMA per file and batch size). */
void
state_timings_record(state_timings *t, const char *file, int rows, double ms)
{
	timing	   *slot = NULL;

	if (file == NULL || file[0] == '\0' || rows <= 0 || ms < 0)
		return;
	for (int i = 0; i < t->n; i++)
		if (t->t[i].rows == rows && strcmp(t->t[i].file, file) == 0)
		{
			slot = &t->t[i];
			/* one stall moves the mean by at most alpha x (step - 1) */
			if (slot->ms > 0 && ms > STATE_EWMA_MAX_STEP * slot->ms)
				ms = STATE_EWMA_MAX_STEP * slot->ms;
			slot->ms = (1 - STATE_EWMA_ALPHA) * slot->ms + STATE_EWMA_ALPHA * ms;
			slot->runs++;
			slot->stamp = ++t->clock;
			return;
		}
	if (t->n < STATE_MAX_TIMINGS)
		slot = &t->t[t->n++];
	else
	{
		slot = &t->t[0];
		for (int i = 1; i < t->n; i++)
			if (t->t[i].stamp < slot->stamp)
				slot = &t->t[i];
		free(slot->file);
	}
	slot->file = strdup(file);
	if (slot->file == NULL)
	{
		/* Out of memory: forget the slot rather than keep a nameless one. */
		*slot = t->t[--t->n];
		return;
	}
	slot->rows = rows;
	slot->ms = ms;
	slot->runs = 1;
	slot->stamp = ++t->clock;
}

/* Estimated ms for file over rows; -1 without a timing. */
double
state_timings_estimate(const state_timings *t, const char *file, int rows)
{
	const timing *lo = NULL,
			   *hi = NULL,
			   *max = NULL;

	for (int i = 0; i < t->n; i++)
	{
		const timing *x = &t->t[i];

		if (strcmp(x->file, file) != 0)
			continue;
		if (x->rows == rows)
			return x->ms;
		if (x->rows < rows && (lo == NULL || x->rows > lo->rows))
			lo = x;
		if (x->rows > rows && (hi == NULL || x->rows < hi->rows))
			hi = x;
		if (max == NULL || x->rows > max->rows)
			max = x;
	}
	if (max == NULL)
		return -1;
	if (lo != NULL && hi != NULL)
		return lo->ms + (hi->ms - lo->ms) * (rows - lo->rows) / (double) (hi->rows - lo->rows);
	if (hi != NULL)				/* below every measured size */
		return hi->ms;
	return max->ms * rows / (double) max->rows;	/* beyond the largest */
}

/*
 * The order of t's entries in the list, into order[0..t->n): first each
 * model's smallest and largest measured batch size (the two that bound
 * every estimate), models in table order, then the others by batch size,
 * so that a reader that keeps only the first entries (the pool keeps 32)
 * still has every model.  O(n^2) over at most STATE_MAX_TIMINGS entries.
 */
static void
timing_order(const state_timings *t, int *order)
{
	char		taken[STATE_MAX_TIMINGS] = {0};
	int			n = 0,
				rest;

	for (int i = 0; i < t->n; i++)
	{
		int			lo = i,
					hi = i,
					seen = 0;

		for (int j = 0; j < t->n && !seen; j++)
			if (strcmp(t->t[j].file, t->t[i].file) == 0)
			{
				seen = j < i;	/* the model's first entry did it */
				lo = t->t[j].rows < t->t[lo].rows ? j : lo;
				hi = t->t[j].rows > t->t[hi].rows ? j : hi;
			}
		if (seen)
			continue;
		order[n++] = lo;
		taken[lo] = 1;
		if (hi != lo)
		{
			order[n++] = hi;
			taken[hi] = 1;
		}
	}
	rest = n;
	for (int i = 0; i < t->n; i++)
	{
		int			k;

		if (taken[i])
			continue;
		for (k = n; k > rest && t->t[order[k - 1]].rows > t->t[i].rows; k--)
			order[k] = order[k - 1];
		order[k] = i;
		n++;
	}
}

/* The table as ModelTiming messages; see state.h. */
int
state_timings_list(const state_timings *t, Pginfer__ModelTiming ***out, size_t *n)
{
	size_t		k = t->n > 0 ? (size_t) t->n : 1;
	Pginfer__ModelTiming **ptrs = calloc(k, sizeof(*ptrs));
	Pginfer__ModelTiming *block = calloc(k, sizeof(*block));
	int			order[STATE_MAX_TIMINGS];

	*out = NULL;
	*n = 0;
	if (ptrs == NULL || block == NULL)
	{
		free(ptrs);
		free(block);
		return -1;
	}
	if (t->n == 0)
	{
		free(block);
		free(ptrs);
		return 0;
	}
	timing_order(t, order);
	for (int i = 0; i < t->n; i++)
	{
		Pginfer__ModelTiming init = PGINFER__MODEL_TIMING__INIT;
		const timing *x = &t->t[order[i]];

		block[i] = init;
		block[i].file = x->file;
		block[i].batch_size = (uint32_t) x->rows;
		block[i].ms = x->ms;
		block[i].runs = x->runs;
		ptrs[i] = &block[i];
	}
	*out = ptrs;
	*n = (size_t) t->n;
	return 0;
}

/* Frees a list from state_timings_list. */
void
state_timings_free_list(Pginfer__ModelTiming **list)
{
	if (list == NULL)
		return;
	free(list[0]);				/* the block */
	free(list);
}

/* mc's residency counters into st; see state.h. */
void
state_model_counters(Pginfer__WorkerState *st, model_cache *mc)
{
	model_cache_counts c = model_cache_get_counts(mc);

	st->model_loads = c.loads;
	st->model_evictions = c.evictions;
	st->model_hits = c.hits;
	st->model_misses = c.misses;
}

/*
 * On a CUDA device: st's device name ("cuda:N") and its GPU memory from
 * cudaMemGetInfo (total, free); gpu_memory_cap stays the model cache's.
 * On the CPU st is left as it is.  See state.h.
 */
void
state_device_memory(Pginfer__WorkerState *st)
{
	static char name[32];		/* the device never changes after start */
	static bool warned = false;	/* the state thread is the only caller */
	int			device = ie_get_device();
	uint64_t	free_bytes,
				total_bytes;
	char		err[256];

	if (device == IE_DEVICE_CPU)
		return;
	ie_device_str(device, name, sizeof(name));
	st->device = name;
	if (ie_device_memory(device, &free_bytes, &total_bytes, err, sizeof(err)) != 0)
	{
		if (!warned)
			log_warn("cannot read the memory of %s: %s", name, err);
		warned = true;
		return;
	}
	st->gpu_memory_total = total_bytes;
	st->gpu_memory_free = free_bytes;
	if (st->gpu_memory_cap == 0 || st->gpu_memory_cap > total_bytes)
		st->gpu_memory_cap = total_bytes;
}

/* MemTotal and MemAvailable from /proc/meminfo, in bytes. */
int
state_host_memory(uint64_t *total, uint64_t *available)
{
	FILE	   *f = fopen("/proc/meminfo", "r");
	char		line[256];
	int			got = 0;

	*total = 0;
	*available = 0;
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL && got < 2)
	{
		unsigned long long kb;

		if (sscanf(line, "MemTotal: %llu kB", &kb) == 1)
		{
			*total = (uint64_t) kb * 1024;
			got++;
		}
		else if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
		{
			*available = (uint64_t) kb * 1024;
			got++;
		}
	}
	fclose(f);
	return got == 2 ? 0 : -1;
}

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STATE_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define STATE_ASAN 1
#endif

/* The allocator's bytes in use; see state.h. */
uint64_t
state_heap_bytes(void)
{
#if defined(STATE_ASAN)
	return 0;
#else
	struct mallinfo2 mi = mallinfo2();

	return (uint64_t) mi.uordblks + (uint64_t) mi.hblkhd;
#endif
}
