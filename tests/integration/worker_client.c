/*
 * worker_client.c
 *	  A small command-line client of infer-worker for the process tests
 *	  (tests/integration/test_worker.sh): sends one request over a DEALER
 *	  socket and prints the reply as lines a shell test can grep.
 *
 *	  worker-client --endpoint EP [--timeout-ms N] [--version N]
 *					[--ocr-models DET,CLS,REC,DICT] [--input-size HxW]
 *					[--all-values] [--cancel] [--rounds N [--solo-last-round]]
 *					COMMAND [ARGS...]
 *
 * --ocr-models names the OCR fragment's files (relative to the worker's
 * --model-dir; CLS "none" runs without the direction classifier);
 * --ocr-sha256 H0,H1,H2 gives them SHA-256 digests (64 hex digits, "-"
 * for none), as a backend sends those of uploaded files.
 * --input-size sets the model's input size for predict/classify (0x0:
 * the image's own).  --all-values prints every value of a row, as %.9g
 * (which reads back to the same float).  --cancel sends a MSG_CANCEL of
 * the request right after it (so no reply is expected);
 * --cancel-after-ms N sends it N ms after the request instead.
 *
 * --names N0,N1,... names the first model of client k's fragment (not
 * of a next stage or further fragment) Nk, the last one for the clients
 * after them; without it a model is named by its file.
 *
 * A "+" among the FILEs of ocr, detect, predict and classify splits them
 * into several clients: each part goes from its own DEALER socket (its own
 * peer), all are sent before any reply is read, and each reply is printed
 * after a line "CLIENT k".  Client k uses request id 7 + k and row ids
 * 100 + 1000 k, 101 + 1000 k, ...  --rounds N does that N times over the
 * same sockets and prints the last round's replies only (earlier rounds
 * make the clients' peers known to the worker's batcher as active);
 * with --solo-last-round only client 0 sends in the last round, so its
 * request waits in the queue for the others (up to the queue delay).
 *
 *	  ping							 MSG_PING
 *	  ocr FILE...					 FRAG_OCR over the files, one row each
 *	  detect FILE...				 FRAG_DETECT_TEXT
 *	  predict MODEL FILE...			 FRAG_PREDICT with MODEL (relative path)
 *	  classify MODEL L1,L2,.. FILE.. FRAG_CLASSIFY with those labels
 *	  embed MODEL FILE...		 FRAG_EMBED_TEXT over the files' text
 *	  load MODEL [SHA256HEX]		 MSG_LOAD_MODEL
 *	  unload MODEL					 MSG_UNLOAD_MODEL
 *	  cancel						 MSG_CANCEL (expects no reply)
 *	  state [COUNT]					 subscribe to the worker's state socket
 *									 (--state-endpoint, or the one a PING
 *									 names) and print COUNT (default 1)
 *									 MSG_STATE messages within the timeout
 *	  garbage						 a header frame that is not a Header
 *	  deep N						 MSG_RUN_FRAGMENT (no rows) whose fragment
 *									 chains Fragment.next N deep (N + 1
 *									 stages), built as raw wire bytes
 *	  frames N						 MSG_RUN_FRAGMENT with one row id and N
 *									 payload frames
 *	  flood N						 N pings from a client that reads no
 *									 answer until the worker's state is
 *									 steady (flood_command); --flood N
 *									 with another command: N copies of
 *									 its request the same way
 *	  bulk ROWS N BYTES				 MSG_RUN_FRAGMENT whose header names ROWS
 *									 row ids, followed by N payload frames
 *									 of BYTES zero bytes each (N and BYTES
 *									 may be large: the limits tests)
 *
 * The input cache (docs/placement.md): --input-sha256 H0,H1,... gives row
 * i the SHA-256 Hi (64 hex digits; "-" for none), --cached-rows I,J,...
 * leaves those rows' payload frames empty (the worker is to take them from
 * its cache), and --resend answers a MSG_NEED_INPUT as a backend does:
 * the same request again with the named rows' bytes (at most twice),
 * printing each reply; --input-scope TEXT sends TEXT's bytes as the
 * request's input_scope (the worker then caches and finds the rows under
 * SHA-256(TEXT || digest)).  All four apply to a single client.
 *
 * Output, one item a line:
 *	  PONG worker_id=W served=N batches=B rows=R merged=M model_runs=K
 *		   queue=Q backlog_ms=X resident=A,B request_id=R seq=S ...
 *		   state_endpoint=E model_loads=L model_evictions=V model_hits=H
 *		   model_misses=M models=F:resident|known:BYTES:LOAD_MS:QUEUED:IDLE_MS;...
 *		   timings=F@BATCH=MS/RUNS;...	(WorkerState)
 *	  STATE t_ms=T queue=Q backlog_ms=X served=N resident=A,B seq=S ...
 *		   (as PONG; T: ms since subscribing)
 *	  ERROR sqlstate=S message=M | detail=D | hint=H
 *	  RESULT rows=N frames=F request_id=R
 *	  ROW i id=ID ok=1 n_values=K frame_bytes=B text=T	(newlines as \n)
 *	  ROW i id=ID ok=0 sqlstate=S message=M | detail=D
 *	  NEED_INPUT rows=I,J request_id=R (MSG_NEED_INPUT)
 *	  NOREPLY						 (no reply within the timeout)
 * Exit status: 0 a reply (of any kind) arrived (for cancel: none did), 3
 * none did within the timeout, 2 usage or I/O error.  Row ids are 100,
 * 101, ... in argument order; the request id is 7 (see "+" above).
 *
 * Threading: single-threaded.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
#include <zmq.h>

#include "common/protocol.h"
#include "tests/integration/client_util.h"

#define ROW_ID_BASE 100
#define MAX_FRAMES 1024
#define MAX_CLIENTS 16

/* The input-cache options (see the banner) and the rows a MSG_NEED_INPUT named. */
static const char *opt_input_sha256 = NULL;
static const char *opt_cached_rows = NULL;
static const char *opt_input_scope = NULL;
static int	opt_pad_models = 0;
static int	opt_merge_models = 0;
static int	opt_copies = 0;
static long opt_flood = 0;		/* --flood N: N copies, unread (flood_command) */
static int	opt_flood_read = 0; /* --flood-read: read them as they come */
static Pginfer__ModelSpec **pad_ptrs = NULL;
static Pginfer__ModelSpec *pad_specs = NULL;
static Pginfer__Fragment **copy_ptrs = NULL;
static int	opt_resend = 0;
static uint8_t ic_digests[MAX_FRAMES][32];
static ProtobufCBinaryData ic_sha256[MAX_FRAMES];
static uint32_t ic_cached[MAX_FRAMES];
static size_t ic_lens[MAX_FRAMES];	/* the real lengths of the cached rows */
static uint32_t need_rows[MAX_FRAMES];
static size_t n_need_rows = 0;

static int	parse_hex32(const char *hex, uint8_t out[32]);

typedef struct client_opts
{
	const char *endpoint;
	int			timeout_ms;
	unsigned	version;
	const char *det;
	const char *cls;
	const char *rec;
	const char *dict;
	int			all_values;
	int			cancel;
	int			rounds;
	int			solo_last_round;
	const char *embed;			/* --embed: a FRAG_EMBED_TEXT next stage */
	const char *also;			/* --also: "ocr" or "detect", a second fragment */
	const char *also_chain;		/* --also-chain: OCR -> embed as a second */
	const char *state_endpoint; /* --state-endpoint: for "state" */
	int			cancel_after_ms;	/* --cancel-after-ms: wait before the cancel */
} client_opts;

/* Prints s with newlines, tabs and backslashes escaped, so one item is one line. */
static void
print_escaped(const char *s)
{
	for (; *s; s++)
	{
		if (*s == '\n')
			fputs("\\n", stdout);
		else if (*s == '\t')
			fputs("\\t", stdout);
		else if (*s == '\\')
			fputs("\\\\", stdout);
		else
			putchar(*s);
	}
}

