/*
 * bench_client.c
 *	  Load generator for bench/batching: drives one infer-worker directly
 *	  over ZeroMQ, the way backends do, and reports rows per second.
 *
 *	  batching-client --endpoint EP --fragment classify|ocr|embed_text
 *					  --rows N [--batch B] [--inflight K] [--clients C]
 *					  [--timeout-ms T] [--ramp] [--count-bytes]
 *					  [--answers OUT] [--model NAME] [--sentences FILE]
 *					  [FILE...]
 *
 * The FILEs are read once and used in turn until N rows are made.  Each
 * of C clients (its own DEALER socket, i.e. its own peer to the worker)
 * takes the next B rows as one MSG_RUN_FRAGMENT and keeps up to K such
 * requests in flight; all clients run in this one thread, polled together.
 * classify uses the PP-OCR direction classifier as the extension registers
 * it (ppocr_cls: 48x192, mean/std 0.5, labels 0,180); ocr uses the PP-OCR
 * detector, classifier and recogniser.  embed_text is infer.embed's
 * fragment (FRAG_EMBED_TEXT, truncation on) with the text model NAME
 * (--model, default minilm: file NAME/model.onnx, as the extension
 * registers it); its rows are the texts of --sentences FILE, one a line in
 * the escaped form of tests/text/sentences.txt (\\, \n, \r, \t,
 * \x{HEX}), used in turn like FILEs, each sent as its UTF-8 bytes.
 *
 * --ramp sends what an InferBatch node sends (extension/inferbatch.c):
 * requests of 1, 2, 4, ... rows up to B, and a new request only while the
 * rows sent and not yet answered are fewer than the rows answered (at
 * least 1), K requests at most.  --count-bytes adds the bytes that went
 * over the socket (every frame of every request and reply, routing
 * frames excepted).  --answers writes "ROW_ID|ANSWER" lines to OUT in row
 * order (ANSWER: the row's text, or "ERROR SQLSTATE"), the form psql -At
 * gives for SELECT id, infer.classify(...), so SQL's answers compare
 * (an embedding: its values as "{v1,v2,...}" in %.9g, as psql shows a
 * real[] up to the digits).  An embedding's digest hashes its float bytes.
 *
 * Prints one line:
 *	  rows=N ok=N failed=F seconds=S rows_per_s=R requests=Q digest=H
 *		  [bytes_out=O bytes_in=I]
 * where digest is a hash of every row's answer in row order (equal digests:
 * equal answers), bytes_* with --count-bytes only.  Exit status 0 when
 * every row was answered, 1 otherwise, 2 on usage errors.
 *
 * Threading: single-threaded.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#include "common/protocol.h"
#include "tests/integration/client_util.h"

#define MAX_CLIENTS 64
#define MAX_FILES 4096

typedef struct bench_opts
{
	const char *endpoint;
	int			ocr;
	int			embed;			/* --fragment embed_text */
	const char *model;			/* --model, for embed_text */
	const char *sentences;		/* --sentences file, or NULL */
	int			rows;
	int			batch;
	int			inflight;
	int			clients;
	int			timeout_ms;
	int			ramp;			/* InferBatch's batch sizes and read-ahead */
	int			count_bytes;
	const char *answers;		/* --answers file, or NULL */
} bench_opts;

/* Bytes that went over the sockets (--count-bytes). */
static uint64_t bytes_out,
			bytes_in;

/* Seconds since an arbitrary point, monotonic. */
static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* FNV-1a over len bytes, continuing from h. */
static uint64_t
fnv(uint64_t h, const void *p, size_t len)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < len; i++)
	{
		h ^= b[i];
		h *= 1099511628211ULL;
	}
	return h;
}

/*
 * Sends rows [first, first + n) as one request with request_id = first.
 * Row i carries file i % n_files and row id i.
 */
