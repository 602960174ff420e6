/*
 * main.c
 *	  infer-worker: the pg_infer inference daemon.
 *
 *	  infer-worker --listen tcp://127.0.0.1:5555 --model-dir DIR
 *				   [--threads N] [--max-pixels N] [--max-text-bytes N]
 *				   [--max-batch N]
 *				   [--max-queue-delay-us N] [--batch-hold PERCENT] [--max-message-bytes N]
 *				   [--state-listen ENDPOINT] [--gpu-memory BYTES]
 *				   [--max-tensor-bytes BYTES]
 *				   [--simulate PROFILE.json] [--device cpu|cuda:N]
 *				   [--input-cache MB] [--log-level debug|info|warn|error]
 *				   [--curve-secret-key FILE --curve-allowed-clients FILE]
 *				   [--metrics-listen HOST:PORT] [--dashboard-peers LIST]
 *				   [--uploads on|off | --no-uploads] [--max-upload-bytes BYTES]
 *				   [--max-client-bytes BYTES]
 *				   [--config FILE] [--print-config]
 *	  infer-worker --curve-keygen PREFIX
 *
 * Parses the configuration file (--config, worker/config.h) and then the
 * command line, both through apply_option() over the one option table,
 * sets up logging, the engine's thread count and the allocator, starts the
 * server (worker/server.c) and the metrics endpoint (--metrics-listen,
 * worker/metrics.h) and serves until SIGTERM or SIGINT, then closes its
 * sockets and exits with status 0.
 *
 * The allocator: glibc serves blocks over M_MMAP_THRESHOLD with mmap and
 * gives freed memory back above M_TRIM_THRESHOLD, so every big tensor of
 * every model run would come as fresh zero-filled pages (page faults
 * dominate the detector's large activations).  Raising both keeps that
 * memory in the heap for the next run: 15 detections on one thread took
 * 1.49 million page faults and 2.5 s of system time without, 15 thousand
 * and 0.02 s with (user time unchanged, about 6 s).
 *
 * Threading: the signal handlers only set a sig_atomic_t flag; the server
 * loop polls with a timeout and checks it.  SIGTERM and SIGINT are blocked
 * while the ZeroMQ context (and its I/O threads) is created, so those
 * threads inherit a mask that keeps the signals for the main thread.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "common/protocol.h"
#include "worker/clients.h"
#include "worker/config.h"
#include "worker/curve.h"
#include "worker/engine/engine.h"
#include "worker/input_cache.h"
#include "worker/log.h"
#include "worker/metrics.h"
#include "worker/model_store.h"
#include "worker/server.h"
#include "worker/text.h"

/* How often the loop looks at the stop flag when nothing arrives (ms). */
#define POLL_MS 100

static volatile sig_atomic_t stop_requested = 0;
static volatile sig_atomic_t stop_signal = 0;

/* SIGTERM/SIGINT handler: records the request to stop, nothing else. */
static void
on_stop_signal(int signo)
{
	stop_signal = signo;
	stop_requested = 1;
}

/*
 * SIGCONT handler: counts the resume (server_resumes) and notes its time
 * (server_resumed_us; clock_gettime is async-signal-safe), nothing else.
 */
static void
on_continue_signal(int signo)
{
	(void) signo;
	atomic_store(&server_resumed_us[server_resumes % SERVER_RESUMES_KEPT],
				 ie_now_ns() / 1000);
	server_resumes++;
}

/* SIGHUP handler: counts it (server_hangups; the loop logs it), nothing else. */
static void
on_hangup_signal(int signo)
{
	(void) signo;
	server_hangups++;
}