/*
 * --merge-models N: sends h packed, followed by N more copies of a header
 * holding only run.fragment with 3 models (files that do not exist).
 * protobuf-c merges the copies of a field that is not repeated, so the
 * worker unpacks one stage of 3 + 3N models (more with --pad-models).
 */
static int
send_merged_header(void *sock, const Pginfer__Header *h, int more)
{
	Pginfer__ModelSpec spec = PGINFER__MODEL_SPEC__INIT;
	Pginfer__ModelSpec *specs[3] = {&spec, &spec, &spec};
	Pginfer__Fragment f = PGINFER__FRAGMENT__INIT;
	Pginfer__RunFragment r = PGINFER__RUN_FRAGMENT__INIT;
	Pginfer__Header x = PGINFER__HEADER__INIT;
	size_t		hl = pginfer__header__get_packed_size(h),
				xl;
	uint8_t    *buf;
	int			rc;

	spec.file = "no_such_model.onnx";
	f.n_models = 3;
	f.models = specs;
	r.fragment = &f;
	x.run = &r;
	xl = pginfer__header__get_packed_size(&x);
	buf = malloc(hl + xl * (size_t) opt_merge_models);
	if (buf == NULL)
		return -1;
	pginfer__header__pack(h, buf);
	for (int k = 0; k < opt_merge_models; k++)
		pginfer__header__pack(&x, buf + hl + xl * (size_t) k);
	rc = zmq_send(sock, buf, hl + xl * (size_t) opt_merge_models,
				  more ? ZMQ_SNDMORE : 0) < 0 ? -1 : 0;
	free(buf);
	return rc;
}

/* Sends header h followed by n payload frames (copied by ZeroMQ). */
static int
send_request(void *sock, const Pginfer__Header *h, void *const *frames,
			 const size_t *lens, int n)
{
	if (opt_merge_models > 0)
	{
		if (send_merged_header(sock, h, n > 0) != 0)
			return -1;
	}
	else if (client_send_header(sock, h, n > 0) != 0)
		return -1;
	for (int i = 0; i < n; i++)
		if (zmq_send(sock, frames[i], lens[i], i + 1 < n ? ZMQ_SNDMORE : 0) < 0)
			return -1;
	return 0;
}

/* Sends header h followed by n frames, each the same len bytes of buf. */
static int
send_bulk(void *sock, const Pginfer__Header *h, long long n, const void *buf,
		  size_t len)
{
	if (client_send_header(sock, h, n > 0) != 0)
		return -1;
	for (long long i = 0; i < n; i++)
		if (zmq_send(sock, buf, len, i + 1 < n ? ZMQ_SNDMORE : 0) < 0)
			return -1;
	return 0;
}

/* Bits set in a Bloom filter of len bytes. */
static int
bits_set(const uint8_t *b, size_t len)
{
	int			n = 0;

	for (size_t i = 0; i < len; i++)
		n += __builtin_popcount(b[i]);
	return n;
}

/*
 * Applies --pad-models N (frag gets N more models, files that do not
 * exist) and --copies N (run carries N copies of frag in
 * more_fragments): requests of a shape a worker refuses.  Returns 0, or
 * -1 when memory runs out.
 */
static int
pad_shape(Pginfer__Fragment *frag, Pginfer__RunFragment *run)
{
	if (opt_pad_models > 0)
	{
		size_t		n = frag->n_models + (size_t) opt_pad_models;

		pad_ptrs = calloc(n, sizeof(*pad_ptrs));
		pad_specs = calloc((size_t) opt_pad_models, sizeof(*pad_specs));
		if (pad_ptrs == NULL || pad_specs == NULL)
			return -1;
		for (size_t m = 0; m < frag->n_models; m++)
			pad_ptrs[m] = frag->models[m];
		for (int k = 0; k < opt_pad_models; k++)
		{
			pginfer__model_spec__init(&pad_specs[k]);
			pad_specs[k].file = "no_such_model.onnx";
			pad_ptrs[frag->n_models + (size_t) k] = &pad_specs[k];
		}
		frag->models = pad_ptrs;
		frag->n_models = n;
	}
	if (opt_copies > 0)
	{
		copy_ptrs = calloc((size_t) opt_copies, sizeof(*copy_ptrs));
		if (copy_ptrs == NULL)
			return -1;
		for (int k = 0; k < opt_copies; k++)
			copy_ptrs[k] = frag;
		run->n_more_fragments = (size_t) opt_copies;
		run->more_fragments = copy_ptrs;
	}
	return 0;
}

/*
 * Applies --input-scope, --input-sha256 and --cached-rows to run over n rows of lens[]:
 * the digests, the cached rows, and their frames' lengths set to 0 (the
 * real ones kept in ic_lens).  Returns 0, or -1 on a bad list.
 */
static int
setup_input_cache(Pginfer__RunFragment *run, int n, size_t *lens)
{
	char		buf[MAX_FRAMES * 66];
	char	   *save = NULL;
	int			k = 0;

	if (opt_input_scope != NULL)
	{
		run->input_scope.data = (uint8_t *) opt_input_scope;
		run->input_scope.len = strlen(opt_input_scope);
	}
	if (opt_input_sha256 != NULL)
	{
		snprintf(buf, sizeof(buf), "%s", opt_input_sha256);
		for (char *t = strtok_r(buf, ",", &save); t != NULL; t = strtok_r(NULL, ",", &save))
		{
			if (k >= n)
				return -1;
			ic_sha256[k].data = ic_digests[k];
			ic_sha256[k].len = 0;
			if (strcmp(t, "-") != 0)
			{
				if (parse_hex32(t, ic_digests[k]) != 0)
					return -1;
				ic_sha256[k].len = 32;
			}
			k++;
		}
		if (k != n)
			return -1;
		run->n_input_sha256 = (size_t) n;
		run->input_sha256 = ic_sha256;
	}
	if (opt_cached_rows != NULL)
	{
		k = 0;
		snprintf(buf, sizeof(buf), "%s", opt_cached_rows);
		for (char *t = strtok_r(buf, ",", &save); t != NULL; t = strtok_r(NULL, ",", &save))
		{
			int			r = atoi(t);

			if (r < 0 || r >= n || k >= MAX_FRAMES)
				return -1;
			ic_cached[k++] = (uint32_t) r;
			ic_lens[r] = lens[r];
			lens[r] = 0;
		}
		run->n_cached_rows = (size_t) k;
		run->cached_rows = ic_cached;
	}
	return 0;
}

/*
 * Sends run's request again after a MSG_NEED_INPUT (need_rows): the named
 * rows go with their bytes and leave cached_rows.  Returns send_request's.
 */
static int
resend_needed(void *sock, Pginfer__Header *h, void *const *frames, size_t *lens,
			  int n)
{
	size_t		k = 0;

	for (size_t c = 0; c < h->run->n_cached_rows; c++)
	{
		uint32_t	r = h->run->cached_rows[c];
		int			needed = 0;

		for (size_t m = 0; m < n_need_rows; m++)
			needed |= need_rows[m] == r;
		if (needed)
			lens[r] = ic_lens[r];
		else
			ic_cached[k++] = r;
	}
	h->run->n_cached_rows = k;
	n_need_rows = 0;
	return send_request(sock, h, frames, lens, n);
}