static int
send_rows(void *sock, const Pginfer__Fragment *frag, int first, int n,
		  void *const *files, const size_t *file_len, int n_files)
{
	Pginfer__Header h = PGINFER__HEADER__INIT;
	Pginfer__RunFragment run = PGINFER__RUN_FRAGMENT__INIT;
	uint64_t   *ids = malloc((size_t) n * sizeof(*ids));
	int			rc = -1;

	if (ids == NULL)
		return -1;
	for (int i = 0; i < n; i++)
		ids[i] = (uint64_t) (first + i);
	run.fragment = (Pginfer__Fragment *) frag;
	run.n_row_ids = (size_t) n;
	run.row_ids = ids;
	h.version = PGINFER_PROTOCOL_VERSION;
	h.kind = PGINFER__MSG_KIND__MSG_RUN_FRAGMENT;
	h.request_id = (uint64_t) first;
	h.run = &run;
	if (client_send_header(sock, &h, n > 0) != 0)
		goto done;
	bytes_out += pginfer__header__get_packed_size(&h);
	for (int i = 0; i < n; i++)
	{
		int			f = (first + i) % n_files;

		if (zmq_send(sock, files[f], file_len[f], i + 1 < n ? ZMQ_SNDMORE : 0) < 0)
			goto done;
		bytes_out += file_len[f];
	}
	rc = 0;

done:
	free(ids);
	return rc;
}

/*
 * Records the values of row r (len bytes of float32 in data, a reply's
 * payload frame): its answers hash becomes the hash of those bytes, and
 * its text (when texts is not NULL) "{v1,v2,...}" in %.9g.
 */
static void
record_values(const Pginfer__RowResult *r, const void *data, size_t len,
			  uint64_t *answers, char **texts, int n_rows)
{
	size_t		n = len / sizeof(float);
	const float *v = data;
	char	   *t,
			   *p;

	if (!r->ok || r->row_id >= (uint64_t) n_rows)
		return;
	answers[r->row_id] = fnv(14695981039346656037ULL, data, len);
	if (texts == NULL)
		return;
	/* "%.9g" is at most 15 characters, with a comma 16 */
	t = malloc(n * 16 + 3);
	if (t == NULL)
		return;
	p = t;
	*p++ = '{';
	for (size_t i = 0; i < n; i++)
		p += sprintf(p, "%s%.9g", i > 0 ? "," : "", (double) v[i]);
	*p++ = '}';
	*p = '\0';
	free(texts[r->row_id]);
	texts[r->row_id] = t;
}

/* Appends code point c to p in UTF-8; returns the bytes written (1-4). */
static int
put_utf8(char *p, unsigned c)
{
	if (c < 0x80)
	{
		p[0] = (char) c;
		return 1;
	}
	if (c < 0x800)
	{
		p[0] = (char) (0xC0 | (c >> 6));
		p[1] = (char) (0x80 | (c & 0x3F));
		return 2;
	}
	if (c < 0x10000)
	{
		p[0] = (char) (0xE0 | (c >> 12));
		p[1] = (char) (0x80 | ((c >> 6) & 0x3F));
		p[2] = (char) (0x80 | (c & 0x3F));
		return 3;
	}
	p[0] = (char) (0xF0 | (c >> 18));
	p[1] = (char) (0x80 | ((c >> 12) & 0x3F));
	p[2] = (char) (0x80 | ((c >> 6) & 0x3F));
	p[3] = (char) (0x80 | (c & 0x3F));
	return 4;
}

/*
 * Reads the texts of path (one a line; escapes \\, \n, \r, \t and
 * \x{HEX} as tools/tokenizer_reference.py reads them) into files[] and
 * file_len[] (malloc'd UTF-8 bytes, at most max texts); returns the count,
 * or -1 after a message on stderr.
 */
static int
read_sentences(const char *path, void **files, size_t *file_len, int max)
{
	size_t		len;
	char	   *buf = client_read_file("batching-client", path, &len);
	char	   *line;
	int			n = 0;

	if (buf == NULL)
		return -1;
	line = buf;
	while (line < buf + len && n < max)
	{
		char	   *end = memchr(line, '\n', (size_t) (buf + len - line));
		char	   *out;
		size_t		o = 0;

		if (end == NULL)
			end = buf + len;
		/* an escape never makes more bytes than it takes */
		out = malloc((size_t) (end - line) + 1);
		if (out == NULL)
			break;
		for (char *c = line; c < end; c++)
		{
			if (*c != '\\' || c + 1 >= end)
			{
				out[o++] = *c;
				continue;
			}
			c++;
			if (*c == 'x' && c + 1 < end && c[1] == '{')
			{
				char	   *stop;
				unsigned long cp = strtoul(c + 2, &stop, 16);

				o += (size_t) put_utf8(out + o, (unsigned) cp);
				c = stop;		/* at the closing brace */
			}
			else
				out[o++] = *c == 'n' ? '\n' : *c == 'r' ? '\r' : *c == 't' ? '\t' : *c;
		}
		out[o] = '\0';
		files[n] = out;
		file_len[n] = o;
		n++;
		line = end + 1;
	}
	free(buf);
	if (n == 0)
		fprintf(stderr, "batching-client: %s holds no texts\n", path);
	return n > 0 ? n : -1;
}