/* Prints the usage text to f. */
static void
usage(FILE *f)
{
	fprintf(f,
			"Usage: infer-worker --listen ENDPOINT --model-dir DIR [options]\n"
			"\n"
			"Serves pg_infer inference requests (ML fragments from PostgreSQL\n"
			"backends) over ZeroMQ.\n"
			"\n"
			"  --listen ENDPOINT   ZeroMQ endpoint for the ROUTER socket to bind, e.g.\n"
			"                      tcp://127.0.0.1:5555 (tcp://127.0.0.1:* picks a\n"
			"                      free port; the bound endpoint is logged)\n"
			"  --model-dir DIR     directory holding the ONNX model files and label\n"
			"                      files; a request names files relative to it and\n"
			"                      can never read outside it\n"
			"  --threads N         threads the engine uses inside one model run\n"
			"                      (BLAS and its loops); 0 = one per CPU (default 0)\n"
			"  --max-pixels N      largest decoded image, width * height; a bigger\n"
			"                      image fails its row with SQLSTATE 54000; a request\n"
			"                      may ask for less (default %lld)\n"
			"  --max-text-bytes N  longest text row (infer.embed, infer.classify of a\n"
			"                      text), in bytes of UTF-8; a longer one fails its row\n"
			"                      with SQLSTATE 54000 before it is tokenized\n"
			"                      (default %lld)\n"
			"  --max-batch N       most rows in one merged batch and in one model call\n"
			"                      (predict/classify run rows of one input shape as\n"
			"                      one tensor, at most 16 a call); requests of the\n"
			"                      same fragment from\n"
			"                      several backends are merged up to N rows (default %d)\n"
			"  --max-queue-delay-us N\n"
			"                      how long a request may wait for others of the same\n"
			"                      fragment to merge with, in microseconds; 0 runs each\n"
			"                      group as soon as it is read (default %d)\n"
			"  --batch-hold PERCENT\n"
			"                      how long a group may wait for more requests of its\n"
			"                      fragment while they keep coming, in percent of its\n"
			"                      expected run (at most 200 ms; the wait ends after\n"
			"                      a quarter of it without one); 0, or a queue delay\n"
			"                      of 0: none (default %d)\n"
			"  --max-message-bytes N\n"
			"                      largest single frame (one image, one header) a\n"
			"                      request may carry, in bytes; a peer that sends a\n"
			"                      larger one is disconnected by ZeroMQ without a\n"
			"                      reply (the backend reports SQLSTATE 08006).  A\n"
			"                      request may also carry at most %d rows\n"
			"                      (default %lld = 256 MiB)\n"
			"  --state-listen ENDPOINT\n"
			"                      ZeroMQ endpoint for the PUB socket that publishes the\n"
			"                      worker's state (MSG_STATE, at least every %d ms and\n"
			"                      on change); default: an ephemeral port on the host of\n"
			"                      --listen (tcp://HOST:*); every PONG names the bound one\n"
			"  --gpu-memory BYTES  most bytes the resident models' weights may take\n"
			"                      (suffixes K, M, G, T: powers of 1024); a model that\n"
			"                      does not fit evicts the least recently used models no\n"
			"                      queued request needs; a request waits while other\n"
			"                      queued requests need the room, and fails with\n"
			"                      SQLSTATE 53200 when its models exceed the cap;\n"
			"                      0 = no cap (default 0)\n"
			"  --max-tensor-bytes BYTES\n"
			"                      most bytes one tensor may take on the CPU: a\n"
			"                      weight, a batch's input, an operator's output\n"
			"                      or working buffer (im2col, col2im)\n"
			"                      (suffixes K, M, G, T); a larger one fails with\n"
			"                      SQLSTATE 54000: the row, when its image or text\n"
			"                      went in at its own size, else the request or the\n"
			"                      model's load; 0 = the host's memory (default 0)\n"
			"  --device cpu|cuda:N  where models run (default cpu); cuda:N fails at\n"
			"                      start when the build has no CUDA or the machine\n"
			"                      has no usable CUDA device N (docs/gpu.md)\n"
			"  --simulate PROFILE.json\n"
			"                      simulated device: compute and model loads sleep for\n"
			"                      the times the profile gives (docs/operations.md);\n"
			"                      everything else is real\n"
			"  --input-cache MB    memory for row inputs kept by their SHA-256, so that a\n"
			"                      backend need not send them again (an LRU of the\n"
			"                      rows that came with a digest); 0 = off (default %d)\n"
			"  --log-level LEVEL   debug, info, warn or error (default info); logs go\n"
			"                      to stderr with ISO 8601 UTC timestamps\n"
			"  --curve-secret-key FILE\n"
			"                      the worker's CURVE secret key (Z85, mode 0600): the\n"
			"                      request socket encrypts and answers only the\n"
			"                      clients of --curve-allowed-clients, and so does\n"
			"                      the state socket (docs/security.md)\n"
			"  --curve-allowed-clients FILE\n"
			"                      client public keys (Z85) allowed in, one a line,\n"
			"                      '#' comments (docs/security.md)\n"
			"  --metrics-listen HOST:PORT\n"
			"                      serve Prometheus metrics (/metrics), the state as\n"
			"                      JSON (/state.json) and the pool dashboard (/) over\n"
			"                      HTTP there, e.g. 127.0.0.1:9464; default: off\n"
			"                      (docs/operations.md)\n"
			"  --dashboard-peers HOST:PORT,...\n"
			"                      other workers' --metrics-listen addresses, shown\n"
			"                      on this worker's dashboard beside it\n"
			"  --uploads on|off    whether peers may upload model files (MSG_PUT_MODEL,\n"
			"                      infer.upload_model); off refuses them with SQLSTATE\n"
			"                      0A000 (default on; docs/security.md)\n"
			"  --no-uploads        the same as --uploads off\n"
			"  --max-upload-bytes BYTES\n"
			"                      most bytes the uploaded model files may hold in\n"
			"                      --model-dir/.uploaded together (suffixes K, M, G,\n"
			"                      T); an upload beyond it fails with SQLSTATE 54000\n"
			"                      (default 1G)\n"
			"  --max-client-bytes BYTES\n"
			"                      most bytes one client connection may hold in the\n"
			"                      worker: its queued requests and the answers it has\n"
			"                      not read (suffixes K, M, G, T); when its requests\n"
			"                      pass it, or its unread answers pass twice it or\n"
			"                      stay over it for a second, its requests are\n"
			"                      refused with SQLSTATE 53400, and new ones dropped\n"
			"                      once those refusals pass it by 1M too; the answers\n"
			"                      already made are kept (default 1G)\n"
			"  --curve-keygen PREFIX\n"
			"                      write a new key pair to PREFIX.key (secret, 0600)\n"
			"                      and PREFIX.pub (never overwriting), and exit\n"
			"  --config FILE       read settings from FILE first: one \"key = value\" a\n"
			"                      line, the keys being the options above without\n"
			"                      their dashes (listen = tcp://127.0.0.1:5555); a\n"
			"                      flag overrides its key (docs/operations.md)\n"
			"  --print-config      print the effective settings in that format, exit\n"
			"  --version           print the release and protocol version, and exit\n"
			"  --help              show this text and exit\n"
			"\n"
			"SIGTERM or SIGINT stops the worker cleanly (exit status 0).  SIGHUP is\n"
			"logged and ignored: the settings are read at start only; restart the\n"
			"worker to change them.\n",
			(long long) PGINFER_DEFAULT_MAX_PIXELS,
			(long long) PGINFER_DEFAULT_MAX_TEXT_BYTES, SERVER_DEFAULT_MAX_BATCH,
			SERVER_DEFAULT_QUEUE_DELAY_US, SERVER_DEFAULT_BATCH_HOLD, SERVER_MAX_ROWS,
			(long long) SERVER_DEFAULT_MAX_MESSAGE_BYTES, PGINFER_STATE_PERIOD_MS,
			INPUT_CACHE_DEFAULT_MB);
}