/* Prints a WorkerState's placement fields after "PONG ..." or "STATE". */
static void
print_state_fields(const Pginfer__WorkerState *st)
{
	printf(" seq=%llu uptime_s=%.3f busy=%u cap=%llu gpu_free=%llu gpu_total=%llu host_total=%llu host_free=%llu device=%s state_endpoint=%s",
		   (unsigned long long) st->seq, st->uptime_s, st->busy_threads,
		   (unsigned long long) st->gpu_memory_cap,
		   (unsigned long long) st->gpu_memory_free,
		   (unsigned long long) st->gpu_memory_total,
		   (unsigned long long) st->host_memory_total,
		   (unsigned long long) st->host_memory_free, st->device,
		   st->state_endpoint);
	printf(" request_bytes=%llu heap_bytes=%llu max_message_bytes=%llu",
		   (unsigned long long) st->request_bytes,
		   (unsigned long long) st->heap_bytes,
		   (unsigned long long) st->max_message_bytes);
	printf(" unread_answer_bytes=%llu client_limit_refusals=%llu client_limit_drops=%llu",
		   (unsigned long long) st->unread_answer_bytes,
		   (unsigned long long) st->client_limit_refusals,
		   (unsigned long long) st->client_limit_drops);
	printf(" model_loads=%llu model_evictions=%llu model_hits=%llu model_misses=%llu",
		   (unsigned long long) st->model_loads,
		   (unsigned long long) st->model_evictions,
		   (unsigned long long) st->model_hits,
		   (unsigned long long) st->model_misses);
	printf(" input_cache_hits=%llu input_cache_misses=%llu input_cache_bytes=%llu input_cache_entries=%u input_cache_capacity=%llu bloom_bytes=%zu bloom_hashes=%u bloom_bits_set=%d",
		   (unsigned long long) st->input_cache_hits,
		   (unsigned long long) st->input_cache_misses,
		   (unsigned long long) st->input_cache_bytes, st->input_cache_entries,
		   (unsigned long long) st->input_cache_capacity, st->input_bloom.len,
		   st->bloom_hashes, bits_set(st->input_bloom.data, st->input_bloom.len));
	printf(" models=");
	for (size_t i = 0; i < st->n_models; i++)
	{
		const Pginfer__ModelState *m = st->models[i];

		printf("%s%s:%s:%llu:%.1f:%u:%.0f", i ? ";" : "", m->file,
			   m->resident ? "resident" : "known", (unsigned long long) m->bytes,
			   m->load_ms, m->queued, m->idle_ms);
	}
	printf(" timings=");
	for (size_t i = 0; i < st->n_timings; i++)
	{
		const Pginfer__ModelTiming *t = st->timings[i];

		printf("%s%s@%u=%.1f/%llu", i ? ";" : "", t->file, t->batch_size, t->ms,
			   (unsigned long long) t->runs);
	}
}

/*
 * Waits for one reply and prints it.  Returns 0 when one came, 3 when
 * none did within the timeout, 2 on a socket error.
 */
static int
print_reply(void *sock, int timeout_ms, int all_values)
{
	zmq_pollitem_t item = {sock, 0, ZMQ_POLLIN, 0};
	zmq_msg_t	parts[1024];
	int			n = 0,
				more = 1,
				rc = 2;
	Pginfer__Header *h = NULL;

	if (zmq_poll(&item, 1, timeout_ms) <= 0)
	{
		printf("NOREPLY\n");
		return 3;
	}
	while (more && n < 1024)
	{
		zmq_msg_init(&parts[n]);
		if (zmq_msg_recv(&parts[n], sock, 0) < 0)
		{
			zmq_msg_close(&parts[n]);
			goto done;
		}
		more = zmq_msg_more(&parts[n]);
		n++;
	}
	h = pginfer__header__unpack(NULL, zmq_msg_size(&parts[0]), zmq_msg_data(&parts[0]));
	if (h == NULL)
	{
		printf("BADREPLY header of %zu bytes does not unpack\n", zmq_msg_size(&parts[0]));
		goto done;
	}
	if (h->version != PGINFER_PROTOCOL_VERSION)
		printf("BADVERSION %u\n", h->version);
	switch (h->kind)
	{
		case PGINFER__MSG_KIND__MSG_PONG:
			printf("PONG worker_id=%s served=%llu", h->state ? h->state->worker_id : "?",
				   h->state ? (unsigned long long) h->state->requests_served : 0ULL);
			if (h->state)
				printf(" batches=%llu rows=%llu merged=%llu model_runs=%llu queue=%u backlog_ms=%.3f",
					   (unsigned long long) h->state->batches_run,
					   (unsigned long long) h->state->rows_run,
					   (unsigned long long) h->state->merged_batches,
					   (unsigned long long) h->state->model_runs,
					   h->state->queue_length, h->state->backlog_ms);
			printf(" resident=");
			for (size_t i = 0; h->state && i < h->state->n_resident_models; i++)
				printf("%s%s", i ? "," : "", h->state->resident_models[i]);
			printf(" request_id=%llu", (unsigned long long) h->request_id);
			if (h->state)
				print_state_fields(h->state);
			printf("\n");
			break;
		case PGINFER__MSG_KIND__MSG_NEED_INPUT:
			printf("NEED_INPUT rows=");
			n_need_rows = 0;
			for (size_t i = 0; h->need_input != NULL && i < h->need_input->n_rows; i++)
			{
				printf("%s%u", i ? "," : "", h->need_input->rows[i]);
				if (n_need_rows < MAX_FRAMES)
					need_rows[n_need_rows++] = h->need_input->rows[i];
			}
			printf(" request_id=%llu\n", (unsigned long long) h->request_id);
			break;
		case PGINFER__MSG_KIND__MSG_ERROR:
			printf("ERROR sqlstate=%s message=", h->error ? h->error->sqlstate : "?");
			print_escaped(h->error ? h->error->message : "");
			printf(" | detail=");
			print_escaped(h->error ? h->error->detail : "");
			printf(" | hint=");
			print_escaped(h->error ? h->error->hint : "");
			printf(" request_id=%llu\n", (unsigned long long) h->request_id);
			break;
		case PGINFER__MSG_KIND__MSG_RESULT:
			if (h->result == NULL)
			{
				printf("BADREPLY result without a Result\n");
				goto done;
			}
			printf("RESULT rows=%zu frames=%d request_id=%llu served=%llu\n",
				   h->result->n_rows, n - 1, (unsigned long long) h->request_id,
				   (unsigned long long) h->result->served);
			for (size_t i = 0; i < h->result->n_rows; i++)
			{
				Pginfer__RowResult *r = h->result->rows[i];
				size_t		fb = (int) i + 1 < n ? zmq_msg_size(&parts[i + 1]) : (size_t) -1;

				printf("ROW %zu id=%llu ok=%d ", i, (unsigned long long) r->row_id, r->ok);
				if (r->ok)
				{
					printf("n_values=%u frame_bytes=%zu", r->n_values, fb);
					if (r->n_values > 0 && fb == r->n_values * sizeof(float))
					{
						const char *v = zmq_msg_data(&parts[i + 1]);

						printf(" values=");
						for (uint32_t k = 0; k < r->n_values && (all_values || k < 8); k++)
						{
							float		f;

							/* the frame need not be aligned for float (UBSan) */
							memcpy(&f, v + k * sizeof(float), sizeof(float));
							printf(all_values ? "%s%.9g" : "%s%.6g", k ? "," : "", f);
						}
					}
					printf(" text=");
					print_escaped(r->text);
					if (r->json[0])
					{
						printf(" json=");
						print_escaped(r->json);
					}
				}
				else
				{
					printf("sqlstate=%s message=", r->sqlstate);
					print_escaped(r->message);
					printf(" | detail=");
					print_escaped(r->detail);
					printf(" | hint=");
					print_escaped(r->hint);
				}
				if (r->fragment > 0)
					printf(" fragment=%u", r->fragment);
				printf("\n");
			}
			break;
		default:
			printf("UNEXPECTED kind=%d\n", (int) h->kind);
			break;
	}
	rc = 0;

done:
	if (h != NULL)
		pginfer__header__free_unpacked(h, NULL);
	for (int i = 0; i < n; i++)
		zmq_msg_close(&parts[i]);
	fflush(stdout);
	return rc;
}