/*
 * Reads one reply from sock and records its rows in answers (one hash
 * per row id), in texts (a malloc'd "ANSWER" per row id) when texts is
 * not NULL, and the ok/failed counts.  Returns 0, or -1 when the reply
 * is not a result.
 */
static int
read_reply(void *sock, uint64_t *answers, char **texts, int n_rows, int *ok,
		   int *failed)
{
	zmq_msg_t	m;
	Pginfer__Header *h = NULL;
	int			more,
				rc = -1;
	size_t		frame = 0;

	zmq_msg_init(&m);
	if (zmq_msg_recv(&m, sock, 0) < 0)
	{
		zmq_msg_close(&m);
		return -1;
	}
	h = pginfer__header__unpack(NULL, zmq_msg_size(&m), zmq_msg_data(&m));
	bytes_in += zmq_msg_size(&m);
	more = zmq_msg_more(&m);
	zmq_msg_close(&m);
	if (h != NULL && h->kind == PGINFER__MSG_KIND__MSG_RESULT && h->result != NULL)
	{
		for (size_t i = 0; i < h->result->n_rows; i++)
		{
			const Pginfer__RowResult *r = h->result->rows[i];
			uint64_t	a = 14695981039346656037ULL;

			if (r->ok)
			{
				(*ok)++;
				a = fnv(a, r->text, strlen(r->text));
			}
			else
			{
				(*failed)++;
				a = fnv(a, r->sqlstate, strlen(r->sqlstate));
			}
			if (r->row_id < (uint64_t) n_rows)
				answers[r->row_id] = a;
			if (texts != NULL && r->row_id < (uint64_t) n_rows &&
				texts[r->row_id] == NULL)
			{
				const char *t = r->ok ? r->text : r->sqlstate;

				texts[r->row_id] = malloc(strlen(t) + 7);
				if (texts[r->row_id] != NULL)
					sprintf(texts[r->row_id], "%s%s", r->ok ? "" : "ERROR ", t);
			}
		}
		rc = 0;
	}
	else if (h != NULL && h->kind == PGINFER__MSG_KIND__MSG_ERROR && h->error != NULL)
		fprintf(stderr, "batching-client: request %llu: error %s: %s\n",
				(unsigned long long) h->request_id, h->error->sqlstate, h->error->message);
	/* Payload frames: row i's values (embeddings) are frame i. */
	while (more)
	{
		zmq_msg_init(&m);
		if (zmq_msg_recv(&m, sock, 0) < 0)
		{
			zmq_msg_close(&m);
			break;
		}
		bytes_in += zmq_msg_size(&m);
		more = zmq_msg_more(&m);
		if (rc == 0 && frame < h->result->n_rows && zmq_msg_size(&m) > 0)
			record_values(h->result->rows[frame], zmq_msg_data(&m),
						  zmq_msg_size(&m), answers, texts, n_rows);
		frame++;
		zmq_msg_close(&m);
	}
	if (h != NULL)
		pginfer__header__free_unpacked(h, NULL);
	return rc;
}

/* Prints the usage text. */
static void
usage(void)
{
	fprintf(stderr,
			"usage: batching-client --endpoint EP --fragment classify|ocr|embed_text\n"
			"         --rows N [--batch B] [--inflight K] [--clients C] [--timeout-ms T]\n"
			"         [--ramp] [--count-bytes] [--answers OUT] [--model NAME]\n"
			"         [--sentences FILE] [FILE...]\n");
}