/* Parses a whole decimal integer in [lo, hi]; -1 when it is not one. */
static int
parse_int(const char *s, long long lo, long long hi, long long *out)
{
	char	   *end;
	long long	v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

/*
 * Parses a byte count with an optional suffix K, M, G or T (powers of
 * 1024, optionally followed by "B" or "iB"); -1 when it is not one.
 */
static int
parse_bytes(const char *s, uint64_t *out)
{
	char	   *end;
	unsigned long long v;
	int			shift = 0;

	errno = 0;
	if (s[0] == '-' || s[0] == '\0')
		return -1;
	v = strtoull(s, &end, 10);
	if (errno != 0 || end == s)
		return -1;
	switch (*end)
	{
		case 'K': case 'k': shift = 10; end++; break;
		case 'M': case 'm': shift = 20; end++; break;
		case 'G': case 'g': shift = 30; end++; break;
		case 'T': case 't': shift = 40; end++; break;
		default: break;
	}
	if (shift > 0 && (strcmp(end, "B") == 0 || strcmp(end, "iB") == 0))
		end += strlen(end);
	if (*end != '\0' || (shift > 0 && v > (~0ULL >> shift)))
		return -1;
	*out = (uint64_t) v << shift;
	return 0;
}

/* parse_bytes of a count from 1 to INT64_MAX into *out; -1 when not one. */
static int
parse_positive_bytes(const char *s, int64_t *out)
{
	uint64_t	b;

	if (parse_bytes(s, &b) != 0 || b < 1 || b > (uint64_t) INT64_MAX)
		return -1;
	*out = (int64_t) b;
	return 0;
}

/*
 * The engine's tensor limit (ie_set_max_tensor_bytes) for --max-tensor-bytes
 * setting: the setting, or for 0 the host's physical memory
 * (sysconf(_SC_PHYS_PAGES) pages of _SC_PAGESIZE bytes; SIZE_MAX / 2, the
 * engine's own bound, when sysconf cannot say).  A tensor larger than the
 * host's memory could never be filled: its run fails with SQLSTATE 54000
 * at once instead of 53200, or of the kernel ending the worker.
 */
static size_t
tensor_limit(uint64_t setting)
{
	long		pages = sysconf(_SC_PHYS_PAGES);
	long		page = sysconf(_SC_PAGESIZE);

	if (setting > 0)
		return setting > SIZE_MAX / 2 ? SIZE_MAX / 2 : (size_t) setting;
	if (pages <= 0 || page <= 0 || (uint64_t) pages > SIZE_MAX / 2 / (uint64_t) page)
		return SIZE_MAX / 2;
	return (size_t) pages * (size_t) page;
}

/*
 * Installs on_stop_signal for SIGTERM and SIGINT (no SA_RESTART: the loop
 * sees the stop at once), and on_continue_signal for SIGCONT (SA_RESTART;
 * the calls that a handled signal interrupts whatever the flags, polls
 * and ZeroMQ's sends and receives, are retried on EINTR by the server, as
 * they are after SIGTERM).  The threads the server starts block SIGCONT,
 * so that the handler runs on the loop (server.h, server_resumes).
 */
static void
install_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = on_continue_signal;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGCONT, &sa, NULL);
	/* SIGHUP would end the worker (and systemd would not restart it) */
	sa.sa_handler = on_hangup_signal;
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/*
 * Everything the options set: filled by apply_option(), from the
 * configuration file first, then from the command line.  The strings
 * point into argv or into the config (which lives as long as main).
 */
