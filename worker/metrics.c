/*
 * metrics.c
 *	  The operators' HTTP endpoint: /metrics, /state.json and the dashboard
 *	  (see metrics.h).
 *
 * Locking: the one mutex, lock, guards the struct metrics_state M (the
 * counters, the histograms, the per-model table, the last state message
 * and the history).  The server loop takes it for a few stores per event;
 * an HTTP request takes it to copy M's numbers and the state message into
 * a snapshot, then unpacks and formats that without it.  M.address (the
 * port is known only once bound) is under the lock too.  M.daemon,
 * M.endpoint, M.peers and M.t0_ns are written only while no HTTP thread runs
 * (before MHD_start_daemon, after MHD_stop_daemon).
 */
#include "worker/metrics.h"

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/pg_infer.pb-c.h"
#include "common/protocol.h"
#include "worker/engine/engine.h"
#include "worker/log.h"

/* Upper bounds of the duration histograms' buckets, in seconds. */
static const double bucket_bounds[] = {
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60
};
#define N_BUCKETS ((int) (sizeof(bucket_bounds) / sizeof(bucket_bounds[0])))

/* Most models with their own counters (further ones are not counted apart). */
#define METRICS_MAX_MODELS 64
/* Seconds of history kept for the dashboard, one sample a second. */
#define HISTORY_LEN 300

typedef struct histogram
{
	uint64_t	counts[N_BUCKETS + 1];	/* per bucket (not cumulative); last: +Inf */
	uint64_t	count;
	double		sum;
} histogram;

typedef struct model_counters
{
	char		file[256];
	uint64_t	calls;
	uint64_t	rows;
	double		seconds;
} model_counters;

typedef struct history_point
{
	double		t;				/* seconds since metrics_start */
	uint64_t	rows;			/* inferences_total then */
	uint32_t	queue;
	double		backlog_ms;
} history_point;

/* Everything the loop writes and the HTTP thread reads (under lock). */
typedef struct counters
{
	uint64_t	requests;
	uint64_t	request_failures;
	uint64_t	inferences;
	uint64_t	row_failures;
	uint64_t	executions;
	histogram	queue;
	histogram	compute;
	model_counters models[METRICS_MAX_MODELS];
	int			n_models;
	history_point history[HISTORY_LEN];
	int			n_history;		/* samples held */
	int			history_head;	/* index of the oldest */
} counters;

static struct metrics_state
{
	pthread_mutex_t lock;
	int			started;		/* under lock: hooks count only then */
	counters	c;				/* under lock */
	uint8_t    *state;			/* under lock: last packed MSG_STATE, or NULL */
	size_t		state_len;
	struct MHD_Daemon *daemon;
	char		address[300];	/* bound HOST:PORT */
	char		endpoint[300];	/* the worker's request endpoint */
	char	   *peers;			/* --dashboard-peers, or NULL */
	int64_t		t0_ns;			/* metrics_start's time (ie_now_ns) */
}			M = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* A growing text buffer; on out of memory it stays short and says so. */
typedef struct strbuf
{
	char	   *data;
	size_t		len;
	size_t		cap;
	int			oom;
} strbuf;

/* Appends printf-formatted text to b. */
static void
sb_printf(strbuf *b, const char *fmt,...) __attribute__((format(printf, 2, 3)));

static void
sb_printf(strbuf *b, const char *fmt,...)
{
	va_list		ap;
	int			n;

	if (b->oom)
		return;
	for (;;)
	{
		size_t		room = b->cap - b->len;

		va_start(ap, fmt);
		n = vsnprintf(b->data != NULL ? b->data + b->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0)
		{
			b->oom = 1;
			return;
		}
		if ((size_t) n < room)
		{
			b->len += (size_t) n;
			return;
		}
		{
			size_t		ncap = (b->cap + (size_t) n + 1) * 2;
			char	   *p = realloc(b->data, ncap);

			if (p == NULL)
			{
				b->oom = 1;
				return;
			}
			b->data = p;
			b->cap = ncap;
		}
	}
}

