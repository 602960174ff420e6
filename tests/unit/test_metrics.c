/*
 * test_metrics.c
 *	  Unit tests of the metrics endpoint (worker/metrics.c): address
 *	  checks; the endpoint on 127.0.0.1 with a free port; the counters and
 *	  histograms the hooks feed and the gauges of a state message, as
 *	  /metrics and /state.json show them (label and JSON escaping too);
 *	  404 and 405; the dashboard page; hooks that count nothing once
 *	  stopped.  HTTP over a plain socket.
 *
 * Prints "test_metrics: N passed, M failed"; exits 1 on any failure.
 * Threading: this thread and the endpoint's.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/pg_infer.pb-c.h"
#include "common/protocol.h"
#include "worker/metrics.h"
#include "tests/unit/testutil.h"

/* The response to "METHOD PATH" from the endpoint (malloc'd), or NULL. */
static char *
fetch(const char *method, const char *path)
{
	const char *addr = metrics_address();
	struct sockaddr_in sa;
	char		req[256];
	char	   *buf = NULL;
	size_t		len = 0,
				cap = 0;
	int			fd;

	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t) atoi(strrchr(addr, ':') + 1));
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *) &sa, sizeof(sa)) != 0)
		goto done;
	snprintf(req, sizeof(req), "%s %s HTTP/1.0\r\nHost: x\r\n\r\n", method, path);
	if (write(fd, req, strlen(req)) != (ssize_t) strlen(req))
		goto done;
	for (;;)
	{
		ssize_t		n;

		if (len + 4096 + 1 > cap)
		{
			char	   *p = realloc(buf, cap = (cap + 4096) * 2);

			if (p == NULL)
				goto done;
			buf = p;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n <= 0)
			break;
		len += (size_t) n;
	}
	if (buf != NULL)
		buf[len] = '\0';

done:
	if (fd >= 0)
		close(fd);
	return buf;
}

/* Whether text contains needle; prints text when not. */
static int
has(const char *text, const char *needle)
{
	if (text != NULL && strstr(text, needle) != NULL)
		return 1;
	printf("--- no \"%s\" in:\n%s\n---\n", needle, text != NULL ? text : "(null)");
	return 0;
}

/* Hands the endpoint a state message: queue 2, one odd model resident. */
static void
set_state(void)
{
	Pginfer__Header h = PGINFER__HEADER__INIT;
	Pginfer__WorkerState st = PGINFER__WORKER_STATE__INIT;
	Pginfer__ModelState m = PGINFER__MODEL_STATE__INIT;
	Pginfer__ModelState *mp = &m;
	char	   *resident[1] = {"we\"ird\\<m>.onnx"};
	uint8_t		buf[4096];
	size_t		len;

	m.file = resident[0];
	m.resident = 1;
	m.bytes = 1234;
	m.load_ms = 250;
	st.worker_id = "host:42";
	st.device = "cpu";
	st.queue_length = 2;
	st.backlog_ms = 1500;
	st.gpu_memory_total = 1000;
	st.gpu_memory_free = 400;
	st.n_resident_models = 1;
	st.resident_models = resident;
	st.n_models = 1;
	st.models = &mp;
	h.version = PGINFER_PROTOCOL_VERSION;
	h.kind = PGINFER__MSG_KIND__MSG_STATE;
	h.state = &st;
	len = pginfer__header__get_packed_size(&h);
	CHECK_EXPR(len <= sizeof(buf));
	pginfer__header__pack(&h, buf);
	metrics_set_state(buf, len);
}

