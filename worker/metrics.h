/*
 * metrics.h
 *	  infer-worker's HTTP endpoint for operators (--metrics-listen
 *	  HOST:PORT, off by default): Prometheus metrics, the worker's state as
 *	  JSON, and the pool dashboard page.  Served by libmicrohttpd.
 *
 *	  GET /metrics		Prometheus text exposition format 0.0.4 (every
 *						metric with # HELP and # TYPE; docs/operations.md
 *						lists them)
 *	  GET /state.json	the worker's state and counters as one JSON object,
 *						with Access-Control-Allow-Origin: * so that a
 *						dashboard served by another worker may read it
 *	  GET / (or /dashboard)
 *						the pool dashboard: one self-contained HTML page
 *						(worker/dashboard.c) that polls /state.json of this
 *						worker and of the --dashboard-peers (and of a
 *						?peers=HOST:PORT,... query), every second
 *
 * Where the numbers come from: the server loop hands over each state
 * message it publishes (metrics_set_state: the packed MSG_STATE, at least
 * every PGINFER_STATE_PERIOD_MS) for the gauges and the worker's own
 * counters, and reports each answered request, each fragment run and each
 * model call (metrics_request_done, metrics_execution_done,
 * metrics_model_call) before the replies leave, so that a client that has
 * its reply sees it counted.
 *
 * Threading: one process-wide instance.  The metrics_*_done and
 * metrics_set_state calls come from the server loop's thread; libmicrohttpd
 * answers on its own thread (MHD_USE_INTERNAL_POLLING_THREAD), started
 * with every signal blocked.  One mutex guards everything both touch: a
 * request copies the counters and the last state message under it and
 * formats the copy without it.  Before metrics_start (and after
 * metrics_stop) the hooks do nothing.
 */
#ifndef INFER_METRICS_H
#define INFER_METRICS_H

#include <stddef.h>

/*
 * Checks that addr is HOST:PORT (HOST a name or an IPv4 address, or
 * [IPv6]; PORT 0 to 65535, 0: any free one).  Returns 0, or -1 with err.
 */
int			metrics_check_address(const char *addr, char *err, size_t errlen);

/*
 * Starts the endpoint on addr (see metrics_check_address).  endpoint is the
 * worker's request endpoint (shown on the dashboard); peers the
 * --dashboard-peers list ("HOST:PORT,...", may be NULL).  Returns 0, or -1
 * with err (a bad address, one that cannot be bound, started twice).
 */
int			metrics_start(const char *addr, const char *endpoint,
						  const char *peers, char *err, size_t errlen);

/* The bound address, "HOST:PORT" (port resolved), or "" when not started. */
const char *metrics_address(void);

/* Stops the endpoint and forgets everything (no-op when not started). */
void		metrics_stop(void);

/*
 * The latest state: a packed pginfer.Header of kind MSG_STATE (len bytes,
 * copied).  From the server loop.
 */
void		metrics_set_state(const void *header, size_t len);

/*
 * One MSG_RUN_FRAGMENT request answered: queue_s it waited before its run
 * (< 0: it never ran, e.g. refused at intake), rows it carried, ok_rows
 * of them that succeeded, failed when the answer was MSG_ERROR.
 */
void		metrics_request_done(double queue_s, int rows, int ok_rows,
								 int failed);

/* One fragment run (a group of merged requests): compute_s, rows. */
void		metrics_execution_done(double compute_s, int rows);

/* One model call inside a run: model file, rows in the call, its ms. */
void		metrics_model_call(const char *file, int rows, double ms);

/* The dashboard page (worker/dashboard.c), NUL-terminated. */
extern const char metrics_dashboard_html[];

#endif							/* INFER_METRICS_H */
