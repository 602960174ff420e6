/*
 * worker_client.c
 *	  A small command-line client of infer-worker for the process tests
 *	  (tests/integration/test_worker.sh): sends one request over a DEALER
 *	  socket and prints the reply as lines a shell test can grep.
 *
 *	  worker-client --endpoint EP [--timeout-ms N] [--version N]
 *					[--ocr-models DET,CLS,REC,DICT] COMMAND [ARGS...]
 *
 * --ocr-models names the OCR fragment's files (relative to the worker's
 * --model-dir; CLS "none" runs without the direction classifier).
 *
 *	  ping							 MSG_PING
 *	  ocr FILE...					 FRAG_OCR over the files, one row each
 *	  detect FILE...				 FRAG_DETECT_TEXT
 *	  predict MODEL FILE...			 FRAG_PREDICT with MODEL (relative path)
 *	  classify MODEL L1,L2,.. FILE.. FRAG_CLASSIFY with those labels
 *	  load MODEL [SHA256HEX]		 MSG_LOAD_MODEL
 *	  unload MODEL					 MSG_UNLOAD_MODEL
 *	  cancel						 MSG_CANCEL (expects no reply)
 *	  garbage						 a header frame that is not a Header
 *	  frames N						 MSG_RUN_FRAGMENT with one row id and N
 *									 payload frames
 *
 * Output, one item a line:
 *	  PONG worker_id=W served=N resident=A,B
 *	  ERROR sqlstate=S message=M | detail=D | hint=H
 *	  RESULT rows=N frames=F request_id=R
 *	  ROW i id=ID ok=1 n_values=K frame_bytes=B text=T	(newlines as \n)
 *	  ROW i id=ID ok=0 sqlstate=S message=M | detail=D
 *	  NOREPLY						 (no reply within the timeout)
 * Exit status: 0 a reply (of any kind) arrived (for cancel: none did), 3
 * none did within the timeout, 2 usage or I/O error.  Row ids are 100,
 * 101, ... in argument order; the request id is 7.
 *
 * Threading: single-threaded.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "common/protocol.h"

#define ROW_ID_BASE 100

typedef struct client_opts
{
	const char *endpoint;
	int			timeout_ms;
	unsigned	version;
	const char *det;
	const char *cls;
	const char *rec;
	const char *dict;
} client_opts;

/* Reads a whole file into a malloc'd buffer; NULL with a message on error. */
static void *
read_file(const char *path, size_t *len)
{
	FILE	   *f = fopen(path, "rb");
	void	   *buf = NULL;
	long		n;

	if (f == NULL)
	{
		fprintf(stderr, "worker-client: %s: %s\n", path, strerror(errno));
		return NULL;
	}
	if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0)
		goto fail;
	buf = malloc(n > 0 ? (size_t) n : 1);
	if (buf == NULL || fread(buf, 1, (size_t) n, f) != (size_t) n)
		goto fail;
	fclose(f);
	*len = (size_t) n;
	return buf;

fail:
	fprintf(stderr, "worker-client: could not read %s\n", path);
	free(buf);
	fclose(f);
	return NULL;
}

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

/* Sends header h followed by n payload frames (copied by ZeroMQ). */
static int
send_request(void *sock, const Pginfer__Header *h, void *const *frames,
			 const size_t *lens, int n)
{
	size_t		hl = pginfer__header__get_packed_size(h);
	uint8_t    *hb = malloc(hl > 0 ? hl : 1);
	int			rc = -1;

	if (hb == NULL)
		return -1;
	pginfer__header__pack(h, hb);
	if (zmq_send(sock, hb, hl, n > 0 ? ZMQ_SNDMORE : 0) < 0)
		goto done;
	for (int i = 0; i < n; i++)
		if (zmq_send(sock, frames[i], lens[i], i + 1 < n ? ZMQ_SNDMORE : 0) < 0)
			goto done;
	rc = 0;

done:
	free(hb);
	return rc;
}

/*
 * Waits for one reply and prints it.  Returns 0 when one came, 3 when
 * none did within the timeout, 2 on a socket error.
 */
static int
print_reply(void *sock, int timeout_ms)
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
			printf("PONG worker_id=%s served=%llu resident=",
				   h->state ? h->state->worker_id : "?",
				   h->state ? (unsigned long long) h->state->requests_served : 0ULL);
			for (size_t i = 0; h->state && i < h->state->n_resident_models; i++)
				printf("%s%s", i ? "," : "", h->state->resident_models[i]);
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
			printf("RESULT rows=%zu frames=%d request_id=%llu\n", h->result->n_rows,
				   n - 1, (unsigned long long) h->request_id);
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
						const float *v = zmq_msg_data(&parts[i + 1]);

						printf(" values=");
						for (uint32_t k = 0; k < r->n_values && k < 8; k++)
							printf("%s%.6g", k ? "," : "", v[k]);
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