typedef struct worker_settings
{
	server_opts opts;
	server_ext_opts ext;
	long long	max_message_bytes;
	long long	threads;
	uint64_t	max_tensor_bytes;	/* --max-tensor-bytes; 0: the host's memory */
	int			device;
	log_level	level;
	const char *curve_secret;
	const char *curve_allowed;
	const char *metrics_listen; /* --metrics-listen HOST:PORT, or NULL */
	const char *dashboard_peers;	/* --dashboard-peers HOST:PORT,..., or NULL */
} worker_settings;

/*
 * The options: the command line's flags and, but for NOT_CONFIG_KEYS and
 * those without an argument, the configuration file's keys (config.h).
 */
static const struct option longopts[] = {
	{"listen", required_argument, NULL, 'l'},
	{"model-dir", required_argument, NULL, 'm'},
	{"threads", required_argument, NULL, 't'},
	{"max-pixels", required_argument, NULL, 'p'},
	{"max-text-bytes", required_argument, NULL, 'x'},
	{"max-batch", required_argument, NULL, 'b'},
	{"max-queue-delay-us", required_argument, NULL, 'd'},
	{"batch-hold", required_argument, NULL, 'H'},
	{"max-message-bytes", required_argument, NULL, 'M'},
	{"log-level", required_argument, NULL, 'v'},
	{"state-listen", required_argument, NULL, 'S'},
	{"gpu-memory", required_argument, NULL, 'g'},
	{"max-tensor-bytes", required_argument, NULL, 'T'},
	{"simulate", required_argument, NULL, 'i'},
	{"input-cache", required_argument, NULL, 'c'},
	{"device", required_argument, NULL, 'D'},
	{"curve-secret-key", required_argument, NULL, 'K'},
	{"curve-allowed-clients", required_argument, NULL, 'A'},
	{"metrics-listen", required_argument, NULL, 'E'},
	{"dashboard-peers", required_argument, NULL, 'W'},
	{"uploads", required_argument, NULL, 'u'},
	{"no-uploads", no_argument, NULL, 'N'},
	{"max-upload-bytes", required_argument, NULL, 'U'},
	{"max-client-bytes", required_argument, NULL, 'B'},
	{"curve-keygen", required_argument, NULL, 'G'},
	{"config", required_argument, NULL, 'C'},
	{"print-config", no_argument, NULL, 'P'},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
	{NULL, 0, NULL, 0}
};

/* Codes of the options that take an argument but are no configuration keys. */
#define NOT_CONFIG_KEYS "GC"

/* The settings before any option: every default. */
static void
settings_init(worker_settings *w)
{
	memset(w, 0, sizeof(*w));
	w->opts.max_pixels = PGINFER_DEFAULT_MAX_PIXELS;
	w->opts.max_batch = SERVER_DEFAULT_MAX_BATCH;
	w->opts.max_queue_delay_us = SERVER_DEFAULT_QUEUE_DELAY_US;
	w->max_message_bytes = SERVER_DEFAULT_MAX_MESSAGE_BYTES;
	w->device = IE_DEVICE_CPU;
	w->level = LOG_LEVEL_INFO;
}