/* Reads and drops one reply; 0, or -1 when none came within the timeout. */
static int
skip_reply(void *sock, int timeout_ms)
{
	zmq_pollitem_t item = {sock, 0, ZMQ_POLLIN, 0};
	int			more = 1;

	if (zmq_poll(&item, 1, timeout_ms) <= 0)
		return -1;
	while (more)
	{
		zmq_msg_t	m;

		zmq_msg_init(&m);
		if (zmq_msg_recv(&m, sock, 0) < 0)
		{
			zmq_msg_close(&m);
			return -1;
		}
		more = zmq_msg_more(&m);
		zmq_msg_close(&m);
	}
	return 0;
}

/* Prints the usage text. */
static void
usage(void)
{
	fprintf(stderr,
			"usage: worker-client --endpoint EP [--timeout-ms N] [--version N]\n"
			"         [--ocr-models DET,CLS,REC,DICT] [--ocr-sha256 H0,H1,H2]\n"
			"         [--input-size HxW] [--all-values]\n"
			"         [--cancel] [--rounds N [--solo-last-round]]\n"
			"         [--embed MODEL] [--also ocr|detect] [--also-chain MODEL]\n"
			"         [--state-endpoint EP] [--cancel-after-ms N] [--names N0,N1,...]\n"
			"         [--input-sha256 H,H,...] [--cached-rows I,J,...] [--resend]\n"
			"         [--input-scope TEXT] [--pad-models N] [--copies N]\n"
			"         [--merge-models N] [--flood N [--flood-read]]\n"
			"         COMMAND [ARGS...]\n"
			"commands: ping | ocr FILE... | detect FILE... | predict MODEL FILE... |\n"
			"          classify MODEL LABELS FILE... | embed MODEL FILE... |\n"
			"          load MODEL [SHA256HEX] |\n"
			"          unload MODEL | cancel | garbage | deep N | frames N | state [COUNT] |\n"
			"          bulk ROWS N BYTES | flood N\n"
			"(\"+\" among FILEs: send the parts from separate clients at once)\n");
}

/* Fills a ModelSpec's file (and labels_file) fields. */
static void
spec_file(Pginfer__ModelSpec *m, const char *file, const char *labels_file)
{
	Pginfer__ModelSpec init = PGINFER__MODEL_SPEC__INIT;

	*m = init;
	m->name = (char *) file;
	m->file = (char *) file;
	if (labels_file != NULL)
		m->labels_file = (char *) labels_file;
}

/* Splits "a,b,c" in place into up to max pointers; returns the count. */
static int
split_commas(char *s, char **out, int max)
{
	int			n = 0;

	for (char *tok = strtok(s, ","); tok != NULL && n < max; tok = strtok(NULL, ","))
		out[n++] = tok;
	return n;
}

/* Parses 64 hex digits into 32 bytes; -1 when they are not. */
static int
parse_hex32(const char *hex, uint8_t out[32])
{
	if (strlen(hex) != 64)
		return -1;
	for (int i = 0; i < 32; i++)
	{
		unsigned	b;

		if (sscanf(hex + 2 * i, "%2x", &b) != 1)
			return -1;
		out[i] = (uint8_t) b;
	}
	return 0;
}

/* Opens a DEALER socket connected to endpoint; NULL with a message on error. */
static void *
open_client(void *ctx, const char *endpoint)
{
	void	   *sock = zmq_socket(ctx, ZMQ_DEALER);
	int			linger = 0;

	if (sock == NULL)
	{
		fprintf(stderr, "worker-client: zmq: %s\n", zmq_strerror(errno));
		return NULL;
	}
	zmq_setsockopt(sock, ZMQ_LINGER, &linger, sizeof(linger));
	if (zmq_connect(sock, endpoint) != 0)
	{
		fprintf(stderr, "worker-client: connect %s: %s\n", endpoint, zmq_strerror(errno));
		zmq_close(sock);
		return NULL;
	}
	return sock;
}

/*
 * Reads one whole reply from sock (which has one waiting) and returns its
 * unpacked header, the other parts read and dropped; NULL when it does not
 * unpack.  Free with pginfer__header__free_unpacked.
 */
static Pginfer__Header *
recv_header(void *sock)
{
	Pginfer__Header *r = NULL;
	zmq_msg_t	m;

	zmq_msg_init(&m);
	if (zmq_msg_recv(&m, sock, 0) >= 0)
		r = pginfer__header__unpack(NULL, zmq_msg_size(&m), zmq_msg_data(&m));
	while (zmq_msg_more(&m))
	{
		zmq_msg_close(&m);
		zmq_msg_init(&m);
		if (zmq_msg_recv(&m, sock, 0) < 0)
			break;
	}
	zmq_msg_close(&m);
	return r;
}

/*
 * One ping on sock and its PONG's state (NULL when none came within
 * timeout_ms or the answer was no PONG); free with
 * pginfer__header__free_unpacked.
 */
static Pginfer__Header *
ping_state(void *sock, uint64_t request_id, int timeout_ms)
{
	Pginfer__Header h = PGINFER__HEADER__INIT;
	zmq_pollitem_t item = {sock, 0, ZMQ_POLLIN, 0};
	Pginfer__Header *r;

	h.version = PGINFER_PROTOCOL_VERSION;
	h.kind = PGINFER__MSG_KIND__MSG_PING;
	h.request_id = request_id;
	if (send_request(sock, &h, NULL, NULL, 0) != 0 ||
		zmq_poll(&item, 1, timeout_ms) <= 0)
		return NULL;
	r = recv_header(sock);
	if (r != NULL && (r->kind != PGINFER__MSG_KIND__MSG_PONG || r->state == NULL))
	{
		pginfer__header__free_unpacked(r, NULL);
		r = NULL;
	}
	return r;
}

/* Prints "HELD ..." from a second client's ping (what the worker holds). */
static int
print_held(void *watch, uint64_t request_id, int timeout_ms, uint64_t *key)
{
	Pginfer__Header *r = ping_state(watch, request_id, timeout_ms);

	if (r == NULL)
	{
		printf("HELD none\n");
		return -1;
	}
	printf("HELD unread_answer_bytes=%llu refusals=%llu drops=%llu\n",
		   (unsigned long long) r->state->unread_answer_bytes,
		   (unsigned long long) r->state->client_limit_refusals,
		   (unsigned long long) r->state->client_limit_drops);
	/* steady: the same counts, and nothing queued (a load may come first) */
	if (key != NULL)
		*key = r->state->queue_length > 0 ? 0 :
			1 + r->state->client_limit_refusals * 1000003ULL +
			r->state->client_limit_drops * 7919ULL + r->state->unread_answer_bytes +
			r->state->requests_served * 104729ULL;
	pginfer__header__free_unpacked(r, NULL);
	return 0;
}

/*
 * The "flood N" command: a client that sends N pings (request ids 1000,
 * 1001, ...) without reading any answer, from a socket that reads little
 * (ZMQ_RCVHWM 1, ZMQ_RCVBUF 4096), so that the worker keeps the answers;
 * with req (--flood N and a command), N copies of that request (its
 * frames[0..nframes)) instead, each under its own request id.  With
 * --flood-read, a client that reads as answers come instead: default
 * socket options, no wait for a steady state, every answer read at once.
 * A second client then pings every 200 ms until two states agree and
 * nothing is queued (30 s at most), and prints what the worker holds
 * ("HELD ..."); the first reads every answer
 * and prints "FLOOD sent=N pongs=P refused=R other=O" (refused: MSG_ERROR
 * 53400), pings once more ("AFTER pong" or "AFTER none") and the second
 * prints "HELD ..." again.  Returns 0, or 2 on a socket error.
 */