/* Appends s as a JSON string (quoted, escaped). */
static void
sb_json_string(strbuf *b, const char *s)
{
	sb_printf(b, "\"");
	for (const unsigned char *p = (const unsigned char *) (s != NULL ? s : ""); *p; p++)
	{
		if (*p == '"' || *p == '\\')
			sb_printf(b, "\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f)
			sb_printf(b, "\\u%04x", *p);
		else if (*p == '<')
			sb_printf(b, "\\u003c");	/* never closes a script tag */
		else
			sb_printf(b, "%c", *p);
	}
	sb_printf(b, "\"");
}

/* Appends s as a Prometheus label value (quoted; \\, \" and \n escaped). */
static void
sb_label(strbuf *b, const char *s)
{
	sb_printf(b, "\"");
	for (const char *p = s != NULL ? s : ""; *p; p++)
	{
		if (*p == '"' || *p == '\\')
			sb_printf(b, "\\%c", *p);
		else if (*p == '\n')
			sb_printf(b, "\\n");
		else
			sb_printf(b, "%c", *p);
	}
	sb_printf(b, "\"");
}

/* Seconds since metrics_start on the monotonic clock. */
static double
since_start(void)
{
	return (double) (ie_now_ns() - M.t0_ns) / 1e9;
}

/* Adds one observation of v seconds to h. */
static void
histogram_observe(histogram *h, double v)
{
	int			i = 0;

	if (v < 0)
		v = 0;
	while (i < N_BUCKETS && v > bucket_bounds[i])
		i++;
	h->counts[i]++;
	h->count++;
	h->sum += v;
}

/*
 * Splits addr ("HOST:PORT" or "[V6]:PORT") into host and port; -1 with
 * err when it is not one.
 */
static int
split_address(const char *addr, char *host, size_t hostlen, long *port,
			  char *err, size_t errlen)
{
	const char *colon;
	const char *h = addr;
	size_t		hl;
	char	   *end;

	if (addr[0] == '[')
	{
		const char *close = strchr(addr, ']');

		if (close == NULL || close[1] != ':')
			goto bad;
		h = addr + 1;
		hl = (size_t) (close - h);
		colon = close + 1;
	}
	else
	{
		colon = strrchr(addr, ':');
		if (colon == NULL || memchr(addr, ':', (size_t) (colon - addr)) != NULL)
			goto bad;
		hl = (size_t) (colon - addr);
	}
	if (hl == 0 || hl >= hostlen)
		goto bad;
	memcpy(host, h, hl);
	host[hl] = '\0';
	errno = 0;
	*port = strtol(colon + 1, &end, 10);
	if (colon[1] == '\0' || *end != '\0' || errno != 0 || *port < 0 || *port > 65535)
		goto bad;
	return 0;

bad:
	snprintf(err, errlen, "expected HOST:PORT such as 127.0.0.1:9464 (PORT from 0 to 65535, 0: any free port), not \"%s\"", addr);
	return -1;
}

/* Checks an address; see metrics.h. */
int
metrics_check_address(const char *addr, char *err, size_t errlen)
{
	char		host[256];
	long		port;

	return split_address(addr, host, sizeof(host), &port, err, errlen);
}

/* A snapshot of M for one HTTP answer (counters and the state, unpacked). */
typedef struct snapshot
{
	counters	c;
	Pginfer__Header *h;			/* the last state message, or NULL */
	double		t;				/* since_start() */
	char		address[300];	/* M.address */
} snapshot;

/* Copies M under the lock and unpacks the state outside it. */
static snapshot *
snapshot_take(void)
{
	snapshot   *s = calloc(1, sizeof(*s));
	uint8_t    *state = NULL;
	size_t		len = 0;

	if (s == NULL)
		return NULL;
	pthread_mutex_lock(&M.lock);
	s->c = M.c;
	memcpy(s->address, M.address, sizeof(s->address));
	if (M.state != NULL && (state = malloc(M.state_len)) != NULL)
	{
		memcpy(state, M.state, M.state_len);
		len = M.state_len;
	}
	pthread_mutex_unlock(&M.lock);
	s->t = since_start();
	if (state != NULL)
	{
		s->h = pginfer__header__unpack(NULL, len, state);
		if (s->h != NULL && s->h->state == NULL)
		{
			pginfer__header__free_unpacked(s->h, NULL);
			s->h = NULL;
		}
	}
	free(state);
	return s;
}

/* Frees a snapshot. */
static void
snapshot_free(snapshot *s)
{
	if (s == NULL)
		return;
	if (s->h != NULL)
		pginfer__header__free_unpacked(s->h, NULL);
	free(s);
}

/* Writes # HELP and # TYPE of one metric. */
static void
prom_head(strbuf *b, const char *name, const char *type, const char *help)
{
	sb_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/*
 * A sample's value and the line's end: counts and bytes exactly (an
 * integral value within 2^53, as a uint64 counter up to that is), times
 * and ratios to 10 digits.
 */
static void
sb_value(strbuf *b, double v)
{
	if (fabs(v) < 9007199254740992.0 && v == (double) (long long) v)
		sb_printf(b, "%lld\n", (long long) v);
	else
		sb_printf(b, "%.10g\n", v);
}

/* One metric of one sample without labels. */
static void
prom_one(strbuf *b, const char *name, const char *type, const char *help,
		 double v)
{
	prom_head(b, name, type, help);
	sb_printf(b, "%s ", name);
	sb_value(b, v);
}

/* One sample of name labelled with model file: name{model="file"} value. */
static void
prom_model(strbuf *b, const char *name, const char *file, double v)
{
	sb_printf(b, "%s{model=", name);
	sb_label(b, file);
	sb_printf(b, "} ");
	sb_value(b, v);
}

/* A histogram in Prometheus form: cumulative buckets, _sum, _count. */
static void
prom_histogram(strbuf *b, const char *name, const char *help,
			   const histogram *h)
{
	uint64_t	cum = 0;

	prom_head(b, name, "histogram", help);
	for (int i = 0; i < N_BUCKETS; i++)
	{
		cum += h->counts[i];
		sb_printf(b, "%s_bucket{le=\"%g\"} %llu\n", name, bucket_bounds[i],
				  (unsigned long long) cum);
	}
	sb_printf(b, "%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long) h->count);
	sb_printf(b, "%s_sum %.10g\n%s_count %llu\n", name, h->sum, name,
			  (unsigned long long) h->count);
}

/* The /metrics page of snapshot s. */
static void
render_metrics(strbuf *b, const snapshot *s)
{
	const counters *c = &s->c;
	const Pginfer__WorkerState *st = s->h != NULL ? s->h->state : NULL;

	prom_head(b, "infer_worker_info", "gauge",
			  "Always 1; the labels name the worker (worker_id is HOST:PID), its request endpoint and device, and its release.");
	sb_printf(b, "infer_worker_info{worker_id=");
	sb_label(b, st != NULL ? st->worker_id : "");
	sb_printf(b, ",endpoint=");
	sb_label(b, M.endpoint);
	sb_printf(b, ",device=");
	sb_label(b, st != NULL ? st->device : "");
	sb_printf(b, ",protocol_version=\"%d\",version=\"%s\"} 1\n",
			  PGINFER_PROTOCOL_VERSION, PGINFER_RELEASE);

	prom_one(b, "infer_worker_requests_total", "counter",
			 "Inference requests (MSG_RUN_FRAGMENT) answered, with results or an error.",
			 (double) c->requests);
	prom_one(b, "infer_worker_request_failures_total", "counter",
			 "Inference requests answered with an error (MSG_ERROR) as a whole.",
			 (double) c->request_failures);
	prom_one(b, "infer_worker_inferences_total", "counter",
			 "Rows of the requests answered with results (each row one inference).",
			 (double) c->inferences);
	prom_one(b, "infer_worker_inference_failures_total", "counter",
			 "Rows of those that failed on their own (a bad image, too large, ...).",
			 (double) c->row_failures);
	prom_one(b, "infer_worker_executions_total", "counter",
			 "Fragment runs: groups of merged requests run as one batch.",
			 (double) c->executions);
	prom_histogram(b, "infer_worker_queue_duration_seconds",
				   "Time a request waited in the worker between its arrival and the start of its run.",
				   &c->queue);
	prom_histogram(b, "infer_worker_compute_duration_seconds",
				   "Time one fragment run took (model loads inside it included).",
				   &c->compute);

	prom_head(b, "infer_worker_model_executions_total", "counter",
			  "Model calls (engine runs), by model file.");
	for (int i = 0; i < c->n_models; i++)
		prom_model(b, "infer_worker_model_executions_total", c->models[i].file, (double) (c->models[i].calls));
	prom_head(b, "infer_worker_model_inferences_total", "counter",
			  "Rows (batch items) of the model calls, by model file.");
	for (int i = 0; i < c->n_models; i++)
		prom_model(b, "infer_worker_model_inferences_total", c->models[i].file, (double) (c->models[i].rows));
	prom_head(b, "infer_worker_model_compute_seconds_total", "counter",
			  "Time spent in the model calls, by model file.");
	for (int i = 0; i < c->n_models; i++)
		prom_model(b, "infer_worker_model_compute_seconds_total", c->models[i].file, (double) (c->models[i].seconds));

	if (st == NULL)
		return;					/* no state message yet: counters only */
	prom_one(b, "infer_worker_queue_length", "gauge",
			 "Requests the worker holds now, waiting or running.",
			 (double) st->queue_length);
	prom_one(b, "infer_worker_backlog_seconds", "gauge",
			 "Estimated time to finish the work the worker holds (the placement's wait).",
			 st->backlog_ms / 1000.0);
	prom_one(b, "infer_worker_busy_threads", "gauge",
			 "Compute jobs running now (a group of requests, or a model load).",
			 (double) st->busy_threads);
	prom_head(b, "infer_worker_gpu_memory_bytes", "gauge",
			  "Model memory of the device: total, used, free (on a CPU: the --gpu-memory cap or the host's memory).");
	sb_printf(b, "infer_worker_gpu_memory_bytes{state=\"total\"} %llu\n",
			  (unsigned long long) st->gpu_memory_total);
	sb_printf(b, "infer_worker_gpu_memory_bytes{state=\"used\"} %llu\n",
			  (unsigned long long) (st->gpu_memory_total > st->gpu_memory_free ?
									st->gpu_memory_total - st->gpu_memory_free : 0));
	sb_printf(b, "infer_worker_gpu_memory_bytes{state=\"free\"} %llu\n",
			  (unsigned long long) st->gpu_memory_free);
	prom_one(b, "infer_worker_gpu_memory_cap_bytes", "gauge",
			 "Bytes the resident models may take (--gpu-memory; the device's total when not set).",
			 (double) st->gpu_memory_cap);
	prom_head(b, "infer_worker_host_memory_bytes", "gauge",
			  "Host memory: the worker's resident set (used), and the host's total and available (free).");
	sb_printf(b, "infer_worker_host_memory_bytes{state=\"used\"} %llu\n",
			  (unsigned long long) st->host_memory_used);
	sb_printf(b, "infer_worker_host_memory_bytes{state=\"total\"} %llu\n",
			  (unsigned long long) st->host_memory_total);
	sb_printf(b, "infer_worker_host_memory_bytes{state=\"free\"} %llu\n",
			  (unsigned long long) st->host_memory_free);
	prom_head(b, "infer_worker_request_bytes", "gauge",
			  "Bytes of the requests the worker holds now, queued or running (their messages' frames).");
	sb_printf(b, "infer_worker_request_bytes %llu\n",
			  (unsigned long long) st->request_bytes);
	prom_one(b, "infer_worker_unread_answer_bytes", "gauge",
			 "Bytes of answers the worker keeps for clients that have not read them yet (each message counted 1 KiB more).",
			 (double) st->unread_answer_bytes);
	prom_head(b, "infer_worker_client_limit_requests_total", "counter",
			  "Requests not run because their client held more than --max-client-bytes: refused (SQLSTATE 53400) or dropped unanswered.");
	sb_printf(b, "infer_worker_client_limit_requests_total{action=\"refused\"} %llu\n",
			  (unsigned long long) st->client_limit_refusals);
	sb_printf(b, "infer_worker_client_limit_requests_total{action=\"dropped\"} %llu\n",
			  (unsigned long long) st->client_limit_drops);
	prom_head(b, "infer_worker_heap_bytes", "gauge",
			  "Bytes the worker's allocator has handed out and not had back (0: not known).");
	sb_printf(b, "infer_worker_heap_bytes %llu\n",
			  (unsigned long long) st->heap_bytes);
	prom_one(b, "infer_worker_resident_models", "gauge",
			 "Models resident in device memory now.", (double) st->n_resident_models);
	prom_head(b, "infer_worker_model_resident", "gauge",
			  "1 when the model is resident in device memory, 0 when known but not resident.");
	for (size_t i = 0; i < st->n_models; i++)
		prom_model(b, "infer_worker_model_resident", st->models[i]->file, (double) (st->models[i]->resident ? 1 : 0));
	prom_head(b, "infer_worker_model_bytes", "gauge",
			  "Weight memory of the model when resident (else its size when last loaded).");
	for (size_t i = 0; i < st->n_models; i++)
		prom_model(b, "infer_worker_model_bytes", st->models[i]->file, (double) (st->models[i]->bytes));
	prom_head(b, "infer_worker_model_queued_requests", "gauge",
			  "Queued or running requests that need the model.");
	for (size_t i = 0; i < st->n_models; i++)
		prom_model(b, "infer_worker_model_queued_requests", st->models[i]->file, (double) (st->models[i]->queued));
	prom_head(b, "infer_worker_model_load_seconds", "gauge",
			  "The model's measured (or expected) load time.");
	for (size_t i = 0; i < st->n_models; i++)
		prom_model(b, "infer_worker_model_load_seconds", st->models[i]->file, (double) (st->models[i]->load_ms / 1000.0));
	prom_one(b, "infer_worker_model_loads_total", "counter",
			 "Model loads that succeeded.", (double) st->model_loads);
	prom_one(b, "infer_worker_model_evictions_total", "counter",
			 "Resident models evicted to make room.", (double) st->model_evictions);
	prom_one(b, "infer_worker_model_hits_total", "counter",
			 "Model uses that found the model resident.", (double) st->model_hits);
	prom_one(b, "infer_worker_model_misses_total", "counter",
			 "Model uses that had to load the model.", (double) st->model_misses);
	prom_one(b, "infer_worker_merged_executions_total", "counter",
			 "Fragment runs that merged requests of more than one request.",
			 (double) st->merged_batches);
	prom_one(b, "infer_worker_input_cache_hits_total", "counter",
			 "Rows taken from the input cache instead of being sent.",
			 (double) st->input_cache_hits);
	prom_one(b, "infer_worker_input_cache_misses_total", "counter",
			 "Rows left out of a request that the input cache did not hold.",
			 (double) st->input_cache_misses);
	prom_one(b, "infer_worker_input_cache_bytes", "gauge",
			 "Bytes the input cache holds.", (double) st->input_cache_bytes);
	prom_one(b, "infer_worker_input_cache_capacity_bytes", "gauge",
			 "The input cache's capacity (0: off).", (double) st->input_cache_capacity);
	prom_one(b, "infer_worker_uptime_seconds", "gauge",
			 "Seconds since the worker started.", st->uptime_s);
}

/* The /state.json object of snapshot s. */
static void
render_state_json(strbuf *b, const snapshot *s)
{
	const counters *c = &s->c;
	const Pginfer__WorkerState *st = s->h != NULL ? s->h->state : NULL;
	int			first = 1;

	sb_printf(b, "{\"metrics\":");
	sb_json_string(b, s->address);
	sb_printf(b, ",\"endpoint\":");
	sb_json_string(b, M.endpoint);
	sb_printf(b, ",\"peers\":[");
	if (M.peers != NULL)
	{
		const char *p = M.peers;

		while (*p)
		{
			size_t		n = strcspn(p, ",");
			char		one[300];

			if (n > 0 && n < sizeof(one))
			{
				memcpy(one, p, n);
				one[n] = '\0';
				sb_printf(b, "%s", first ? "" : ",");
				sb_json_string(b, one);
				first = 0;
			}
			p += n;
			if (*p == ',')
				p++;
		}
	}
	sb_printf(b, "],\"t\":%.3f", s->t);
	sb_printf(b, ",\"requests_total\":%llu,\"request_failures_total\":%llu"
			  ",\"inferences_total\":%llu,\"inference_failures_total\":%llu"
			  ",\"executions_total\":%llu",
			  (unsigned long long) c->requests, (unsigned long long) c->request_failures,
			  (unsigned long long) c->inferences, (unsigned long long) c->row_failures,
			  (unsigned long long) c->executions);
	sb_printf(b, ",\"history\":[");
	for (int i = 0; i < c->n_history; i++)
	{
		const history_point *p = &c->history[(c->history_head + i) % HISTORY_LEN];

		sb_printf(b, "%s[%.3f,%llu,%u,%.1f]", i == 0 ? "" : ",", p->t,
				  (unsigned long long) p->rows, p->queue, p->backlog_ms);
	}
	sb_printf(b, "]");
	if (st == NULL)
	{
		sb_printf(b, ",\"state\":false}");
		return;
	}
	sb_printf(b, ",\"state\":true,\"worker_id\":");
	sb_json_string(b, st->worker_id);
	sb_printf(b, ",\"device\":");
	sb_json_string(b, st->device);
	sb_printf(b, ",\"seq\":%llu,\"uptime_s\":%.3f,\"queue_length\":%u"
			  ",\"backlog_ms\":%.3f,\"busy_threads\":%u",
			  (unsigned long long) st->seq, st->uptime_s, st->queue_length,
			  st->backlog_ms, st->busy_threads);
	sb_printf(b, ",\"gpu_memory\":{\"total\":%llu,\"free\":%llu,\"used\":%llu,\"cap\":%llu}",
			  (unsigned long long) st->gpu_memory_total,
			  (unsigned long long) st->gpu_memory_free,
			  (unsigned long long) (st->gpu_memory_total > st->gpu_memory_free ?
									st->gpu_memory_total - st->gpu_memory_free : 0),
			  (unsigned long long) st->gpu_memory_cap);
	sb_printf(b, ",\"host_memory\":{\"used\":%llu,\"total\":%llu,\"free\":%llu,\"heap\":%llu,\"requests\":%llu}",
			  (unsigned long long) st->host_memory_used,
			  (unsigned long long) st->host_memory_total,
			  (unsigned long long) st->host_memory_free,
			  (unsigned long long) st->heap_bytes,
			  (unsigned long long) st->request_bytes);
	sb_printf(b, ",\"requests_served\":%llu,\"batches_run\":%llu,\"rows_run\":%llu"
			  ",\"merged_batches\":%llu,\"model_loads\":%llu,\"model_evictions\":%llu",
			  (unsigned long long) st->requests_served,
			  (unsigned long long) st->batches_run,
			  (unsigned long long) st->rows_run,
			  (unsigned long long) st->merged_batches,
			  (unsigned long long) st->model_loads,
			  (unsigned long long) st->model_evictions);
	sb_printf(b, ",\"resident_models\":[");
	for (size_t i = 0; i < st->n_resident_models; i++)
	{
		sb_printf(b, "%s", i == 0 ? "" : ",");
		sb_json_string(b, st->resident_models[i]);
	}
	sb_printf(b, "],\"models\":[");
	for (size_t i = 0; i < st->n_models; i++)
	{
		const Pginfer__ModelState *m = st->models[i];

		sb_printf(b, "%s{\"file\":", i == 0 ? "" : ",");
		sb_json_string(b, m->file);
		sb_printf(b, ",\"resident\":%s,\"bytes\":%llu,\"queued\":%u,\"load_ms\":%.3f}",
				  m->resident ? "true" : "false", (unsigned long long) m->bytes,
				  m->queued, m->load_ms);
	}
	sb_printf(b, "]}");
}

/* Queues a response of body (taken over: MHD frees it) with status and type. */
static enum MHD_Result
respond(struct MHD_Connection *conn, unsigned int status, const char *type,
		char *body, size_t len, int cors)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (r == NULL)
	{
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", type);
	MHD_add_response_header(r, "Cache-Control", "no-store");
	if (cors)
		MHD_add_response_header(r, "Access-Control-Allow-Origin", "*");
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

/* Queues a short plain-text response. */
static enum MHD_Result
respond_text(struct MHD_Connection *conn, unsigned int status, const char *text)
{
	char	   *body = strdup(text);

	if (body == NULL)
		return MHD_NO;
	return respond(conn, status, "text/plain; charset=utf-8", body, strlen(body), 0);
}

/* libmicrohttpd's access handler: GET /metrics, /state.json, / and /dashboard. */
static enum MHD_Result
answer(void *cls, struct MHD_Connection *conn, const char *url,
	   const char *method, const char *version, const char *upload_data,
	   size_t *upload_data_size, void **con_cls)
{
	strbuf		b = {NULL, 0, 0, 0};
	snapshot   *s;
	int			is_metrics;

	(void) cls;
	(void) version;
	(void) upload_data;
	/* the first call of a request only announces it */
	if (*con_cls == NULL)
	{
		*con_cls = (void *) 1;
		return MHD_YES;
	}
	if (*upload_data_size != 0)
	{
		*upload_data_size = 0;	/* a body is read and ignored */
		return MHD_YES;
	}
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		return respond_text(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET\n");
	if (strcmp(url, "/") == 0 || strcmp(url, "/dashboard") == 0)
	{
		char	   *page = strdup(metrics_dashboard_html);

		if (page == NULL)
			return MHD_NO;
		return respond(conn, MHD_HTTP_OK, "text/html; charset=utf-8", page,
					   strlen(page), 0);
	}
	is_metrics = strcmp(url, "/metrics") == 0;
	if (!is_metrics && strcmp(url, "/state.json") != 0)
		return respond_text(conn, MHD_HTTP_NOT_FOUND,
							"not found: try /metrics, /state.json or / (the dashboard)\n");
	s = snapshot_take();
	if (s == NULL)
		return MHD_NO;
	if (is_metrics)
		render_metrics(&b, s);
	else
		render_state_json(&b, s);
	snapshot_free(s);
	if (b.oom)
	{
		free(b.data);
		return respond_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	}
	return respond(conn, MHD_HTTP_OK,
				   is_metrics ? "text/plain; version=0.0.4; charset=utf-8" :
				   "application/json", b.data, b.len, !is_metrics);
}

/* libmicrohttpd's error log, into ours. */
static void
mhd_log(void *cls, const char *fmt, va_list ap)
{
	char		msg[512];
	size_t		n;

	(void) cls;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	while (n > 0 && msg[n - 1] == '\n')
		msg[--n] = '\0';
	log_warn("metrics endpoint: %s", msg);
}

/* Starts the endpoint; see metrics.h. */
int
metrics_start(const char *addr, const char *endpoint, const char *peers,
			  char *err, size_t errlen)
{
	char		host[256],
				portstr[16];
	long		port;
	struct addrinfo hints,
			   *ai = NULL;
	const union MHD_DaemonInfo *info;
	sigset_t	all,
				old;
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
	int			rc;

	if (M.daemon != NULL)
	{
		snprintf(err, errlen, "the metrics endpoint is already running");
		return -1;
	}
	if (split_address(addr, host, sizeof(host), &port, err, errlen) != 0)
		return -1;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	snprintf(portstr, sizeof(portstr), "%ld", port);
	rc = getaddrinfo(host, portstr, &hints, &ai);
	if (rc != 0)
	{
		snprintf(err, errlen, "cannot resolve \"%s\": %s", host, gai_strerror(rc));
		return -1;
	}
	if (ai->ai_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	snprintf(M.endpoint, sizeof(M.endpoint), "%s", endpoint != NULL ? endpoint : "");
	free(M.peers);
	M.peers = peers != NULL ? strdup(peers) : NULL;
	M.t0_ns = ie_now_ns();
	/* its thread inherits this mask: signals stay with the main thread */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	M.daemon = MHD_start_daemon(flags, (uint16_t) port, NULL, NULL, answer, NULL,
								MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
								MHD_OPTION_SOCK_ADDR, ai->ai_addr,
								MHD_OPTION_CONNECTION_LIMIT, (unsigned int) 64,
								MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int) 10,
								MHD_OPTION_END);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (M.daemon == NULL)
	{
		snprintf(err, errlen, "could not listen on %s (port in use, or no such address here?)", addr);
		freeaddrinfo(ai);
		return -1;
	}
	info = MHD_get_daemon_info(M.daemon, MHD_DAEMON_INFO_BIND_PORT);
	if (info != NULL && info->port != 0)
		port = info->port;
	pthread_mutex_lock(&M.lock);
	snprintf(M.address, sizeof(M.address), ai->ai_family == AF_INET6 ? "[%s]:%ld" : "%s:%ld",
			 host, port);
	M.started = 1;
	pthread_mutex_unlock(&M.lock);
	freeaddrinfo(ai);
	return 0;
}

/* The bound address; see metrics.h. */
const char *
metrics_address(void)
{
	return M.address;
}

/* Stops the endpoint; see metrics.h. */
void
metrics_stop(void)
{
	if (M.daemon != NULL)
	{
		MHD_stop_daemon(M.daemon);
		M.daemon = NULL;
	}
	pthread_mutex_lock(&M.lock);
	M.started = 0;
	free(M.state);
	M.state = NULL;
	M.state_len = 0;
	memset(&M.c, 0, sizeof(M.c));
	M.address[0] = '\0';
	pthread_mutex_unlock(&M.lock);
	free(M.peers);
	M.peers = NULL;
}

/* Keeps the latest state; see metrics.h. */
void
metrics_set_state(const void *header, size_t len)
{
	Pginfer__Header *h;
	uint8_t    *copy;
	double		t;

	pthread_mutex_lock(&M.lock);
	if (!M.started)
	{
		pthread_mutex_unlock(&M.lock);
		return;
	}
	pthread_mutex_unlock(&M.lock);

	/* unpacked here for the history's queue and backlog, outside the lock */
	h = pginfer__header__unpack(NULL, len, header);
	copy = malloc(len > 0 ? len : 1);
	if (h == NULL || h->state == NULL || copy == NULL)
	{
		if (h != NULL)
			pginfer__header__free_unpacked(h, NULL);
		free(copy);
		return;
	}
	memcpy(copy, header, len);
	t = since_start();

	pthread_mutex_lock(&M.lock);
	free(M.state);
	M.state = copy;
	M.state_len = len;
	{
		counters   *c = &M.c;
		int			last = (c->history_head + c->n_history - 1) % HISTORY_LEN;

		/* one sample a second */
		if (c->n_history == 0 || t - c->history[last].t >= 1.0)
		{
			history_point *p;

			if (c->n_history < HISTORY_LEN)
				p = &c->history[(c->history_head + c->n_history++) % HISTORY_LEN];
			else
			{
				p = &c->history[c->history_head];
				c->history_head = (c->history_head + 1) % HISTORY_LEN;
			}
			p->t = t;
			p->rows = c->inferences;
			p->queue = h->state->queue_length;
			p->backlog_ms = h->state->backlog_ms;
		}
	}
	pthread_mutex_unlock(&M.lock);
	pginfer__header__free_unpacked(h, NULL);
}

/* Counts one answered request; see metrics.h. */
void
metrics_request_done(double queue_s, int rows, int ok_rows, int failed)
{
	pthread_mutex_lock(&M.lock);
	if (M.started)
	{
		M.c.requests++;
		if (failed)
			M.c.request_failures++;
		else
		{
			M.c.inferences += (uint64_t) (rows > 0 ? rows : 0);
			M.c.row_failures += (uint64_t) (rows > ok_rows ? rows - ok_rows : 0);
		}
		if (queue_s >= 0)
			histogram_observe(&M.c.queue, queue_s);
	}
	pthread_mutex_unlock(&M.lock);
}

/* Counts one fragment run; see metrics.h. */
void
metrics_execution_done(double compute_s, int rows)
{
	(void) rows;
	pthread_mutex_lock(&M.lock);
	if (M.started)
	{
		M.c.executions++;
		histogram_observe(&M.c.compute, compute_s);
	}
	pthread_mutex_unlock(&M.lock);
}

/* Counts one model call; see metrics.h. */
void
metrics_model_call(const char *file, int rows, double ms)
{
	model_counters *m = NULL;

	pthread_mutex_lock(&M.lock);
	if (M.started && file != NULL)
	{
		for (int i = 0; i < M.c.n_models && m == NULL; i++)
			if (strcmp(M.c.models[i].file, file) == 0)
				m = &M.c.models[i];
		if (m == NULL && M.c.n_models < METRICS_MAX_MODELS)
		{
			m = &M.c.models[M.c.n_models++];
			snprintf(m->file, sizeof(m->file), "%s", file);
		}
		if (m != NULL)
		{
			m->calls++;
			m->rows += (uint64_t) (rows > 0 ? rows : 0);
			m->seconds += ms / 1000.0;
		}
	}
	pthread_mutex_unlock(&M.lock);
}