/*
 * Whether endpoint has the form of a ZeroMQ endpoint the worker binds:
 * tcp://, ipc:// or inproc:// followed by an address (zmq_bind(3)).  What
 * follows is zmq_bind's to judge at start; a missing transport (a bare
 * "127.0.0.1:5555") is a bad option (exit 2), not a failed start.
 */
static bool
endpoint_syntax_ok(const char *endpoint)
{
	static const char *const transports[] = {"tcp://", "ipc://", "inproc://"};

	for (size_t i = 0; i < sizeof(transports) / sizeof(transports[0]); i++)
	{
		size_t		n = strlen(transports[i]);

		if (strncmp(endpoint, transports[i], n) == 0 && endpoint[n] != '\0')
			return true;
	}
	return false;
}

/*
 * Applies one option (a config_apply_fn): code from longopts, flag its
 * name for messages ("--threads" or the file's "threads").  Returns 0, or
 * -1 with err saying what the value must be.
 */
static int
apply_option(void *arg, int code, const char *flag, const char *value,
			 char *err, size_t errlen)
{
	worker_settings *w = arg;
	long long	v;
	char		why[512];

	switch (code)
	{
		case 'l':
			if (!endpoint_syntax_ok(value))
			{
				snprintf(err, errlen, "%s must be a ZeroMQ endpoint such as tcp://127.0.0.1:5555, tcp://*:5555 or ipc:///run/infer.sock, not \"%s\"",
						 flag, value);
				return -1;
			}
			w->opts.endpoint = value;
			return 0;
		case 'm':
			w->opts.model_dir = value;
			return 0;
		case 't':
			if (parse_int(value, 0, 1024, &w->threads) == 0)
				return 0;
			snprintf(err, errlen, "%s must be an integer from 0 to 1024, not \"%s\"", flag, value);
			return -1;
		case 'p':
			if (parse_int(value, 1, LLONG_MAX, &v) == 0)
			{
				w->opts.max_pixels = v;
				return 0;
			}
			snprintf(err, errlen, "%s must be a positive integer, not \"%s\"", flag, value);
			return -1;
		case 'x':
			if (parse_int(value, 1, LLONG_MAX, &v) == 0)
			{
				text_set_max_bytes(v);
				return 0;
			}
			snprintf(err, errlen, "%s must be a positive integer, not \"%s\"", flag, value);
			return -1;
		case 'b':
			if (parse_int(value, 1, 65536, &v) == 0)
			{
				w->opts.max_batch = (int) v;
				return 0;
			}
			snprintf(err, errlen, "%s must be an integer from 1 to 65536, not \"%s\"", flag, value);
			return -1;
		case 'd':
			if (parse_int(value, 0, 10000000, &v) == 0)
			{
				w->opts.max_queue_delay_us = v;
				return 0;
			}
			snprintf(err, errlen, "%s must be an integer from 0 to 10000000, not \"%s\"", flag, value);
			return -1;
		case 'H':
			if (parse_int(value, 0, 100, &v) == 0)
			{
				w->ext.batch_hold = v > 0 ? (int) v : -1;
				return 0;
			}
			snprintf(err, errlen, "%s must be an integer from 0 to 100, not \"%s\"", flag, value);
			return -1;
		case 'M':
			if (parse_int(value, PGINFER_MIN_MESSAGE_BYTES, LLONG_MAX,
						  &w->max_message_bytes) == 0)
				return 0;
			snprintf(err, errlen, "%s must be an integer of at least %d, not \"%s\"",
					 flag, PGINFER_MIN_MESSAGE_BYTES, value);
			return -1;
		case 'S':
			if (!endpoint_syntax_ok(value))
			{
				snprintf(err, errlen, "%s must be a ZeroMQ endpoint such as tcp://127.0.0.1:5556 or tcp://127.0.0.1:*, not \"%s\"",
						 flag, value);
				return -1;
			}
			w->ext.state_endpoint = value;
			return 0;
		case 'g':
			if (parse_bytes(value, &w->ext.gpu_memory) == 0)
				return 0;
			snprintf(err, errlen, "%s must be a byte count such as 536870912, 512M or 2G, not \"%s\"", flag, value);
			return -1;
		case 'T':
			if (parse_bytes(value, &w->max_tensor_bytes) == 0)
				return 0;
			snprintf(err, errlen, "%s must be a byte count such as 4294967296, 512M or 4G (0: the host's memory), not \"%s\"", flag, value);
			return -1;
		case 'D':
			if (ie_device_parse(value, &w->device, why, sizeof(why)) == 0)
				return 0;
			/* why says "device must be ...": the flag's own name instead */
			snprintf(err, errlen, "%s %s", flag,
					 strncmp(why, "device ", 7) == 0 ? why + 7 : why);
			return -1;
		case 'i':
			w->ext.simulate = value;
			return 0;
		case 'c':
			if (parse_int(value, 0, 1 << 20, &v) == 0)
			{
				w->ext.input_cache = v > 0 ? (int64_t) v << 20 : -1;
				return 0;
			}
			snprintf(err, errlen, "%s must be a number of MiB from 0 to 1048576, not \"%s\"", flag, value);
			return -1;
		case 'v':
			if (log_parse_level(value, &w->level) == 0)
				return 0;
			snprintf(err, errlen, "%s must be debug, info, warn or error, not \"%s\"", flag, value);
			return -1;
		case 'K':
			w->curve_secret = value;
			return 0;
		case 'A':
			w->curve_allowed = value;
			return 0;
		case 'E':
			if (metrics_check_address(value, why, sizeof(why)) == 0)
			{
				w->metrics_listen = value;
				return 0;
			}
			snprintf(err, errlen, "%s: %s", flag, why);
			return -1;
		case 'W':
			w->dashboard_peers = value;
			return 0;
		case 'u':
			if (strcmp(value, "on") == 0 || strcmp(value, "off") == 0)
			{
				w->ext.no_uploads = strcmp(value, "off") == 0;
				return 0;
			}
			snprintf(err, errlen, "%s must be on or off, not \"%s\"", flag, value);
			return -1;
		case 'U':
			if (parse_positive_bytes(value, &w->ext.max_upload_bytes) == 0)
				return 0;
			snprintf(err, errlen, "%s must be a positive byte count such as 1073741824, 512M or 4G, not \"%s\"", flag, value);
			return -1;
		case 'B':
			if (parse_positive_bytes(value, &w->ext.max_client_bytes) == 0)
				return 0;
			snprintf(err, errlen, "%s must be a positive byte count such as 1073741824, 512M or 2G, not \"%s\"", flag, value);
			return -1;
		default:
			snprintf(err, errlen, "%s is not a setting", flag);
			return -1;
	}
}