static int
flood_command(void *ctx, const char *endpoint, long n, int timeout_ms,
			  const Pginfer__Header *req, void *const *frames,
			  const size_t *lens, int nframes)
{
	void	   *sock = zmq_socket(ctx, ZMQ_DEALER);
	void	   *watch = open_client(ctx, endpoint);
	int			one = 1,
				small = 4096,
				zero = 0;
	long		pongs = 0,
				refused = 0,
				other = 0;
	uint64_t	last = 0,
				key = 0;
	Pginfer__Header *after;

	if (sock == NULL || watch == NULL)
		return 2;
	zmq_setsockopt(sock, ZMQ_LINGER, &zero, sizeof(zero));
	if (!opt_flood_read)
	{
		zmq_setsockopt(sock, ZMQ_RCVHWM, &one, sizeof(one));
		zmq_setsockopt(sock, ZMQ_RCVBUF, &small, sizeof(small));
	}
	zmq_setsockopt(sock, ZMQ_SNDHWM, &zero, sizeof(zero));
	if (zmq_connect(sock, endpoint) != 0)
		return 2;
	for (long k = 0; k < n; k++)
	{
		Pginfer__Header h = PGINFER__HEADER__INIT;

		if (req != NULL)
			h = *req;
		else
		{
			h.version = PGINFER_PROTOCOL_VERSION;
			h.kind = PGINFER__MSG_KIND__MSG_PING;
		}
		h.request_id = 1000 + (uint64_t) k;
		if (send_request(sock, &h, frames, lens, req != NULL ? nframes : 0) != 0)
			return 2;
	}
	for (int turn = 0; !opt_flood_read && turn < 150 && (key == 0 || key != last); turn++)
	{
		last = key;
		usleep(200000);
		if (print_held(watch, 10 + (uint64_t) turn, timeout_ms, &key) != 0)
			return 2;
	}
	for (;;)
	{
		zmq_pollitem_t item = {sock, 0, ZMQ_POLLIN, 0};
		Pginfer__Header *r;

		if (zmq_poll(&item, 1, opt_flood_read ? timeout_ms : 2000) <= 0)
			break;
		r = recv_header(sock);
		if (r != NULL && (r->kind == PGINFER__MSG_KIND__MSG_PONG ||
						  r->kind == PGINFER__MSG_KIND__MSG_RESULT))
			pongs++;
		else if (r != NULL && r->kind == PGINFER__MSG_KIND__MSG_ERROR &&
				 r->error != NULL && r->error->sqlstate != NULL &&
				 strcmp(r->error->sqlstate, "53400") == 0)
		{
			if (refused == 0)
				printf("REFUSAL request_id=%llu message=%s | hint=%s\n",
					   (unsigned long long) r->request_id, r->error->message,
					   r->error->hint != NULL ? r->error->hint : "");
			refused++;
		}
		else
			other++;
		if (r != NULL)
			pginfer__header__free_unpacked(r, NULL);
		if (opt_flood_read && pongs + refused + other >= n)
			break;
	}
	printf("FLOOD sent=%ld %s=%ld refused=%ld other=%ld\n", n,
		   req != NULL ? "results" : "pongs", pongs, refused, other);
	after = ping_state(sock, 5, timeout_ms);
	printf("AFTER %s\n", after != NULL ? "pong" : "none");
	if (after != NULL)
		pginfer__header__free_unpacked(after, NULL);
	print_held(watch, 6, timeout_ms, NULL);
	zmq_close(sock);
	zmq_close(watch);
	return 0;
}

/*
 * The "state" command: subscribes to the worker's state socket (endpoint
 * given, or learned from a PING's state_endpoint) and prints count
 * MSG_STATE messages, one STATE line each with the milliseconds since the
 * subscription (t_ms).  Returns 0, 3 when they did not all come within
 * timeout_ms, 2 on an error.
 */