/* Prints the usage text. */
static void
usage(void)
{
	fprintf(stderr,
			"usage: worker-client --endpoint EP [--timeout-ms N] [--version N]\n"
			"         [--ocr-models DET,CLS,REC,DICT] COMMAND [ARGS...]\n"
			"commands: ping | ocr FILE... | detect FILE... | predict MODEL FILE... |\n"
			"          classify MODEL LABELS FILE... | load MODEL [SHA256HEX] |\n"
			"          unload MODEL | cancel | garbage | frames N\n");
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

/* Builds the request named by the command line, sends it, prints the reply. */
int
main(int argc, char **argv)
{
	client_opts o = {NULL, 5000, PGINFER_PROTOCOL_VERSION,
	"ch_PP-OCRv4_det_infer.onnx", "ch_ppocr_mobile_v2.0_cls_infer.onnx",
	"ch_PP-OCRv4_rec_infer.onnx", "ppocr_keys_v1.txt"};
	Pginfer__Header h = PGINFER__HEADER__INIT;
	Pginfer__RunFragment run = PGINFER__RUN_FRAGMENT__INIT;
	Pginfer__Fragment frag = PGINFER__FRAGMENT__INIT;
	Pginfer__ModelRequest mreq = PGINFER__MODEL_REQUEST__INIT;
	Pginfer__ModelSpec specs[3];
	Pginfer__ModelSpec *spec_ptrs[3] = {&specs[0], &specs[1], &specs[2]};
	char	   *labels[256];
	uint8_t		digest[32];
	uint64_t	row_ids[256];
	void	   *frames[256] = {NULL};
	size_t		lens[256] = {0};
	int			n_frames = 0;
	char		ocr_buf[1024];
	void	   *ctx = NULL,
			   *sock = NULL;
	int			linger = 0;
	int			rc = 2;
	int			i = 1;
	const char *cmd;
	int			expect_reply = 1;

	for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++)
	{
		if (i + 1 >= argc)
			break;
		if (strcmp(argv[i], "--endpoint") == 0)
			o.endpoint = argv[++i];
		else if (strcmp(argv[i], "--timeout-ms") == 0)
			o.timeout_ms = atoi(argv[++i]);
		else if (strcmp(argv[i], "--version") == 0)
			o.version = (unsigned) strtoul(argv[++i], NULL, 10);
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
		n_frames = atoi(argv[i]);
		if (n_frames < 0 || n_frames > 256)
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
	}
	else if (strcmp(cmd, "ocr") == 0 || strcmp(cmd, "detect") == 0 ||
			 strcmp(cmd, "predict") == 0 || strcmp(cmd, "classify") == 0)
	{
		h.kind = PGINFER__MSG_KIND__MSG_RUN_FRAGMENT;
		if (cmd[0] == 'o')
		{
			frag.kind = PGINFER__FRAGMENT_KIND__FRAG_OCR;
			spec_file(&specs[0], o.det, NULL);
			spec_file(&specs[1], o.cls, NULL);
			spec_file(&specs[2], o.rec, o.dict);
			frag.n_models = 3;
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
		for (; i < argc && n_frames < 256; i++, n_frames++)
		{
			frames[n_frames] = read_file(argv[i], &lens[n_frames]);
			if (frames[n_frames] == NULL)
				goto done;
			row_ids[n_frames] = ROW_ID_BASE + (uint64_t) n_frames;
		}
		run.fragment = &frag;
		run.n_row_ids = (size_t) n_frames;
		run.row_ids = row_ids;
		h.run = &run;
	}
	else if (strcmp(cmd, "garbage") != 0)
	{
		usage();
		return 2;
	}

	ctx = zmq_ctx_new();
	sock = ctx ? zmq_socket(ctx, ZMQ_DEALER) : NULL;
	if (sock == NULL)
	{
		fprintf(stderr, "worker-client: zmq: %s\n", zmq_strerror(errno));
		goto done;
	}
	zmq_setsockopt(sock, ZMQ_LINGER, &linger, sizeof(linger));
	if (zmq_connect(sock, o.endpoint) != 0)
	{
		fprintf(stderr, "worker-client: connect %s: %s\n", o.endpoint, zmq_strerror(errno));
		goto done;
	}
	if (strcmp(cmd, "garbage") == 0)
	{
		/* Field 1 as a length-delimited field of 200 bytes, only 3 present. */
		static const uint8_t bad[] = {0x0a, 0xc8, 0x01, 'x', 'y', 'z'};

		if (zmq_send(sock, bad, sizeof(bad), 0) < 0)
			goto done;
	}
	else if (send_request(sock, &h, frames, lens, n_frames) != 0)
	{
		fprintf(stderr, "worker-client: send: %s\n", zmq_strerror(errno));
		goto done;
	}
	if (expect_reply)
		rc = print_reply(sock, o.timeout_ms);
	else
	{
		/* Give the message time to leave before the socket closes. */
		rc = print_reply(sock, o.timeout_ms) == 3 ? 0 : 2;
	}

done:
	if (strcmp(cmd, "frames") != 0)
		for (int k = 0; k < n_frames; k++)
			free(frames[k]);
	if (sock != NULL)
		zmq_close(sock);
	if (ctx != NULL)
		zmq_ctx_term(ctx);
	return rc;
}