/* Default text of an option for --print-config (a config_default_fn). */
static const char *
option_default(int code)
{
	static char buf[64];

	switch (code)
	{
		case 't':
		case 'g':
		case 'T':
			return "0";
		case 'p':
			snprintf(buf, sizeof(buf), "%lld", (long long) PGINFER_DEFAULT_MAX_PIXELS);
			return buf;
		case 'x':
			snprintf(buf, sizeof(buf), "%lld", (long long) PGINFER_DEFAULT_MAX_TEXT_BYTES);
			return buf;
		case 'b':
			snprintf(buf, sizeof(buf), "%d", SERVER_DEFAULT_MAX_BATCH);
			return buf;
		case 'd':
			snprintf(buf, sizeof(buf), "%d", SERVER_DEFAULT_QUEUE_DELAY_US);
			return buf;
		case 'H':
			snprintf(buf, sizeof(buf), "%d", SERVER_DEFAULT_BATCH_HOLD);
			return buf;
		case 'M':
			snprintf(buf, sizeof(buf), "%lld", (long long) SERVER_DEFAULT_MAX_MESSAGE_BYTES);
			return buf;
		case 'c':
			snprintf(buf, sizeof(buf), "%d", INPUT_CACHE_DEFAULT_MB);
			return buf;
		case 'v':
			return "info";
		case 'D':
			return "cpu";
		case 'u':
			return "on";
		case 'U':
			snprintf(buf, sizeof(buf), "%lld", (long long) SERVER_DEFAULT_MAX_UPLOAD_BYTES);
			return buf;
		case 'B':
			snprintf(buf, sizeof(buf), "%lld", (long long) CLIENT_DEFAULT_MAX_BYTES);
			return buf;
		default:
			return NULL;
	}
}

/*
 * Reads the options: --config FILE first (the first pass looks only for
 * it), then every flag, which overrides the file.  Returns -1 to go on, or
 * the exit status when main is to stop (2 for a bad option, 0 after
 * --help, --curve-keygen or --print-config).
 */
