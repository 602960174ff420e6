/*
 * zmq_bw.c
 *	  Transport figures for bench/e2e: ZeroMQ throughput of large messages
 *	  over loopback TCP next to memcpy bandwidth, in one process.
 *
 *	  e2e-zmq-bw [--size BYTES] [--count N] [--runs R]
 *
 * ZeroMQ: a PUSH socket (a sender thread) connected to a PULL socket (the
 * main thread) bound to tcp://127.0.0.1 on a free port; N messages of
 * BYTES bytes (default 1 MiB, 1000 messages) after a warm-up of 16.  Two
 * ways to send: zero-copy (zmq_msg_init_data over one read-only buffer
 * that ZeroMQ never frees: what the worker does with its reply buffers)
 * and zmq_send (ZeroMQ copies the buffer into its own message first:
 * what the extension does with its payloads).  The time runs from the
 * first message sent to the last one received.  memcpy: the same number
 * of copies of a BYTES buffer into another one.  Each figure is the
 * median of R runs (default 5; the three kinds take turns), so that a
 * burst of other work on a shared machine moves it less.
 *
 * Prints a table and one line:
 *	  zmq_zerocopy_gbps=A zmq_copy_gbps=B memcpy_gbps=C size=BYTES count=N
 * (GB/s, 1 GB = 1e9 bytes).  Exit status 0, 1 on a ZeroMQ error, 2 on
 * usage errors.
 *
 * Threading: the main thread receives, one thread sends; each socket is
 * used by its own thread only.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#define WARMUP 16
#define MAX_RUNS 99

/* What the sender thread needs. */
typedef struct sender_args
{
	void	   *ctx;
	const char *endpoint;
	const char *buf;			/* read-only payload, size bytes */
	size_t		size;
	int			count;			/* messages, warm-up included */
	int			zerocopy;
	int			rc;				/* 0, or -1 on a send error */
} sender_args;

/* Seconds since an arbitrary point, monotonic. */
static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* zmq_msg_init_data's deallocator: the buffer is the sender's, kept. */
static void
keep_buffer(void *data, void *hint)
{
	(void) data;
	(void) hint;
}

/* Sender thread: connects a PUSH socket and sends count messages. */
static void *
sender_main(void *arg)
{
	sender_args *a = arg;
	void	   *sock = zmq_socket(a->ctx, ZMQ_PUSH);
	int			linger = -1;

	a->rc = -1;
	if (sock == NULL)
		return NULL;
	zmq_setsockopt(sock, ZMQ_LINGER, &linger, sizeof(linger));
	if (zmq_connect(sock, a->endpoint) != 0)
		goto done;
	for (int i = 0; i < a->count; i++)
	{
		if (a->zerocopy)
		{
			zmq_msg_t	m;

			/* ZeroMQ only reads the buffer; the cast drops const for its API */
			if (zmq_msg_init_data(&m, (void *) a->buf, a->size, keep_buffer, NULL) != 0)
				goto done;
			if (zmq_msg_send(&m, sock, 0) < 0)
			{
				zmq_msg_close(&m);
				goto done;
			}
		}
		else if (zmq_send(sock, a->buf, a->size, 0) < 0)
			goto done;
	}
	a->rc = 0;

done:
	zmq_close(sock);
	return NULL;
}

/*
 * Sends count messages of size bytes from a thread to a PULL socket of
 * this one and returns the GB/s after the warm-up; -1 on an error.
 */