/* Parses the command line, drives the worker, prints the line. */
int
main(int argc, char **argv)
{
	bench_opts	o = {NULL, 0, 0, "minilm", NULL, 0, 1, 1, 1, 600000, 0, 0, NULL};
	char		embed_file[1024];
	static void *files[MAX_FILES];
	static size_t file_len[MAX_FILES];
	int			n_files = 0;
	Pginfer__Fragment frag = PGINFER__FRAGMENT__INIT;
	Pginfer__ModelSpec specs[3];
	Pginfer__ModelSpec *spec_ptrs[3] = {&specs[0], &specs[1], &specs[2]};
	float		half[3] = {0.5f, 0.5f, 0.5f};
	char	   *labels[2] = {"0", "180"};
	void	   *ctx = NULL;
	void	   *socks[MAX_CLIENTS] = {NULL};
	int			in_flight[MAX_CLIENTS] = {0};
	uint64_t   *answers = NULL;
	char	  **texts = NULL;
	int			ramp_size = 1;
	int			next_row = 0,
				done_rows = 0,
				ok = 0,
				failed = 0,
				requests = 0,
				rc = 2,
				i;
	double		t0,
				t1;
	uint64_t	digest = 14695981039346656037ULL;

	for (i = 1; i < argc && strncmp(argv[i], "--", 2) == 0; i++)
	{
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		/* the options without a value */
		if (strcmp(argv[i], "--ramp") == 0 || strcmp(argv[i], "--count-bytes") == 0)
		{
			if (strcmp(argv[i], "--ramp") == 0)
				o.ramp = 1;
			else
				o.count_bytes = 1;
			continue;
		}
		if (v == NULL)
		{
			usage();
			return 2;
		}
		if (strcmp(argv[i], "--endpoint") == 0)
			o.endpoint = v;
		else if (strcmp(argv[i], "--fragment") == 0)
		{
			o.ocr = strcmp(v, "ocr") == 0;
			o.embed = strcmp(v, "embed_text") == 0;
		}
		else if (strcmp(argv[i], "--model") == 0)
			o.model = v;
		else if (strcmp(argv[i], "--sentences") == 0)
			o.sentences = v;
		else if (strcmp(argv[i], "--rows") == 0)
			o.rows = atoi(v);
		else if (strcmp(argv[i], "--batch") == 0)
			o.batch = atoi(v);
		else if (strcmp(argv[i], "--inflight") == 0)
			o.inflight = atoi(v);
		else if (strcmp(argv[i], "--clients") == 0)
			o.clients = atoi(v);
		else if (strcmp(argv[i], "--timeout-ms") == 0)
			o.timeout_ms = atoi(v);
		else if (strcmp(argv[i], "--answers") == 0)
			o.answers = v;
		else
		{
			usage();
			return 2;
		}
		i++;
	}
	if (o.endpoint == NULL || o.rows < 1 || o.batch < 1 || o.inflight < 1 ||
		o.clients < 1 || o.clients > MAX_CLIENTS ||
		(o.sentences == NULL ? i >= argc : i < argc) ||
		(o.sentences != NULL && !o.embed))
	{
		usage();
		return 2;
	}
	if (o.sentences != NULL)
	{
		n_files = read_sentences(o.sentences, files, file_len, MAX_FILES);
		if (n_files < 0)
		{
			n_files = 0;
			goto done;
		}
	}
	for (; i < argc && n_files < MAX_FILES; i++)
	{
		files[n_files] = client_read_file("batching-client", argv[i], &file_len[n_files]);
		if (files[n_files] == NULL)
			goto done;
		n_files++;
	}

	for (int k = 0; k < 3; k++)
	{
		Pginfer__ModelSpec init = PGINFER__MODEL_SPEC__INIT;

		specs[k] = init;
		specs[k].n_mean = specs[k].n_std = 3;
		specs[k].mean = specs[k].std = half;
	}
	specs[0].name = "ppocr_det";
	specs[0].file = "ch_PP-OCRv4_det_infer.onnx";
	specs[1].name = "ppocr_cls";
	specs[1].file = "ch_ppocr_mobile_v2.0_cls_infer.onnx";
	specs[1].input_height = 48;
	specs[1].input_width = 192;
	specs[1].n_labels = 2;
	specs[1].labels = labels;
	specs[2].name = "ppocr_rec";
	specs[2].file = "ch_PP-OCRv4_rec_infer.onnx";
	specs[2].labels_file = "ppocr_keys_v1.txt";
	if (o.embed)
	{
		Pginfer__ModelSpec init = PGINFER__MODEL_SPEC__INIT;

		specs[0] = init;
		snprintf(embed_file, sizeof(embed_file), "%s/model.onnx", o.model);
		specs[0].name = (char *) o.model;
		specs[0].file = embed_file;
		specs[0].task = "embed_text";
		frag.kind = PGINFER__FRAGMENT_KIND__FRAG_EMBED_TEXT;
		frag.truncate_text = 1;
		frag.n_models = 1;
		frag.models = spec_ptrs;
	}
	else if (o.ocr)
	{
		frag.kind = PGINFER__FRAGMENT_KIND__FRAG_OCR;
		frag.n_models = 3;
		frag.models = spec_ptrs;
	}
	else
	{
		frag.kind = PGINFER__FRAGMENT_KIND__FRAG_CLASSIFY;
		frag.n_models = 1;
		frag.models = &spec_ptrs[1];
	}

	answers = calloc((size_t) o.rows, sizeof(*answers));
	if (o.answers != NULL)
	{
		texts = calloc((size_t) o.rows, sizeof(*texts));
		if (texts == NULL)
			goto done;
	}
	ctx = zmq_ctx_new();
	if (answers == NULL || ctx == NULL)
		goto done;
	for (int c = 0; c < o.clients; c++)
	{
		int			linger = 0;

		socks[c] = zmq_socket(ctx, ZMQ_DEALER);
		if (socks[c] == NULL)
			goto done;
		zmq_setsockopt(socks[c], ZMQ_LINGER, &linger, sizeof(linger));
		if (zmq_connect(socks[c], o.endpoint) != 0)
		{
			fprintf(stderr, "batching-client: connect %s: %s\n", o.endpoint,
					zmq_strerror(errno));
			goto done;
		}
	}

	rc = 1;
	t0 = now_s();
	while (done_rows < o.rows)
	{
		zmq_pollitem_t items[MAX_CLIENTS];
		int			n;

		/* Top every client up to its in-flight limit. */
		for (int c = 0; c < o.clients; c++)
		{
			while (in_flight[c] < o.inflight && next_row < o.rows &&
				   (!o.ramp || next_row - done_rows < (done_rows > 1 ? done_rows : 1)))
			{
				int			size = o.ramp ? ramp_size : o.batch;
				int			n_send = o.rows - next_row < size ? o.rows - next_row : size;

				if (send_rows(socks[c], &frag, next_row, n_send, files, file_len, n_files) != 0)
				{
					fprintf(stderr, "batching-client: send: %s\n", zmq_strerror(errno));
					goto done;
				}
				next_row += n_send;
				in_flight[c]++;
				requests++;
				if (o.ramp)
					ramp_size = ramp_size * 2 < o.batch ? ramp_size * 2 : o.batch;
			}
		}
		for (int c = 0; c < o.clients; c++)
		{
			items[c].socket = socks[c];
			items[c].fd = 0;
			items[c].events = ZMQ_POLLIN;
			items[c].revents = 0;
		}
		n = zmq_poll(items, o.clients, o.timeout_ms);
		if (n <= 0)
		{
			fprintf(stderr, "batching-client: no reply within %d ms (%d of %d rows answered)\n",
					o.timeout_ms, done_rows, o.rows);
			goto done;
		}
		for (int c = 0; c < o.clients; c++)
		{
			int			before = ok + failed;

			if (!(items[c].revents & ZMQ_POLLIN))
				continue;
			if (read_reply(socks[c], answers, texts, o.rows, &ok, &failed) != 0)
				goto done;
			in_flight[c]--;
			done_rows += ok + failed - before;
		}
	}
	t1 = now_s();
	for (int r = 0; r < o.rows; r++)
		digest = fnv(digest, &answers[r], sizeof(answers[r]));
	printf("rows=%d ok=%d failed=%d seconds=%.3f rows_per_s=%.2f requests=%d digest=%016llx",
		   o.rows, ok, failed, t1 - t0, (double) o.rows / (t1 - t0), requests,
		   (unsigned long long) digest);
	if (o.count_bytes)
		printf(" bytes_out=%llu bytes_in=%llu", (unsigned long long) bytes_out,
			   (unsigned long long) bytes_in);
	printf("\n");
	rc = 0;
	if (texts != NULL)
	{
		FILE	   *f = fopen(o.answers, "w");

		for (int r = 0; f != NULL && r < o.rows; r++)
			fprintf(f, "%d|%s\n", r, texts[r] != NULL ? texts[r] : "");
		if (f == NULL || fclose(f) != 0)
		{
			fprintf(stderr, "batching-client: could not write %s\n", o.answers);
			rc = 1;
		}
	}

done:
	for (int c = 0; c < o.clients; c++)
		if (socks[c] != NULL)
			zmq_close(socks[c]);
	if (ctx != NULL)
		zmq_ctx_term(ctx);
	for (int k = 0; k < n_files; k++)
		free(files[k]);
	for (int r = 0; texts != NULL && r < o.rows; r++)
		free(texts[r]);
	free(texts);
	free(answers);
	return rc;
}