static int
read_options(int argc, char **argv, config *cfg, worker_settings *w)
{
	const char *path = NULL;
	char		err[1024],
				flag[80];
	int			print_config = 0,
				li = 0,
				c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1)
		if (c == 'C')
			path = optarg;
	opterr = 1;
	optind = 0;					/* glibc: start over */
	if (path != NULL && config_read(cfg, path, apply_option, w, err, sizeof(err)) != 0)
	{
		fprintf(stderr, "infer-worker: %s\n", err);
		return 2;
	}
	while ((c = getopt_long(argc, argv, "h", longopts, &li)) != -1)
	{
		switch (c)
		{
			case 'C':
				break;			/* read above */
			case 'P':
				print_config = 1;
				break;
			case 'G':
				if (curve_keygen(optarg, err, sizeof(err)) != 0)
				{
					fprintf(stderr, "infer-worker: --curve-keygen: %s\n", err);
					return 1;
				}
				printf("%s.key %s.pub\n", optarg, optarg);
				return 0;
			case 'h':
				usage(stdout);
				return 0;
			case 'V':
				printf("infer-worker (pg_infer %s, protocol %d)\n", PGINFER_RELEASE,
					   PGINFER_PROTOCOL_VERSION);
				return 0;
			case '?':
				usage(stderr);
				return 2;
			case 'N':
				/* --no-uploads is --uploads off (and so the key "uploads") */
				if (apply_option(w, 'u', "--no-uploads", "off", err, sizeof(err)) != 0 ||
					config_set(cfg, 'u', "off") == NULL)
				{
					fprintf(stderr, "infer-worker: out of memory\n");
					return 1;
				}
				break;
			default:
				snprintf(flag, sizeof(flag), "--%s", longopts[li].name);
				if (apply_option(w, c, flag, optarg, err, sizeof(err)) != 0)
				{
					fprintf(stderr, "infer-worker: %s\n", err);
					return 2;
				}
				if (config_set(cfg, c, optarg) == NULL)
				{
					fprintf(stderr, "infer-worker: out of memory\n");
					return 1;
				}
				break;
		}
	}
	if (optind < argc)
	{
		fprintf(stderr, "infer-worker: unexpected argument \"%s\"\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	if (print_config)
		return config_print(cfg, stdout, option_default) == 0 ? 0 : 1;
	if (w->opts.endpoint == NULL || w->opts.model_dir == NULL)
	{
		fprintf(stderr, "infer-worker: --listen and --model-dir are required (flags or keys of --config)\n");
		usage(stderr);
		return 2;
	}
	return -1;
}

/* Parses the flags, runs the server until a stop signal; 0 on a clean stop. */
/*
 * Logs a WARNING at start when uploads are on but the worker's user cannot
 * write where uploaded models go (model_dir/MODEL_STORE_DIR, or model_dir
 * where that folder is not made yet): the first upload would fail there,
 * and a call of an uploaded model be 58P01, with the cause only in this log.
 */
static void
warn_uploads_unwritable(const char *model_dir)
{
	char		path[PATH_MAX];
	const char *where = path;

	snprintf(path, sizeof(path), "%s/%s", model_dir, MODEL_STORE_DIR);
	if (access(path, F_OK) != 0)
		where = model_dir;
	if (access(where, W_OK | X_OK) == 0)
		return;
	log_warn("WARNING: uploads are on, but \"%s\" is not writable by this worker's user (uid %d): %s; a model a database uploads (infer.upload_model) cannot be stored, and calls of it fail with 58P01. Give that user write access, or run with --uploads off (docs/security.md)",
			 where, (int) geteuid(), strerror(errno));
}

int
main(int argc, char **argv)
{
	worker_settings w;
	config	   *cfg = NULL;
	char		devname[32];
	server	   *srv = NULL;
	sigset_t	block,
				old;
	char		err[1024];
	int			status = 1;

	settings_init(&w);
	cfg = config_new(longopts, NOT_CONFIG_KEYS);
	if (cfg == NULL)
	{
		fprintf(stderr, "infer-worker: out of memory\n");
		return 1;
	}
	status = read_options(argc, argv, cfg, &w);
	if (status >= 0)
		goto done;
	status = 1;

	log_set_level(w.level);
	if (curve_configure(w.curve_secret, w.curve_allowed, err, sizeof(err)) != 0)
	{
		log_error("could not start: %s", err);
		goto done;
	}
	mallopt(M_MMAP_THRESHOLD, 256 << 20);
	mallopt(M_TRIM_THRESHOLD, 1 << 30);
	ie_set_threads((int) w.threads);
	ie_set_max_tensor_bytes(tensor_limit(w.max_tensor_bytes));

	/*
	 * The threads started from here on inherit these masks: SIGCONT, whose
	 * count is read on this thread (server.h, server_resumes), is blocked
	 * in a device driver's (a stop and continue act on the process
	 * whatever the masks; SIGTERM keeps its default action while the
	 * device starts, so a start that hangs can still be stopped), and the
	 * stop signals too in ZeroMQ's I/O threads and the CURVE
	 * authenticator, so that all three reach this thread.  (Threads a
	 * library starts before main, as OpenBLAS's, keep theirs.)
	 */
	sigemptyset(&block);
	sigaddset(&block, SIGCONT);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	if (ie_set_device(w.device, err, sizeof(err)) != 0)
	{
		log_error("could not start: --device %s: %s",
				  ie_device_str(w.device, devname, sizeof(devname)), err);
		goto done;
	}
	install_signals();
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	pthread_sigmask(SIG_BLOCK, &block, NULL);
	w.ext.max_message_bytes = (int64_t) w.max_message_bytes;
	srv = server_new_ext(&w.opts, &w.ext, err, sizeof(err));
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (srv == NULL)
	{
		log_error("could not start: %s", err);
		goto done;
	}
	/* bound before the worker says it listens: a busy port fails the start first */
	if (w.metrics_listen != NULL)
	{
		/* its thread blocks every signal itself (metrics.h) */
		if (metrics_start(w.metrics_listen, server_endpoint(srv), w.dashboard_peers,
						  err, sizeof(err)) != 0)
		{
			log_error("could not start: --metrics-listen %s: %s", w.metrics_listen, err);
			goto done;
		}
	}
	log_info("listening on %s (model dir \"%s\", %d engine threads, max %lld pixels, max batch %d rows, queue delay %lld us, max message %lld bytes)",
			 server_endpoint(srv), w.opts.model_dir, ie_get_threads(),
			 (long long) w.opts.max_pixels, w.opts.max_batch,
			 (long long) w.opts.max_queue_delay_us,
			 w.max_message_bytes);
	if (w.ext.gpu_memory > 0)
		log_info("state published on %s; model memory capped at %llu bytes",
				 server_state_endpoint(srv), (unsigned long long) w.ext.gpu_memory);
	else
		log_info("state published on %s; model memory not capped",
				 server_state_endpoint(srv));
	if (curve_enabled())
		log_info("CURVE on: public key %s, %d client keys allowed",
				 curve_public_key(), curve_allowed_count());
	else if (!curve_endpoint_is_loopback(server_endpoint(srv)) ||
			 !curve_endpoint_is_loopback(server_state_endpoint(srv)))
		log_warn("WARNING: listening on %s (state %s) without CURVE: anyone who can reach it may run models and read replies unencrypted; use --curve-secret-key and --curve-allowed-clients (docs/security.md)",
				 server_endpoint(srv), server_state_endpoint(srv));
	log_info("models run on %s", ie_device_str(w.device, devname, sizeof(devname)));
	log_info("longest text row: %lld bytes; largest tensor: %llu bytes%s",
			 (long long) text_get_max_bytes(),
			 (unsigned long long) tensor_limit(w.max_tensor_bytes),
			 w.max_tensor_bytes == 0 ? " (the host's memory)" : "");
	if (w.ext.simulate != NULL)
		log_info("simulated device: profile \"%s\"", w.ext.simulate);
	if (w.ext.input_cache < 0)
		log_info("input cache: off");
	else
		log_info("input cache: %lld MiB", w.ext.input_cache > 0 ?
				 (long long) (w.ext.input_cache >> 20) : (long long) INPUT_CACHE_DEFAULT_MB);

	if (!w.ext.no_uploads)
		warn_uploads_unwritable(w.opts.model_dir);

	if (w.metrics_listen != NULL)
	{
		log_info("metrics on http://%s/metrics, dashboard on http://%s/",
				 metrics_address(), metrics_address());
		snprintf(err, sizeof(err), "tcp://%s", metrics_address());
		if (!curve_endpoint_is_loopback(err))
			log_warn("WARNING: the metrics endpoint %s is not on loopback: it has no authentication and no TLS; keep it on a private network (docs/operations.md)",
					 metrics_address());
	}
	else if (w.dashboard_peers != NULL)
		log_warn("--dashboard-peers has no effect without --metrics-listen");

	if (server_run(srv, &stop_requested, POLL_MS, err, sizeof(err)) != 0)
	{
		log_error("server failed: %s", err);
		goto done;
	}
	log_info("shutting down (%s)", stop_signal == SIGINT ? "SIGINT" : "SIGTERM");
	status = 0;
	log_info("stopped");

done:
	metrics_stop();
	server_destroy(&srv);
	curve_shutdown();
	config_destroy(&cfg);
	return status;
}