/* Runs every test. */
int
main(void)
{
	char		err[512];
	char	   *r;

	CHECK_EXPR(metrics_check_address("127.0.0.1:9464", err, sizeof(err)) == 0);
	CHECK_EXPR(metrics_check_address("[::1]:0", err, sizeof(err)) == 0);
	CHECK_EXPR(metrics_check_address("localhost", err, sizeof(err)) == -1);
	CHECK(strstr(err, "expected HOST:PORT") != NULL, "%s", err);
	CHECK_EXPR(metrics_check_address("127.0.0.1:65536", err, sizeof(err)) == -1);
	CHECK_EXPR(metrics_check_address(":80", err, sizeof(err)) == -1);
	CHECK_EXPR(metrics_check_address("::1:80", err, sizeof(err)) == -1);

	/* hooks before the start count nothing */
	metrics_request_done(1, 5, 5, 0);
	CHECK(metrics_start("127.0.0.1:0", "tcp://127.0.0.1:5555", "h1:1,h2:2", err, sizeof(err)) == 0,
		  "start: %s", err);
	CHECK(strncmp(metrics_address(), "127.0.0.1:", 10) == 0 &&
		  strcmp(metrics_address(), "127.0.0.1:0") != 0, "address %s", metrics_address());
	CHECK_EXPR(metrics_start("127.0.0.1:0", "x", NULL, err, sizeof(err)) == -1);

	metrics_request_done(0.002, 3, 2, 0);
	metrics_request_done(-1, 1, 0, 1);
	metrics_execution_done(0.4, 3);
	metrics_model_call("a.onnx", 3, 12.5);
	metrics_model_call("a.onnx", 1, 2.5);
	metrics_model_call("we\"ird\\<m>.onnx", 2, 1);
	set_state();

	r = fetch("GET", "/metrics");
	CHECK_EXPR(has(r, "HTTP/1.1 200 OK\r\n"));
	CHECK_EXPR(has(r, "Content-Type: text/plain; version=0.0.4"));
	CHECK_EXPR(has(r, "\ninfer_worker_requests_total 2\n"));
	CHECK_EXPR(has(r, "\ninfer_worker_request_failures_total 1\n"));
	CHECK_EXPR(has(r, "\ninfer_worker_inferences_total 3\n"));
	CHECK_EXPR(has(r, "\ninfer_worker_inference_failures_total 1\n"));
	CHECK_EXPR(has(r, "\ninfer_worker_executions_total 1\n"));
	CHECK_EXPR(has(r, "\ninfer_worker_queue_duration_seconds_bucket{le=\"0.001\"} 0\n"
				   "infer_worker_queue_duration_seconds_bucket{le=\"0.0025\"} 1\n"));
	CHECK_EXPR(has(r, "\ninfer_worker_queue_duration_seconds_count 1\n"));
	CHECK_EXPR(has(r, "\ninfer_worker_compute_duration_seconds_bucket{le=\"0.25\"} 0\n"
				   "infer_worker_compute_duration_seconds_bucket{le=\"0.5\"} 1\n"));
	CHECK_EXPR(has(r, "\ninfer_worker_compute_duration_seconds_bucket{le=\"+Inf\"} 1\n"));
	CHECK_EXPR(has(r, "\ninfer_worker_compute_duration_seconds_sum 0.4\n"));
	CHECK_EXPR(has(r, "\ninfer_worker_model_executions_total{model=\"a.onnx\"} 2\n"));
	CHECK_EXPR(has(r, "\ninfer_worker_model_inferences_total{model=\"a.onnx\"} 4\n"));
	CHECK_EXPR(has(r, "\ninfer_worker_model_compute_seconds_total{model=\"a.onnx\"} 0.015\n"));
	CHECK_EXPR(has(r, "\ninfer_worker_model_executions_total{model=\"we\\\"ird\\\\<m>.onnx\"} 1\n"));
	CHECK_EXPR(has(r, "\ninfer_worker_queue_length 2\n"));
	CHECK_EXPR(has(r, "\ninfer_worker_backlog_seconds 1.5\n"));
	CHECK_EXPR(has(r, "\ninfer_worker_gpu_memory_bytes{state=\"used\"} 600\n"));
	CHECK_EXPR(has(r, "\ninfer_worker_model_resident{model=\"we\\\"ird\\\\<m>.onnx\"} 1\n"));
	CHECK_EXPR(has(r, "\ninfer_worker_model_load_seconds{model=\"we\\\"ird\\\\<m>.onnx\"} 0.25\n"));
	CHECK_EXPR(has(r, "\n# TYPE infer_worker_queue_duration_seconds histogram\n"));
	CHECK_EXPR(has(r, "infer_worker_info{worker_id=\"host:42\",endpoint=\"tcp://127.0.0.1:5555\",device=\"cpu\""));
	free(r);

	r = fetch("GET", "/state.json");
	CHECK_EXPR(has(r, "Access-Control-Allow-Origin: *"));
	CHECK_EXPR(has(r, "\"peers\":[\"h1:1\",\"h2:2\"]"));
	CHECK_EXPR(has(r, "\"requests_total\":2,"));
	CHECK_EXPR(has(r, "\"queue_length\":2,"));
	CHECK_EXPR(has(r, "\"resident_models\":[\"we\\\"ird\\\\\\u003cm>.onnx\"]"));
	/* one history point: rows 3, queue 2, backlog 1500 ms */
	CHECK_EXPR(has(r, ",3,2,1500.0]],\"state\":true"));
	free(r);

	r = fetch("GET", "/");
	CHECK_EXPR(has(r, "Content-Type: text/html"));
	CHECK_EXPR(has(r, "<title>pg_infer worker pool</title>"));
	CHECK_EXPR(has(r, "/state.json"));
	free(r);
	r = fetch("GET", "/nope");
	CHECK_EXPR(has(r, " 404 "));
	free(r);
	r = fetch("POST", "/metrics");
	CHECK_EXPR(has(r, " 405 "));
	free(r);

	metrics_stop();
	CHECK_EXPR(strcmp(metrics_address(), "") == 0);
	metrics_request_done(1, 5, 5, 0);	/* no-op once stopped */
	CHECK(metrics_start("127.0.0.1:0", "x", NULL, err, sizeof(err)) == 0, "restart: %s", err);
	r = fetch("GET", "/metrics");
	CHECK_EXPR(has(r, "\ninfer_worker_requests_total 0\n"));
	free(r);
	metrics_stop();
	return tu_report("test_metrics");
}
