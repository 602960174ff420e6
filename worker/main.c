/*
 * main.c
 *	  infer-worker: the pg_infer inference daemon.
 *
 *	  infer-worker --listen tcp://127.0.0.1:5555 --model-dir DIR
 *				   [--threads N] [--max-pixels N] [--max-batch N]
 *				   [--max-queue-delay-us N] [--max-message-bytes N]
 *				   [--state-listen ENDPOINT] [--gpu-memory BYTES]
 *				   [--simulate PROFILE.json] [--device cpu|cuda:N]
 *				   [--input-cache MB] [--log-level debug|info|warn|error]
 *				   [--curve-secret-key FILE --curve-allowed-clients FILE]
 *	  infer-worker --curve-keygen PREFIX
 *
 * Parses the command line, sets up logging, the engine's thread count and
 * the allocator, starts the server (worker/server.c) and serves until
 * SIGTERM or SIGINT, then closes its sockets and exits with status 0.
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
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include "common/protocol.h"
#include "worker/curve.h"
#include "worker/engine/engine.h"
#include "worker/input_cache.h"
#include "worker/log.h"
#include "worker/server.h"

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
			"  --max-batch N       most rows in one merged batch and in one model call\n"
			"                      (predict/classify run rows of one input shape as\n"
			"                      one tensor, at most 16 a call); requests of the\n"
			"                      same fragment from\n"
			"                      several backends are merged up to N rows (default %d)\n"
			"  --max-queue-delay-us N\n"
			"                      how long a request may wait for others of the same\n"
			"                      fragment to merge with, in microseconds; 0 runs each\n"
			"                      group as soon as it is read (default %d)\n"
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
			"                      queued request needs, or fails with SQLSTATE 53200;\n"
			"                      0 = no cap (default 0)\n"
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
			"                      clients of --curve-allowed-clients (the state\n"
			"                      socket stays plain: docs/security.md)\n"
			"  --curve-allowed-clients FILE\n"
			"                      client public keys (Z85) allowed in, one a line,\n"
			"                      '#' comments (docs/security.md)\n"
			"  --curve-keygen PREFIX\n"
			"                      write a new key pair to PREFIX.key (secret, 0600)\n"
			"                      and PREFIX.pub (never overwriting), and exit\n"
			"  --help              show this text and exit\n"
			"\n"
			"SIGTERM or SIGINT stops the worker cleanly (exit status 0).\n",
			(long long) PGINFER_DEFAULT_MAX_PIXELS, SERVER_DEFAULT_MAX_BATCH,
			SERVER_DEFAULT_QUEUE_DELAY_US, SERVER_MAX_ROWS,
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

/* Installs on_stop_signal for SIGTERM and SIGINT (no SA_RESTART). */
static void
install_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/* Parses the flags, runs the server until a stop signal; 0 on a clean stop. */
int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"listen", required_argument, NULL, 'l'},
		{"model-dir", required_argument, NULL, 'm'},
		{"threads", required_argument, NULL, 't'},
		{"max-pixels", required_argument, NULL, 'p'},
		{"max-batch", required_argument, NULL, 'b'},
		{"max-queue-delay-us", required_argument, NULL, 'd'},
		{"max-message-bytes", required_argument, NULL, 'M'},
		{"log-level", required_argument, NULL, 'v'},
		{"state-listen", required_argument, NULL, 'S'},
		{"gpu-memory", required_argument, NULL, 'g'},
		{"simulate", required_argument, NULL, 'i'},
		{"input-cache", required_argument, NULL, 'c'},
		{"device", required_argument, NULL, 'D'},
		{"curve-secret-key", required_argument, NULL, 'K'},
		{"curve-allowed-clients", required_argument, NULL, 'A'},
		{"curve-keygen", required_argument, NULL, 'G'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}
	};
	server_opts opts = {NULL, NULL, PGINFER_DEFAULT_MAX_PIXELS,
	SERVER_DEFAULT_MAX_BATCH, SERVER_DEFAULT_QUEUE_DELAY_US};
	long long	max_message_bytes = SERVER_DEFAULT_MAX_MESSAGE_BYTES;
	server_ext_opts ext = {0, NULL, 0, NULL, 0};
	long long	threads = 0;
	int			device = IE_DEVICE_CPU;
	char		devname[32];
	long long	v;
	log_level	level = LOG_LEVEL_INFO;
	server	   *srv = NULL;
	const char *curve_secret = NULL;
	const char *curve_allowed = NULL;
	sigset_t	block,
				old;
	char		err[1024];
	int			c;
	int			status = 1;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1)
	{
		switch (c)
		{
			case 'l':
				opts.endpoint = optarg;
				break;
			case 'm':
				opts.model_dir = optarg;
				break;
			case 't':
				if (parse_int(optarg, 0, 1024, &threads) != 0)
				{
					fprintf(stderr, "infer-worker: --threads must be an integer from 0 to 1024, not \"%s\"\n", optarg);
					return 2;
				}
				break;
			case 'p':
				if (parse_int(optarg, 1, LLONG_MAX, &v) != 0)
				{
					fprintf(stderr, "infer-worker: --max-pixels must be a positive integer, not \"%s\"\n", optarg);
					return 2;
				}
				opts.max_pixels = v;
				break;
			case 'b':
				if (parse_int(optarg, 1, 65536, &v) != 0)
				{
					fprintf(stderr, "infer-worker: --max-batch must be an integer from 1 to 65536, not \"%s\"\n", optarg);
					return 2;
				}
				opts.max_batch = (int) v;
				break;
			case 'd':
				if (parse_int(optarg, 0, 10000000, &v) != 0)
				{
					fprintf(stderr, "infer-worker: --max-queue-delay-us must be an integer from 0 to 10000000, not \"%s\"\n", optarg);
					return 2;
				}
				opts.max_queue_delay_us = v;
				break;
			case 'M':
				if (parse_int(optarg, 1024, LLONG_MAX, &max_message_bytes) != 0)
				{
					fprintf(stderr, "infer-worker: --max-message-bytes must be an integer of at least 1024, not \"%s\"\n", optarg);
					return 2;
				}
				break;
			case 'S':
				ext.state_endpoint = optarg;
				break;
			case 'g':
				if (parse_bytes(optarg, &ext.gpu_memory) != 0)
				{
					fprintf(stderr, "infer-worker: --gpu-memory must be a byte count such as 536870912, 512M or 2G, not \"%s\"\n", optarg);
					return 2;
				}
				break;
			case 'D':
				if (ie_device_parse(optarg, &device, err, sizeof(err)) != 0)
				{
					fprintf(stderr, "infer-worker: --device: %s\n", err);
					return 2;
				}
				break;
			case 'i':
				ext.simulate = optarg;
				break;
			case 'c':
				if (parse_int(optarg, 0, 1 << 20, &v) != 0)
				{
					fprintf(stderr, "infer-worker: --input-cache must be a number of MiB from 0 to 1048576, not \"%s\"\n", optarg);
					return 2;
				}
				ext.input_cache = v > 0 ? (int64_t) v << 20 : -1;
				break;
			case 'v':
				if (log_parse_level(optarg, &level) != 0)
				{
					fprintf(stderr, "infer-worker: --log-level must be debug, info, warn or error, not \"%s\"\n", optarg);
					return 2;
				}
				break;
			case 'K':
				curve_secret = optarg;
				break;
			case 'A':
				curve_allowed = optarg;
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
			default:
				usage(stderr);
				return 2;
		}
	}
	if (optind < argc)
	{
		fprintf(stderr, "infer-worker: unexpected argument \"%s\"\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	if (opts.endpoint == NULL || opts.model_dir == NULL)
	{
		fprintf(stderr, "infer-worker: --listen and --model-dir are required\n");
		usage(stderr);
		return 2;
	}

	log_set_level(level);
	if (curve_configure(curve_secret, curve_allowed, err, sizeof(err)) != 0)
	{
		log_error("could not start: %s", err);
		return 1;
	}
	mallopt(M_MMAP_THRESHOLD, 256 << 20);
	mallopt(M_TRIM_THRESHOLD, 1 << 30);
	ie_set_threads((int) threads);
	if (ie_set_device(device, err, sizeof(err)) != 0)
	{
		log_error("could not start: --device %s: %s",
				  ie_device_str(device, devname, sizeof(devname)), err);
		return 1;
	}
	install_signals();

	/* ZeroMQ's I/O threads inherit this mask: signals stay with us. */
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	ext.max_message_bytes = (int64_t) max_message_bytes;
	srv = server_new_ext(&opts, &ext, err, sizeof(err));
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (srv == NULL)
	{
		log_error("could not start: %s", err);
		goto done;
	}
	log_info("listening on %s (model dir \"%s\", %d engine threads, max %lld pixels, max batch %d rows, queue delay %lld us, max message %lld bytes)",
			 server_endpoint(srv), opts.model_dir, ie_get_threads(),
			 (long long) opts.max_pixels, opts.max_batch,
			 (long long) opts.max_queue_delay_us,
			 max_message_bytes);
	if (ext.gpu_memory > 0)
		log_info("state published on %s; model memory capped at %llu bytes",
				 server_state_endpoint(srv), (unsigned long long) ext.gpu_memory);
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
	log_info("models run on %s", ie_device_str(device, devname, sizeof(devname)));
	if (ext.simulate != NULL)
		log_info("simulated device: profile \"%s\"", ext.simulate);
	if (ext.input_cache < 0)
		log_info("input cache: off");
	else
		log_info("input cache: %lld MiB", ext.input_cache > 0 ?
				 (long long) (ext.input_cache >> 20) : (long long) INPUT_CACHE_DEFAULT_MB);

	if (server_run(srv, &stop_requested, POLL_MS, err, sizeof(err)) != 0)
	{
		log_error("server failed: %s", err);
		goto done;
	}
	log_info("shutting down (%s)", stop_signal == SIGINT ? "SIGINT" : "SIGTERM");
	status = 0;

done:
	server_destroy(&srv);
	curve_shutdown();
	if (status == 0)
		log_info("stopped");
	return status;
}
