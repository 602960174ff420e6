/*
 * fuzz_protocol.c
 *	  libFuzzer harness for a request as the worker receives it
 *	  (worker/request.c): the header frame's pre-scan and unpack, the checks
 *	  against the payload frames that came with it, and, for a request that
 *	  passes, the merge key the batcher computes from its fragment
 *	  (request_group_key).  Any bytes must give a request or a refusal with
 *	  a message and an SQLSTATE; never a crash, a stack overflow from
 *	  nesting, a leak or a read outside the input.
 *
 * Input: byte 0 is the number of payload frames that came with the header
 * (0..255); the rest is the header frame.  With FUZZ_WRITE_SEEDS=DIR set,
 * LLVMFuzzerInitialize first writes a few well-formed requests into DIR
 * (the seeds tests/fuzz/run.sh starts from) and exits.
 * Built and run by tests/fuzz/fuzz.mk.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/protocol.h"
#include "worker/request.h"

int			LLVMFuzzerInitialize(int *argc, char ***argv);
int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Writes header h with n_payload frames as seed file dir/name. */
static void
write_seed(const char *dir, const char *name, const Pginfer__Header *h, int n_payload)
{
	size_t		len = pginfer__header__get_packed_size(h);
	uint8_t    *buf = malloc(len + 1);
	char		path[1024];
	FILE	   *f;

	if (buf == NULL)
		exit(2);
	buf[0] = (uint8_t) n_payload;
	pginfer__header__pack(h, buf + 1);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if ((f = fopen(path, "wb")) == NULL || fwrite(buf, 1, len + 1, f) != len + 1)
		exit(2);
	fclose(f);
	free(buf);
}

/* A ping, a load, a predict run of 3 rows, an OCR run chained into an
 * embedding with a shared-input second fragment and input digests. */
static void
write_seeds(const char *dir)
{
	Pginfer__Header h = PGINFER__HEADER__INIT;
	Pginfer__RunFragment run = PGINFER__RUN_FRAGMENT__INIT;
	Pginfer__Fragment fr = PGINFER__FRAGMENT__INIT,
				next = PGINFER__FRAGMENT__INIT,
				more = PGINFER__FRAGMENT__INIT;
	Pginfer__Fragment *mores[1] = {&more};
	Pginfer__ModelSpec m1 = PGINFER__MODEL_SPEC__INIT,
				m2 = PGINFER__MODEL_SPEC__INIT;
	Pginfer__ModelSpec *models1[1] = {&m1},
			   *models2[1] = {&m2};
	Pginfer__ModelRequest mr = PGINFER__MODEL_REQUEST__INIT;
	uint64_t	rows[3] = {1, 2, 3};
	uint8_t		digest[3][PGINFER_SHA256_LEN];
	ProtobufCBinaryData digests[3];
	uint32_t	cached[1] = {1};

	h.version = PGINFER_PROTOCOL_VERSION;
	h.request_id = 7;
	h.kind = PGINFER__MSG_KIND__MSG_PING;
	write_seed(dir, "ping", &h, 0);

	m1.name = "cls";
	m1.file = "cls.onnx";
	m1.task = "classify";
	m1.input_height = 48;
	m1.input_width = 192;
	mr.model = &m1;
	h.kind = PGINFER__MSG_KIND__MSG_LOAD_MODEL;
	h.model = &mr;
	write_seed(dir, "load", &h, 0);
	h.model = NULL;

	fr.kind = PGINFER__FRAGMENT_KIND__FRAG_PREDICT;
	fr.n_models = 1;
	fr.models = models1;
	run.fragment = &fr;
	run.n_row_ids = 3;
	run.row_ids = rows;
	h.kind = PGINFER__MSG_KIND__MSG_RUN_FRAGMENT;
	h.run = &run;
	write_seed(dir, "predict", &h, 3);

	m2.name = "minilm";
	m2.file = "minilm/model.onnx";
	m2.task = "embed_text";
	next.kind = PGINFER__FRAGMENT_KIND__FRAG_EMBED_TEXT;
	next.n_models = 1;
	next.models = models2;
	next.truncate_text = 1;
	fr.kind = PGINFER__FRAGMENT_KIND__FRAG_OCR;
	fr.next = &next;
	more.kind = PGINFER__FRAGMENT_KIND__FRAG_CLASSIFY;
	more.n_models = 1;
	more.models = models1;
	run.n_more_fragments = 1;
	run.more_fragments = mores;
	for (int i = 0; i < 3; i++)
	{
		memset(digest[i], 0x11 * (i + 1), PGINFER_SHA256_LEN);
		digests[i].data = digest[i];
		digests[i].len = PGINFER_SHA256_LEN;
	}
	run.n_input_sha256 = 3;
	run.input_sha256 = digests;
	run.n_cached_rows = 1;
	run.cached_rows = cached;
	run.max_pixels = 1000000;
	write_seed(dir, "ocr_chain", &h, 3);
}

/* FUZZ_WRITE_SEEDS=DIR: write the seeds and exit. */
int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *dir = getenv("FUZZ_WRITE_SEEDS");

	(void) argc;
	(void) argv;
	if (dir != NULL)
	{
		write_seeds(dir);
		exit(0);
	}
	return 0;
}

/* One input: byte 0 frames, then the header. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	Pginfer__Header *h;
	const char *sqlstate = NULL;
	char		err[512];
	uint8_t    *copy;

	if (size == 0)
		return 0;
	/* exact-size copy so that AddressSanitizer sees overreads */
	copy = malloc(size - 1 ? size - 1 : 1);
	if (copy == NULL)
		return 0;
	memcpy(copy, data + 1, size - 1);
	h = request_unpack(copy, size - 1, NULL);
	if (h != NULL)
	{
		err[0] = '\0';
		if (request_check_header(h, data[0], &sqlstate, err, sizeof(err)) == 0)
		{
			if (h->kind == PGINFER__MSG_KIND__MSG_RUN_FRAGMENT)
			{
				size_t		len = 0;
				uint8_t    *key = request_group_key(h->run, &len);

				free(key);
			}
		}
		else if (err[0] == '\0' || sqlstate == NULL || strlen(sqlstate) != 5)
			abort();
		(void) request_kind_name(h->kind);
		pginfer__header__free_unpacked(h, NULL);
	}
	free(copy);
	return 0;
}