static int
state_command(void *ctx, const char *endpoint, const char *state_ep,
			  int count, int timeout_ms)
{
	char		learned[512];
	void	   *sub = NULL;
	int			rc = 2,
				got = 0,
				linger = 0;
	struct timespec t0;

	if (state_ep == NULL)
	{
		void	   *sock = open_client(ctx, endpoint);
		Pginfer__Header h = PGINFER__HEADER__INIT;
		zmq_pollitem_t item = {sock, 0, ZMQ_POLLIN, 0};
		zmq_msg_t	m;
		Pginfer__Header *r = NULL;

		if (sock == NULL)
			return 2;
		h.version = PGINFER_PROTOCOL_VERSION;
		h.kind = PGINFER__MSG_KIND__MSG_PING;
		h.request_id = 7;
		learned[0] = '\0';
		if (client_send_header(sock, &h, 0) == 0 && zmq_poll(&item, 1, timeout_ms) > 0)
		{
			zmq_msg_init(&m);
			if (zmq_msg_recv(&m, sock, 0) >= 0)
				r = pginfer__header__unpack(NULL, zmq_msg_size(&m), zmq_msg_data(&m));
			if (r != NULL && r->state != NULL)
				snprintf(learned, sizeof(learned), "%s", r->state->state_endpoint);
			if (r != NULL)
				pginfer__header__free_unpacked(r, NULL);
			zmq_msg_close(&m);
		}
		zmq_close(sock);
		if (learned[0] == '\0')
		{
			printf("NOREPLY (no PONG with a state_endpoint)\n");
			return 3;
		}
		state_ep = learned;
	}
	sub = zmq_socket(ctx, ZMQ_SUB);
	if (sub == NULL)
		return 2;
	zmq_setsockopt(sub, ZMQ_LINGER, &linger, sizeof(linger));
	zmq_setsockopt(sub, ZMQ_SUBSCRIBE, "", 0);
	if (zmq_connect(sub, state_ep) != 0)
	{
		fprintf(stderr, "worker-client: connect %s: %s\n", state_ep, zmq_strerror(errno));
		goto done;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (got < count)
	{
		zmq_pollitem_t item = {sub, 0, ZMQ_POLLIN, 0};
		struct timespec t;
		double		ms;
		zmq_msg_t	m;
		Pginfer__Header *h;

		clock_gettime(CLOCK_MONOTONIC, &t);
		ms = (t.tv_sec - t0.tv_sec) * 1e3 + (t.tv_nsec - t0.tv_nsec) / 1e6;
		if (ms >= timeout_ms || zmq_poll(&item, 1, timeout_ms - (long) ms) <= 0)
		{
			printf("NOREPLY after %d state messages\n", got);
			rc = 3;
			goto done;
		}
		zmq_msg_init(&m);
		if (zmq_msg_recv(&m, sub, 0) < 0)
		{
			zmq_msg_close(&m);
			goto done;
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
		ms = (t.tv_sec - t0.tv_sec) * 1e3 + (t.tv_nsec - t0.tv_nsec) / 1e6;
		h = pginfer__header__unpack(NULL, zmq_msg_size(&m), zmq_msg_data(&m));
		zmq_msg_close(&m);
		if (h == NULL || h->kind != PGINFER__MSG_KIND__MSG_STATE || h->state == NULL)
		{
			printf("BADSTATE\n");
			if (h != NULL)
				pginfer__header__free_unpacked(h, NULL);
			goto done;
		}
		printf("STATE t_ms=%.1f queue=%u backlog_ms=%.3f served=%llu resident=",
			   ms, h->state->queue_length, h->state->backlog_ms,
			   (unsigned long long) h->state->requests_served);
		for (size_t i = 0; i < h->state->n_resident_models; i++)
			printf("%s%s", i ? "," : "", h->state->resident_models[i]);
		print_state_fields(h->state);
		printf("\n");
		fflush(stdout);
		pginfer__header__free_unpacked(h, NULL);
		got++;
	}
	rc = 0;

done:
	zmq_close(sub);
	return rc;
}

/* Appends the varint v at p; returns its length in bytes. */
static size_t
put_varint(uint8_t *p, uint64_t v)
{
	size_t		n = 0;

	do
	{
		p[n] = (uint8_t) (v & 0x7f);
		v >>= 7;
		if (v != 0)
			p[n] |= 0x80;
		n++;
	} while (v != 0);
	return n;
}

/*
 * Puts field `tag` (length-delimited) around buf[*off, end) by writing its
 * tag and length just before *off, which moves back over them.
 */
static void
wrap_field(uint8_t *buf, size_t *off, size_t end, uint8_t tag)
{
	uint8_t		t[11];
	size_t		n = put_varint(t + 1, end - *off);

	t[0] = tag;
	*off -= n + 1;
	memcpy(buf + *off, t, n + 1);
}

/*
 * Sends a MSG_RUN_FRAGMENT header (request id 7, no rows) whose fragment,
 * of kind FRAG_EMBED_TEXT at the bottom, is wrapped depth times in
 * Fragment.next; raw wire bytes, since protobuf-c would pack a deep one
 * by recursion too.  0 or -1.
 */
static int
send_deep(void *sock, long depth)
{
	size_t		cap = (size_t) depth * 8 + 64,
				off = cap;
	uint8_t    *buf = malloc(cap);
	int			rc;

	if (buf == NULL)
		return -1;
	buf[--off] = (uint8_t) PGINFER__FRAGMENT_KIND__FRAG_EMBED_TEXT;
	buf[--off] = 0x08;			/* Fragment.kind */
	for (long d = 0; d < depth; d++)
		wrap_field(buf, &off, cap, 0x22);	/* Fragment.next = 4 */
	wrap_field(buf, &off, cap, 0x0a);	/* RunFragment.fragment = 1 */
	wrap_field(buf, &off, cap, 0x22);	/* Header.run = 4 */
	off -= 6;
	buf[off] = 0x08;			/* version */
	buf[off + 1] = PGINFER_PROTOCOL_VERSION;
	buf[off + 2] = 0x10;		/* kind */
	buf[off + 3] = PGINFER__MSG_KIND__MSG_RUN_FRAGMENT;
	buf[off + 4] = 0x18;		/* request_id */
	buf[off + 5] = 7;
	rc = zmq_send(sock, buf + off, cap - off, 0) < 0 ? -1 : 0;
	free(buf);
	return rc;
}

/* Builds the request named by the command line, sends it, prints the reply. */
int
main(int argc, char **argv)
{
	client_opts o = {NULL, 5000, PGINFER_PROTOCOL_VERSION,
		"ch_PP-OCRv4_det_infer.onnx", "ch_ppocr_mobile_v2.0_cls_infer.onnx",
	"ch_PP-OCRv4_rec_infer.onnx", "ppocr_keys_v1.txt", 0, 0, 1, 0, NULL, NULL, NULL, NULL, 0};
	Pginfer__Fragment also_next = PGINFER__FRAGMENT__INIT;
	Pginfer__ModelSpec also_next_spec;
	Pginfer__ModelSpec *also_next_spec_ptrs[1] = {&also_next_spec};
	Pginfer__Fragment next = PGINFER__FRAGMENT__INIT;
	Pginfer__Fragment also = PGINFER__FRAGMENT__INIT;
	Pginfer__Fragment *also_ptrs[1] = {&also};
	Pginfer__ModelSpec next_spec;
	Pginfer__ModelSpec *next_spec_ptrs[1] = {&next_spec};
	Pginfer__Header h = PGINFER__HEADER__INIT;
	Pginfer__RunFragment run = PGINFER__RUN_FRAGMENT__INIT;
	Pginfer__Fragment frag = PGINFER__FRAGMENT__INIT;
	Pginfer__ModelRequest mreq = PGINFER__MODEL_REQUEST__INIT;
	Pginfer__ModelSpec specs[3];
	Pginfer__ModelSpec *spec_ptrs[3] = {&specs[0], &specs[1], &specs[2]};
	char	   *labels[256];
	uint8_t		digest[32];
	static uint64_t row_ids[MAX_FRAMES];
	static void *frames[MAX_FRAMES];
	static size_t lens[MAX_FRAMES];
	int			n_frames = 0;
	int			client_start[MAX_CLIENTS + 1] = {0};
	char		names_buf[1024];
	char	   *names[MAX_CLIENTS];
	int			n_names = 0;
	int			n_clients = 1;
	int			in_h = 0,
				in_w = 0;
	long long	bulk_rows = 0,
				bulk_n = 0,
				bulk_bytes = 0;
	uint64_t   *bulk_ids = NULL;
	uint8_t    *bulk_buf = NULL;
	long		deep_n = 0;
	char		ocr_buf[1024];
	uint8_t		ocr_sha[3][32];
	int			ocr_has_sha[3] = {0, 0, 0};
	void	   *ctx = NULL,
			   *socks[MAX_CLIENTS] = {NULL};
	int			rc = 2;
	int			i = 1;
	const char *cmd;
	int			expect_reply = 1;
	int			owns_frames = 1;

	for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++)
	{
		if (strcmp(argv[i], "--all-values") == 0)
		{
			o.all_values = 1;
			continue;
		}
		if (strcmp(argv[i], "--cancel") == 0)
		{
			o.cancel = 1;
			continue;
		}
		if (strcmp(argv[i], "--solo-last-round") == 0)
		{
			o.solo_last_round = 1;
			continue;
		}
		if (strcmp(argv[i], "--resend") == 0)
		{
			opt_resend = 1;
			continue;
		}
		if (strcmp(argv[i], "--flood-read") == 0)
		{
			opt_flood_read = 1;
			continue;
		}
		if (i + 1 >= argc)
			break;
		if (strcmp(argv[i], "--endpoint") == 0)
			o.endpoint = argv[++i];
		else if (strcmp(argv[i], "--embed") == 0)
			o.embed = argv[++i];
		else if (strcmp(argv[i], "--state-endpoint") == 0)
			o.state_endpoint = argv[++i];
		else if (strcmp(argv[i], "--names") == 0)
		{
			snprintf(names_buf, sizeof(names_buf), "%s", argv[++i]);
			n_names = split_commas(names_buf, names, MAX_CLIENTS);
		}
		else if (strcmp(argv[i], "--input-sha256") == 0)
			opt_input_sha256 = argv[++i];
		else if (strcmp(argv[i], "--cached-rows") == 0)
			opt_cached_rows = argv[++i];
		else if (strcmp(argv[i], "--input-scope") == 0)
			opt_input_scope = argv[++i];
		else if (strcmp(argv[i], "--pad-models") == 0)
			opt_pad_models = atoi(argv[++i]);
		else if (strcmp(argv[i], "--merge-models") == 0)
			opt_merge_models = atoi(argv[++i]);
		else if (strcmp(argv[i], "--copies") == 0)
			opt_copies = atoi(argv[++i]);
		else if (strcmp(argv[i], "--flood") == 0)
			opt_flood = atol(argv[++i]);
		else if (strcmp(argv[i], "--cancel-after-ms") == 0)
		{
			o.cancel_after_ms = atoi(argv[++i]);
			o.cancel = 1;
		}
		else if (strcmp(argv[i], "--also") == 0)
			o.also = argv[++i];
		else if (strcmp(argv[i], "--also-chain") == 0)
		{
			o.also_chain = argv[++i];
			o.also = "ocr";
		}
		else if (strcmp(argv[i], "--timeout-ms") == 0)
			o.timeout_ms = atoi(argv[++i]);
		else if (strcmp(argv[i], "--version") == 0)
			o.version = (unsigned) strtoul(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--rounds") == 0)
		{
			o.rounds = atoi(argv[++i]);
			if (o.rounds < 1)
			{
				usage();
				return 2;
			}
		}
		else if (strcmp(argv[i], "--input-size") == 0)
		{
			if (sscanf(argv[++i], "%dx%d", &in_h, &in_w) != 2 || in_h < 0 || in_w < 0)
			{
				usage();
				return 2;
			}
		}
		else if (strcmp(argv[i], "--ocr-models") == 0)
		{
			char	   *p[4] = {NULL, NULL, NULL, NULL};

			snprintf(ocr_buf, sizeof(ocr_buf), "%s", argv[++i]);
			if (split_commas(ocr_buf, p, 4) != 4)
			{
				usage();
				return 2;
			}
			o.det = p[0];
			o.cls = strcmp(p[1], "none") == 0 ? "" : p[1];
			o.rec = p[2];
			o.dict = p[3];
		}
		else if (strcmp(argv[i], "--ocr-sha256") == 0 && i + 1 < argc)
		{
			char		buf[256];
			char	   *p[3] = {NULL, NULL, NULL};

			snprintf(buf, sizeof(buf), "%s", argv[++i]);
			if (split_commas(buf, p, 3) != 3)
			{
				usage();
				return 2;
			}
			for (int k = 0; k < 3; k++)
			{
				if (strcmp(p[k], "-") == 0)
					continue;
				if (parse_hex32(p[k], ocr_sha[k]) != 0)
				{
					fprintf(stderr, "worker-client: bad SHA-256 \"%s\"\n", p[k]);
					return 2;
				}
				ocr_has_sha[k] = 1;
			}
		}
		else
		{
			usage();
			return 2;
		}
	}
	if (o.endpoint == NULL || i >= argc)
	{
		usage();
		return 2;
	}
	cmd = argv[i++];

	if (strcmp(cmd, "flood") == 0)
	{
		long		count = i < argc ? atol(argv[i]) : 0;

		ctx = zmq_ctx_new();
		if (ctx == NULL || count < 1)
		{
			usage();
			return 2;
		}
		rc = flood_command(ctx, o.endpoint, count, o.timeout_ms, NULL, NULL, NULL, 0);
		zmq_ctx_term(ctx);
		return rc;
	}
	if (strcmp(cmd, "state") == 0)
	{
		int			count = i < argc ? atoi(argv[i]) : 1;

		ctx = zmq_ctx_new();
		if (ctx == NULL || count < 1)
		{
			usage();
			return 2;
		}
		rc = state_command(ctx, o.endpoint, o.state_endpoint, count, o.timeout_ms);
		zmq_ctx_term(ctx);
		return rc;
	}
	h.version = o.version;
	h.request_id = 7;
	if (strcmp(cmd, "ping") == 0)
		h.kind = PGINFER__MSG_KIND__MSG_PING;
	else if (strcmp(cmd, "cancel") == 0)
	{
		h.kind = PGINFER__MSG_KIND__MSG_CANCEL;
		expect_reply = 0;
	}
	else if (strcmp(cmd, "load") == 0 || strcmp(cmd, "unload") == 0)
	{
		if (i >= argc)
		{
			usage();
			return 2;
		}
		h.kind = cmd[0] == 'l' ? PGINFER__MSG_KIND__MSG_LOAD_MODEL :
			PGINFER__MSG_KIND__MSG_UNLOAD_MODEL;
		spec_file(&specs[0], argv[i++], NULL);
		if (i < argc)
		{
			if (parse_hex32(argv[i], digest) != 0)
			{
				fprintf(stderr, "worker-client: bad SHA-256 \"%s\"\n", argv[i]);
				return 2;
			}
			specs[0].sha256.data = digest;
			specs[0].sha256.len = 32;
		}
		mreq.model = &specs[0];
		h.model = &mreq;
	}
	else if (strcmp(cmd, "frames") == 0)
	{
		static const char junk[] = "not an image";

		if (i >= argc)
		{
			usage();
			return 2;
		}
		owns_frames = 0;
		n_frames = atoi(argv[i]);
		if (n_frames < 0 || n_frames > MAX_FRAMES)
			n_frames = 0;
		for (int k = 0; k < n_frames; k++)
		{
			frames[k] = (void *) junk;
			lens[k] = sizeof(junk) - 1;
		}
		row_ids[0] = ROW_ID_BASE;
		spec_file(&specs[0], o.det, NULL);
		frag.kind = PGINFER__FRAGMENT_KIND__FRAG_DETECT_TEXT;
		frag.n_models = 1;
		frag.models = spec_ptrs;
		run.fragment = &frag;
		run.n_row_ids = 1;
		run.row_ids = row_ids;
		h.kind = PGINFER__MSG_KIND__MSG_RUN_FRAGMENT;
		h.run = &run;
		client_start[1] = 1;
	}
	else if (strcmp(cmd, "ocr") == 0 || strcmp(cmd, "detect") == 0 ||
			 strcmp(cmd, "predict") == 0 || strcmp(cmd, "classify") == 0 ||
			 strcmp(cmd, "embed") == 0)
	{
		h.kind = PGINFER__MSG_KIND__MSG_RUN_FRAGMENT;
		if (cmd[0] == 'o')
		{
			frag.kind = PGINFER__FRAGMENT_KIND__FRAG_OCR;
			spec_file(&specs[0], o.det, NULL);
			spec_file(&specs[1], o.cls, NULL);
			spec_file(&specs[2], o.rec, o.dict);
			for (int k = 0; k < 3; k++)
				if (ocr_has_sha[k])
				{
					specs[k].sha256.data = ocr_sha[k];
					specs[k].sha256.len = 32;
				}
			frag.n_models = 3;
		}
		else if (cmd[0] == 'e')
		{
			if (i >= argc)
			{
				usage();
				return 2;
			}
			frag.kind = PGINFER__FRAGMENT_KIND__FRAG_EMBED_TEXT;
			frag.truncate_text = 1;
			spec_file(&specs[0], argv[i++], NULL);
			frag.n_models = 1;
		}
		else if (cmd[0] == 'd')
		{
			frag.kind = PGINFER__FRAGMENT_KIND__FRAG_DETECT_TEXT;
			spec_file(&specs[0], o.det, NULL);
			frag.n_models = 1;
		}
		else
		{
			if (i >= argc)
			{
				usage();
				return 2;
			}
			frag.kind = cmd[0] == 'p' ? PGINFER__FRAGMENT_KIND__FRAG_PREDICT :
				PGINFER__FRAGMENT_KIND__FRAG_CLASSIFY;
			spec_file(&specs[0], argv[i++], NULL);
			specs[0].input_height = in_h;
			specs[0].input_width = in_w;
			frag.n_models = 1;
			if (frag.kind == PGINFER__FRAGMENT_KIND__FRAG_CLASSIFY)
			{
				if (i >= argc)
				{
					usage();
					return 2;
				}
				specs[0].n_labels = (size_t) split_commas(argv[i++], labels, 256);
				specs[0].labels = labels;
			}
		}
		frag.models = spec_ptrs;
		for (; i < argc && n_frames < MAX_FRAMES; i++)
		{
			if (strcmp(argv[i], "+") == 0)
			{
				if (n_clients == MAX_CLIENTS)
				{
					fprintf(stderr, "worker-client: at most %d clients\n", MAX_CLIENTS);
					goto done;
				}
				client_start[n_clients++] = n_frames;
				continue;
			}
			frames[n_frames] = client_read_file("worker-client", argv[i], &lens[n_frames]);
			if (frames[n_frames] == NULL)
				goto done;
			row_ids[n_frames] = ROW_ID_BASE +
				1000 * (uint64_t) (n_clients - 1) +
				(uint64_t) (n_frames - client_start[n_clients - 1]);
			n_frames++;
		}
		if (o.embed != NULL)
		{
			spec_file(&next_spec, o.embed, NULL);
			next.kind = PGINFER__FRAGMENT_KIND__FRAG_EMBED_TEXT;
			next.n_models = 1;
			next.models = next_spec_ptrs;
			next.truncate_text = 1;
			frag.next = &next;
		}
		if (o.also != NULL && cmd[0] != 'o' && cmd[0] != 'd')
		{
			usage();
			goto done;
		}
		if (o.also != NULL)
		{
			/* the same models as frag's OCR (specs[0..2]) */
			spec_file(&specs[0], o.det, NULL);
			spec_file(&specs[1], o.cls, NULL);
			spec_file(&specs[2], o.rec, o.dict);
			also.kind = strcmp(o.also, "ocr") == 0 ?
				PGINFER__FRAGMENT_KIND__FRAG_OCR :
				PGINFER__FRAGMENT_KIND__FRAG_DETECT_TEXT;
			also.n_models = also.kind == PGINFER__FRAGMENT_KIND__FRAG_OCR ? 3 : 1;
			also.models = spec_ptrs;
			if (o.also_chain != NULL)
			{
				spec_file(&also_next_spec, o.also_chain, NULL);
				also_next.kind = PGINFER__FRAGMENT_KIND__FRAG_EMBED_TEXT;
				also_next.n_models = 1;
				also_next.models = also_next_spec_ptrs;
				also_next.truncate_text = 1;
				also.next = &also_next;
			}
			run.n_more_fragments = 1;
			run.more_fragments = also_ptrs;
		}
		run.fragment = &frag;
		run.n_row_ids = (size_t) n_frames;
		run.row_ids = row_ids;
		h.run = &run;
		if (pad_shape(&frag, &run) != 0)
			goto done;
	}
	else if (strcmp(cmd, "bulk") == 0)
	{
		if (i + 3 > argc)
		{
			usage();
			return 2;
		}
		bulk_rows = strtoll(argv[i], NULL, 10);
		bulk_n = strtoll(argv[i + 1], NULL, 10);
		bulk_bytes = strtoll(argv[i + 2], NULL, 10);
		if (bulk_rows < 0 || bulk_n < 0 || bulk_bytes < 0)
		{
			usage();
			return 2;
		}
		bulk_ids = calloc(bulk_rows > 0 ? (size_t) bulk_rows : 1, sizeof(uint64_t));
		bulk_buf = calloc(bulk_bytes > 0 ? (size_t) bulk_bytes : 1, 1);
		if (bulk_ids == NULL || bulk_buf == NULL)
		{
			fprintf(stderr, "worker-client: out of memory\n");
			free(bulk_ids);
			free(bulk_buf);
			return 2;
		}
		for (long long k = 0; k < bulk_rows; k++)
			bulk_ids[k] = ROW_ID_BASE + (uint64_t) k;
		spec_file(&specs[0], o.det, NULL);
		frag.kind = PGINFER__FRAGMENT_KIND__FRAG_DETECT_TEXT;
		frag.n_models = 1;
		frag.models = spec_ptrs;
		run.fragment = &frag;
		run.n_row_ids = (size_t) bulk_rows;
		run.row_ids = bulk_ids;
		h.kind = PGINFER__MSG_KIND__MSG_RUN_FRAGMENT;
		h.run = &run;
		if (pad_shape(&frag, &run) != 0)
			goto done;
	}
	else if (strcmp(cmd, "deep") == 0)
	{
		if (i + 1 != argc || (deep_n = atol(argv[i])) < 0 || deep_n > 10000000)
		{
			usage();
			return 2;
		}
	}
	else if (strcmp(cmd, "garbage") != 0)
	{
		usage();
		return 2;
	}
	client_start[n_clients] = n_frames;
	if ((opt_input_sha256 != NULL || opt_cached_rows != NULL ||
		 opt_input_scope != NULL) &&
		(h.run == NULL || n_clients > 1 ||
		 setup_input_cache(&run, n_frames, lens) != 0))
	{
		fprintf(stderr, "worker-client: bad --input-sha256, --cached-rows or --input-scope (one per row, one client)\n");
		goto done;
	}

	ctx = zmq_ctx_new();
	if (ctx == NULL)
	{
		fprintf(stderr, "worker-client: zmq: %s\n", zmq_strerror(errno));
		goto done;
	}
	if (opt_flood > 0)
	{
		rc = flood_command(ctx, o.endpoint, opt_flood, o.timeout_ms, &h,
						   (void *const *) frames, lens, n_frames);
		goto done;
	}
	for (int c = 0; c < n_clients; c++)
		if ((socks[c] = open_client(ctx, o.endpoint)) == NULL)
			goto done;
	for (int round = 1; round <= o.rounds; round++)
	{
		int			last = round == o.rounds;
		int			senders = last && o.solo_last_round ? 1 : n_clients;

		if (strcmp(cmd, "deep") == 0)
		{
			if (send_deep(socks[0], deep_n) != 0)
				goto done;
			senders = 1;
		}
		else if (strcmp(cmd, "garbage") == 0)
		{
			/* Field 1 as a length-delimited field of 200 bytes, only 3 present. */
			static const uint8_t bad[] = {0x0a, 0xc8, 0x01, 'x', 'y', 'z'};

			if (zmq_send(socks[0], bad, sizeof(bad), 0) < 0)
				goto done;
			senders = 1;
		}
		else if (bulk_buf != NULL)
		{
			h.request_id = 7;
			if (send_bulk(socks[0], &h, bulk_n, bulk_buf, (size_t) bulk_bytes) != 0)
			{
				fprintf(stderr, "worker-client: send: %s\n", zmq_strerror(errno));
				goto done;
			}
			senders = 1;
		}
		else
		{
			/* Every client sends before any reply is read. */
			for (int c = 0; c < senders; c++)
			{
				int			first = client_start[c];
				int			n = client_start[c + 1] - first;

				h.request_id = 7 + (uint64_t) c;
				if (h.run != NULL && strcmp(cmd, "frames") != 0)
				{
					run.n_row_ids = (size_t) n;
					run.row_ids = &row_ids[first];
				}
				if (n_names > 0 && run.fragment != NULL && run.fragment->n_models > 0 &&
					run.fragment->models[0] != NULL)
					run.fragment->models[0]->name = names[c < n_names ? c : n_names - 1];
				if (send_request(socks[c], &h, &frames[first], &lens[first],
								 strcmp(cmd, "frames") == 0 ? n_frames : n) != 0)
				{
					fprintf(stderr, "worker-client: send: %s\n", zmq_strerror(errno));
					goto done;
				}
				if (o.cancel && last)
				{
					if (o.cancel_after_ms > 0)
					{
						struct timespec ts = {o.cancel_after_ms / 1000,
						(long) (o.cancel_after_ms % 1000) * 1000000L};

						nanosleep(&ts, NULL);
					}
					Pginfer__Header ch = PGINFER__HEADER__INIT;

					ch.version = o.version;
					ch.kind = PGINFER__MSG_KIND__MSG_CANCEL;
					ch.request_id = h.request_id;
					if (send_request(socks[c], &ch, NULL, NULL, 0) != 0)
						goto done;
				}
			}
		}
		if (!last)
		{
			/* Earlier rounds only make the peers known to the worker. */
			for (int c = 0; c < senders; c++)
				if (skip_reply(socks[c], o.timeout_ms) != 0)
				{
					printf("NOREPLY in round %d\n", round);
					rc = 3;
					goto done;
				}
			continue;
		}
		rc = 0;
		for (int c = 0; c < senders; c++)
		{
			int			r;

			if (n_clients > 1)
				printf("CLIENT %d\n", c);
			r = print_reply(socks[c], o.timeout_ms, o.all_values);
			for (int again = 0; r == 0 && opt_resend && n_need_rows > 0 && again < 2; again++)
			{
				if (resend_needed(socks[c], &h, frames, lens, n_frames) != 0)
					goto done;
				r = print_reply(socks[c], o.timeout_ms, o.all_values);
			}
			if (!expect_reply || o.cancel)
				r = r == 3 ? 0 : 2;	/* no reply expected */
			if (r != 0)
				rc = r;
		}
	}

done:
	free(bulk_ids);
	free(bulk_buf);
	free(pad_ptrs);
	free(pad_specs);
	free(copy_ptrs);
	if (owns_frames)
		for (int k = 0; k < n_frames; k++)
			free(frames[k]);
	for (int c = 0; c < n_clients; c++)
		if (socks[c] != NULL)
			zmq_close(socks[c]);
	if (ctx != NULL)
		zmq_ctx_term(ctx);
	return rc;
}