static double
zmq_gbps(size_t size, int count, int zerocopy, const char *buf)
{
	void	   *ctx = zmq_ctx_new();
	void	   *pull = NULL;
	char		endpoint[256];
	size_t		elen = sizeof(endpoint);
	sender_args a = {0};
	pthread_t	th;
	int			started = 0;
	double		t0 = 0,
				t1,
				gbps = -1;

	if (ctx == NULL || (pull = zmq_socket(ctx, ZMQ_PULL)) == NULL)
		goto done;
	if (zmq_bind(pull, "tcp://127.0.0.1:*") != 0 ||
		zmq_getsockopt(pull, ZMQ_LAST_ENDPOINT, endpoint, &elen) != 0)
		goto done;
	a.ctx = ctx;
	a.endpoint = endpoint;
	a.buf = buf;
	a.size = size;
	a.count = count + WARMUP;
	a.zerocopy = zerocopy;
	a.rc = -1;
	if (pthread_create(&th, NULL, sender_main, &a) != 0)
		goto done;
	started = 1;
	for (int i = 0; i < count + WARMUP; i++)
	{
		zmq_msg_t	m;

		if (i == WARMUP)
			t0 = now_s();
		zmq_msg_init(&m);
		if (zmq_msg_recv(&m, pull, 0) < 0 || zmq_msg_size(&m) != size)
		{
			zmq_msg_close(&m);
			goto done;
		}
		zmq_msg_close(&m);
	}
	t1 = now_s();
	gbps = (double) size * count / (t1 - t0) / 1e9;

done:
	if (gbps < 0)
		fprintf(stderr, "e2e-zmq-bw: %s\n", zmq_strerror(zmq_errno()));
	if (pull != NULL)
		zmq_close(pull);
	if (started)
	{
		pthread_join(th, NULL);
		if (a.rc != 0)
			gbps = -1;
	}
	if (ctx != NULL)
		zmq_ctx_term(ctx);
	return gbps;
}

/*
 * Copies a size-byte buffer count times (after a warm-up) and returns the
 * GB/s; the destination is read back so the copies cannot be dropped.
 */
static double
memcpy_gbps(size_t size, int count, const char *src)
{
	char	   *dst = malloc(size);
	volatile char sink = 0;
	double		t0,
				t1;

	if (dst == NULL)
		return -1;
	for (int i = 0; i < WARMUP; i++)
		memcpy(dst, src, size);
	t0 = now_s();
	for (int i = 0; i < count; i++)
	{
		memcpy(dst, src, size);
		sink += dst[(size_t) i % size];
	}
	t1 = now_s();
	(void) sink;
	free(dst);
	return (double) size * count / (t1 - t0) / 1e9;
}

/* qsort comparison of doubles, ascending. */
static int
cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return (x > y) - (x < y);
}

/* Median of v[0..n), n >= 1 (v is sorted in place). */
static double
median(double *v, int n)
{
	qsort(v, (size_t) n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Parses the options, measures, prints the table and the line. */
int
main(int argc, char **argv)
{
	size_t		size = 1 << 20;
	int			count = 1000;
	int			runs = 5;
	char	   *buf;
	double		zc[MAX_RUNS],
				cp[MAX_RUNS],
				mc[MAX_RUNS];

	for (int i = 1; i < argc; i++)
	{
		if (i + 1 < argc && strcmp(argv[i], "--size") == 0)
			size = (size_t) atol(argv[++i]);
		else if (i + 1 < argc && strcmp(argv[i], "--count") == 0)
			count = atoi(argv[++i]);
		else if (i + 1 < argc && strcmp(argv[i], "--runs") == 0)
			runs = atoi(argv[++i]);
		else
			runs = -1;
	}
	if (size < 1 || count < 1 || runs < 1 || runs > MAX_RUNS)
	{
		fprintf(stderr, "usage: e2e-zmq-bw [--size BYTES] [--count N] [--runs R (1..%d)]\n",
				MAX_RUNS);
		return 2;
	}
	buf = malloc(size);
	if (buf == NULL)
		return 1;
	for (size_t i = 0; i < size; i++)
		buf[i] = (char) (i * 131 + 7);

	for (int r = 0; r < runs; r++)
	{
		zc[r] = zmq_gbps(size, count, 1, buf);
		cp[r] = zmq_gbps(size, count, 0, buf);
		mc[r] = memcpy_gbps(size, count, buf);
		if (zc[r] < 0 || cp[r] < 0 || mc[r] < 0)
		{
			free(buf);
			return 1;
		}
	}
	free(buf);
	printf("%-34s %10s  (median of %d runs of %d messages of %zu bytes)\n",
		   "transfer", "GB/s", runs, count, size);
	printf("%-34s %10.2f\n", "zmq tcp loopback, zero-copy send", median(zc, runs));
	printf("%-34s %10.2f\n", "zmq tcp loopback, zmq_send (copy)", median(cp, runs));
	printf("%-34s %10.2f\n", "memcpy, same process", median(mc, runs));
	printf("zmq_zerocopy_gbps=%.2f zmq_copy_gbps=%.2f memcpy_gbps=%.2f size=%zu count=%d runs=%d\n",
		   median(zc, runs), median(cp, runs), median(mc, runs), size, count, runs);
	return 0;
}
