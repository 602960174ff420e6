/*
 * test_protocol.c
 *	  Unit tests of infer-worker's protocol handling, without a socket:
 *	  pack/unpack of every message kind, the header checks (version, parts,
 *	  frame counts), server_handle() dispatch, model path safety, SHA-256,
 *	  the model cache, fragment_run() over a tiny real ONNX model
 *	  (GlobalAveragePool, built here with onnx.pb-c, with a fixed and with
 *	  a dynamic batch dimension) and PNGs written here with libpng, batched
 *	  model calls (values equal to the row alone, bit for bit), and
 *	  server_run_group() merging requests with its counters and group keys.
 *
 * Prints "test_protocol: N passed, M failed"; exits 1 on any failure.
 * Threading: single-threaded.
 */
#include <math.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/protocol.h"
#include "onnx/onnx.pb-c.h"
#include "worker/fragment.h"
#include "worker/log.h"
#include "worker/model_cache.h"
#include "worker/request.h"
#include "worker/server.h"
#include "tests/unit/testutil.h"

#define CHECK_STR(got, want) \
	do { \
		const char *g_ = (got), *w_ = (want); \
		CHECK_ERR(g_ != NULL && strcmp(g_, w_) == 0, \
				  "%s is \"%s\", expected \"%s\"", #got, g_ ? g_ : "(null)", w_); \
	} while (0)

#define CHECK_CONTAINS(hay, needle) \
	do { \
		const char *h_ = (hay), *n_ = (needle); \
		CHECK_ERR(h_ != NULL && strstr(h_, n_) != NULL, \
				  "\"%s\" does not contain \"%s\"", h_ ? h_ : "(null)", n_); \
	} while (0)

#define CHECK_NEAR(got, want, tol) \
	do { \
		double g_ = (got), w_ = (want); \
		CHECK_ERR(fabs(g_ - w_) <= (tol), \
				  "%s is %.6f, expected %.6f", #got, g_, w_); \
	} while (0)

static char tmpdir[64];

/* Packs h into a new buffer (*len bytes). */
static uint8_t *
pack(const Pginfer__Header *h, size_t *len)
{
	uint8_t    *buf = malloc(pginfer__header__get_packed_size(h) + 1);

	*len = pginfer__header__pack(h, buf);
	return buf;
}

/* Packs and unpacks h; the copy must be freed with free_unpacked. */
static Pginfer__Header *
round_trip(const Pginfer__Header *h)
{
	size_t		len;
	uint8_t    *buf = pack(h, &len);
	Pginfer__Header *out = pginfer__header__unpack(NULL, len, buf);

	free(buf);
	return out;
}

/* Every message kind survives pack/unpack with its fields. */
static void
test_round_trips(void)
{
	Pginfer__Header h = PGINFER__HEADER__INIT;
	Pginfer__RunFragment run = PGINFER__RUN_FRAGMENT__INIT;
	Pginfer__Fragment frag = PGINFER__FRAGMENT__INIT;
	Pginfer__ModelSpec m0 = PGINFER__MODEL_SPEC__INIT,
				m1 = PGINFER__MODEL_SPEC__INIT;
	Pginfer__ModelSpec *ms[2] = {&m0, &m1};
	Pginfer__Result res = PGINFER__RESULT__INIT;
	Pginfer__RowResult r0 = PGINFER__ROW_RESULT__INIT,
				r1 = PGINFER__ROW_RESULT__INIT;
	Pginfer__RowResult *rs[2] = {&r0, &r1};
	Pginfer__ModelRequest mr = PGINFER__MODEL_REQUEST__INIT;
	Pginfer__WorkerState st = PGINFER__WORKER_STATE__INIT;
	char	   *resident[2] = {"a.onnx", "b/c.onnx"};
	uint64_t	ids[3] = {5, 1ULL << 40, 7};
	float		mean[3] = {0.485f, 0.456f, 0.406f};
	char	   *labels[2] = {"cat", "dog"};
	uint8_t		digest[32];
	Pginfer__Header *u;
	size_t		len;
	uint8_t    *buf;

	/* MSG_RUN_FRAGMENT */
	m0.file = "det.onnx";
	m1.file = "rec.onnx";
	m1.labels_file = "keys.txt";
	m1.n_mean = 3;
	m1.mean = mean;
	m1.n_labels = 2;
	m1.labels = labels;
	m1.input_height = 48;
	memset(digest, 0xab, sizeof(digest));
	m1.sha256.data = digest;
	m1.sha256.len = 32;
	frag.kind = PGINFER__FRAGMENT_KIND__FRAG_OCR;
	frag.n_models = 2;
	frag.models = ms;
	run.fragment = &frag;
	run.n_row_ids = 3;
	run.row_ids = ids;
	run.max_pixels = 1234;
	h.version = PGINFER_PROTOCOL_VERSION;
	h.kind = PGINFER__MSG_KIND__MSG_RUN_FRAGMENT;
	h.request_id = 99;
	h.run = &run;
	u = round_trip(&h);
	CHECK_EXPR(u != NULL);
	if (u != NULL)
	{
		CHECK_EXPR(u->version == PGINFER_PROTOCOL_VERSION);
		CHECK_EXPR(u->kind == PGINFER__MSG_KIND__MSG_RUN_FRAGMENT);
		CHECK_EXPR(u->request_id == 99);
		CHECK_EXPR(u->run != NULL && u->run->n_row_ids == 3 &&
			  u->run->row_ids[1] == (1ULL << 40) && u->run->max_pixels == 1234);
		CHECK_EXPR(u->run->fragment->kind == PGINFER__FRAGMENT_KIND__FRAG_OCR);
		CHECK_EXPR(u->run->fragment->n_models == 2);
		CHECK_STR(u->run->fragment->models[1]->labels_file, "keys.txt");
		CHECK_EXPR(u->run->fragment->models[1]->n_mean == 3 &&
			  u->run->fragment->models[1]->mean[2] == 0.406f);
		CHECK_STR(u->run->fragment->models[1]->labels[1], "dog");
		CHECK_EXPR(u->run->fragment->models[1]->sha256.len == 32 &&
			  u->run->fragment->models[1]->sha256.data[31] == 0xab);
		CHECK_EXPR(u->run->fragment->models[1]->input_height == 48);
		pginfer__header__free_unpacked(u, NULL);
	}

	/* MSG_RESULT */
	r0.row_id = 5;
	r0.ok = 1;
	r0.text = "Baker Street\nNW1";
	r1.row_id = 7;
	r1.ok = 0;
	r1.sqlstate = PGINFER_SQLSTATE_BAD_IMAGE;
	r1.message = "invalid image: truncated";
	r1.hint = "h";
	res.n_rows = 2;
	res.rows = rs;
	res.compute_ms = 12.5;
	h.kind = PGINFER__MSG_KIND__MSG_RESULT;
	h.run = NULL;
	h.result = &res;
	u = round_trip(&h);
	CHECK_EXPR(u != NULL && u->result != NULL && u->result->n_rows == 2);
	if (u != NULL && u->result != NULL && u->result->n_rows == 2)
	{
		CHECK_EXPR(u->result->rows[0]->ok && u->result->rows[0]->row_id == 5);
		CHECK_STR(u->result->rows[0]->text, "Baker Street\nNW1");
		CHECK_EXPR(!u->result->rows[1]->ok && u->result->rows[1]->row_id == 7);
		CHECK_STR(u->result->rows[1]->sqlstate, "22P03");
		CHECK_EXPR(u->result->compute_ms == 12.5);
	}
	if (u != NULL)
		pginfer__header__free_unpacked(u, NULL);

	/* MSG_ERROR, through server_pack_error() */
	buf = server_pack_error(42, PGINFER_SQLSTATE_NO_MODEL, "no such model",
							"the detail", NULL, &len);
	u = buf ? pginfer__header__unpack(NULL, len, buf) : NULL;
	CHECK_EXPR(u != NULL && u->kind == PGINFER__MSG_KIND__MSG_ERROR && u->error != NULL);
	if (u != NULL && u->error != NULL)
	{
		CHECK_EXPR(u->request_id == 42 && u->version == PGINFER_PROTOCOL_VERSION);
		CHECK_STR(u->error->sqlstate, "58P01");
		CHECK_STR(u->error->message, "no such model");
		CHECK_STR(u->error->detail, "the detail");
		CHECK_STR(u->error->hint, "");
	}
	if (u != NULL)
		pginfer__header__free_unpacked(u, NULL);
	free(buf);

	/* MSG_LOAD_MODEL, MSG_UNLOAD_MODEL */
	mr.model = &m1;
	h.result = NULL;
	for (int k = 0; k < 2; k++)
	{
		h.kind = k == 0 ? PGINFER__MSG_KIND__MSG_LOAD_MODEL : PGINFER__MSG_KIND__MSG_UNLOAD_MODEL;
		h.model = &mr;
		u = round_trip(&h);
		CHECK_EXPR(u != NULL && u->kind == h.kind && u->model && u->model->model);
		if (u != NULL && u->model && u->model->model)
			CHECK_STR(u->model->model->file, "rec.onnx");
		if (u != NULL)
			pginfer__header__free_unpacked(u, NULL);
	}

	/* MSG_PONG / MSG_STATE with a WorkerState */
	st.worker_id = "host:1";
	st.queue_length = 3;
	st.n_resident_models = 2;
	st.resident_models = resident;
	st.requests_served = 17;
	st.device = "cpu";
	h.model = NULL;
	h.state = &st;
	for (int k = 0; k < 2; k++)
	{
		h.kind = k == 0 ? PGINFER__MSG_KIND__MSG_PONG : PGINFER__MSG_KIND__MSG_STATE;
		u = round_trip(&h);
		CHECK_EXPR(u != NULL && u->kind == h.kind && u->state != NULL);
		if (u != NULL && u->state != NULL)
		{
			CHECK_EXPR(u->state->queue_length == 3 && u->state->requests_served == 17);
			CHECK_EXPR(u->state->n_resident_models == 2);
			CHECK_STR(u->state->resident_models[1], "b/c.onnx");
		}
		if (u != NULL)
			pginfer__header__free_unpacked(u, NULL);
	}

	/* MSG_PING, MSG_CANCEL: header only */
	h.state = NULL;
	h.kind = PGINFER__MSG_KIND__MSG_CANCEL;
	h.request_id = 77;
	u = round_trip(&h);
	CHECK_EXPR(u != NULL && u->kind == PGINFER__MSG_KIND__MSG_CANCEL && u->request_id == 77 &&
		  u->run == NULL && u->result == NULL);
	if (u != NULL)
		pginfer__header__free_unpacked(u, NULL);
}

/* request_check_header: version, parts, payload frame counts. */
static void
test_check_header(void)
{
	Pginfer__Header h = PGINFER__HEADER__INIT;
	Pginfer__RunFragment run = PGINFER__RUN_FRAGMENT__INIT;
	Pginfer__Fragment frag = PGINFER__FRAGMENT__INIT;
	Pginfer__ModelRequest mr = PGINFER__MODEL_REQUEST__INIT;
	uint64_t	ids[2] = {1, 2};
	const char *sqlstate = NULL;
	char		err[256];

	h.version = PGINFER_PROTOCOL_VERSION;
	h.kind = PGINFER__MSG_KIND__MSG_PING;
	CHECK_EXPR(request_check_header(&h, 0, &sqlstate, err, sizeof(err)) == 0);
	CHECK_EXPR(request_check_header(&h, 1, &sqlstate, err, sizeof(err)) == -1);
	CHECK_STR(sqlstate, PGINFER_SQLSTATE_PROTOCOL);
	CHECK_CONTAINS(err, "1 payload frames, expected 0");

	/* Version mismatch names both versions. */
	h.version = PGINFER_PROTOCOL_VERSION + 6;
	sqlstate = NULL;
	CHECK_EXPR(request_check_header(&h, 0, &sqlstate, err, sizeof(err)) == -1);
	CHECK_STR(sqlstate, "08P01");
	CHECK_CONTAINS(err, "version 7");
	CHECK_CONTAINS(err, "speaks version 1");
	h.version = 0;
	CHECK_EXPR(request_check_header(&h, 0, &sqlstate, err, sizeof(err)) == -1);
	CHECK_CONTAINS(err, "version 0");
	h.version = PGINFER_PROTOCOL_VERSION;

	/* RUN_FRAGMENT: one payload frame per row id. */
	h.kind = PGINFER__MSG_KIND__MSG_RUN_FRAGMENT;
	CHECK_EXPR(request_check_header(&h, 0, &sqlstate, err, sizeof(err)) == -1);
	CHECK_CONTAINS(err, "without a fragment");
	run.fragment = &frag;
	run.n_row_ids = 2;
	run.row_ids = ids;
	h.run = &run;
	CHECK_EXPR(request_check_header(&h, 2, &sqlstate, err, sizeof(err)) == 0);
	CHECK_EXPR(request_check_header(&h, 1, &sqlstate, err, sizeof(err)) == -1);
	CHECK_CONTAINS(err, "1 payload frames, expected 2");
	CHECK_EXPR(request_check_header(&h, 3, &sqlstate, err, sizeof(err)) == -1);
	CHECK_CONTAINS(err, "3 payload frames, expected 2");
	h.run = NULL;

	/* LOAD/UNLOAD need a model and no payload. */
	h.kind = PGINFER__MSG_KIND__MSG_LOAD_MODEL;
	CHECK_EXPR(request_check_header(&h, 0, &sqlstate, err, sizeof(err)) == -1);
	CHECK_CONTAINS(err, "without a model");
	h.model = &mr;
	CHECK_EXPR(request_check_header(&h, 0, &sqlstate, err, sizeof(err)) == -1);
	{
		Pginfer__ModelSpec m = PGINFER__MODEL_SPEC__INIT;

		mr.model = &m;
		CHECK_EXPR(request_check_header(&h, 0, &sqlstate, err, sizeof(err)) == 0);
		CHECK_EXPR(request_check_header(&h, 1, &sqlstate, err, sizeof(err)) == -1);
		mr.model = NULL;
	}
	h.model = NULL;

	/* Kinds a worker only sends are refused. */
	h.kind = PGINFER__MSG_KIND__MSG_RESULT;
	CHECK_EXPR(request_check_header(&h, 0, &sqlstate, err, sizeof(err)) == -1);
	CHECK_CONTAINS(err, "does not accept MSG_RESULT");
	h.kind = PGINFER__MSG_KIND__MSG_UNKNOWN;
	CHECK_EXPR(request_check_header(&h, 0, &sqlstate, err, sizeof(err)) == -1);
	h.kind = (Pginfer__MsgKind) 77;
	CHECK_EXPR(request_check_header(&h, 0, &sqlstate, err, sizeof(err)) == -1);
}

/* Model file names: relative, no ".." components. */
static void
test_path_check(void)
{
	char		err[256];
	const char *good[] = {"a.onnx", "sub/a.onnx", "..a/b.onnx", "a..b", "...", "./a.onnx", "a//b"};
	const char *bad[] = {"", "/etc/passwd", "..", "../a.onnx", "a/../../b",
	"a/..", "a/../b", "//x", "sub/../../../etc/shadow"};

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		CHECK_EXPR(model_path_check(good[i], err, sizeof(err)) == 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
	{
		CHECK_EXPR(model_path_check(bad[i], err, sizeof(err)) == -1);
		if (bad[i][0] != '\0')
			CHECK_CONTAINS(err, bad[i]);
	}
	CHECK_EXPR(model_path_check(NULL, err, sizeof(err)) == -1);
	model_path_check("/x", err, sizeof(err));
	CHECK_CONTAINS(err, "absolute");
	model_path_check("a/../b", err, sizeof(err));
	CHECK_CONTAINS(err, "\"..\"");
}

/* Hex of a 32-byte digest. */
static void
hex32(const uint8_t d[32], char out[65])
{
	for (int i = 0; i < 32; i++)
		sprintf(out + 2 * i, "%02x", d[i]);
}

/* SHA-256 against the FIPS 180-4 examples (and padding edge lengths). */
static void
test_sha256(void)
{
	uint8_t		d[32];
	char		hex[65];
	char	   *million = malloc(1000000);

	if (million == NULL)
	{
		CHECK_EXPR(million != NULL);
		return;
	}
	model_sha256("abc", 3, d);
	hex32(d, hex);
	CHECK_STR(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	model_sha256("", 0, d);
	hex32(d, hex);
	CHECK_STR(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	model_sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56, d);
	hex32(d, hex);
	CHECK_STR(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	memset(million, 'a', 1000000);
	model_sha256(million, 1000000, d);
	hex32(d, hex);
	CHECK_STR(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	/* 64 bytes: a whole block, then padding in a block of its own. */
	model_sha256(million, 64, d);
	hex32(d, hex);
	CHECK_STR(hex, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
	free(million);
}

/*
 * Writes a tiny ONNX model to path: x float[1,3,h,w] -> GlobalAveragePool
 * -> y float[1,3,1,1], so its output is the per-channel mean of its input.
 * With dyn_batch the batch dimension is dynamic: x float[n,3,h,w]; with
 * dyn_batch 2 a ReduceMean over axis 0 (keepdims 0) follows, so the output
 * [3,1,1] does not keep the batch in its first dimension; with dyn_batch 3
 * a MaxPool with a 3x3 kernel (no padding) comes first, so an input with a
 * side under 3 fails to run.  With dyn_batch 1 and 3 the output is
 * declared [n, 3, 1, 1], its rows first (the worker need not check where
 * they are by a run of one alone: flush_batch's rows_first); otherwise it
 * has no declared shape.
 */
static int
write_gap_model(const char *path, int dyn_batch)
{
	Onnx__ModelProto mp = ONNX__MODEL_PROTO__INIT;
	Onnx__OperatorSetIdProto os = ONNX__OPERATOR_SET_ID_PROTO__INIT;
	Onnx__OperatorSetIdProto *osp[1] = {&os};
	Onnx__GraphProto g = ONNX__GRAPH_PROTO__INIT;
	Onnx__NodeProto node = ONNX__NODE_PROTO__INIT,
				reduce = ONNX__NODE_PROTO__INIT;
	Onnx__NodeProto *nodes[2] = {&node, &reduce};
	Onnx__AttributeProto axes = ONNX__ATTRIBUTE_PROTO__INIT,
				keep = ONNX__ATTRIBUTE_PROTO__INIT;
	Onnx__AttributeProto *attrs[2] = {&axes, &keep};
	int64_t		axis0[1] = {0};
	int64_t		kernel[2] = {3, 3};
	char	   *mid_names[1] = {"g"};
	Onnx__ValueInfoProto vin = ONNX__VALUE_INFO_PROTO__INIT,
				vout = ONNX__VALUE_INFO_PROTO__INIT;
	Onnx__ValueInfoProto *ins[1] = {&vin},
			   *outs[1] = {&vout};
	Onnx__TypeProto tin = ONNX__TYPE_PROTO__INIT,
				tout = ONNX__TYPE_PROTO__INIT;
	Onnx__TypeProto__Tensor ttin = ONNX__TYPE_PROTO__TENSOR__INIT,
				ttout = ONNX__TYPE_PROTO__TENSOR__INIT;
	Onnx__TensorShapeProto shin = ONNX__TENSOR_SHAPE_PROTO__INIT,
				shout = ONNX__TENSOR_SHAPE_PROTO__INIT;
	Onnx__TensorShapeProto__Dimension dims[4],
				odims[4];
	Onnx__TensorShapeProto__Dimension *dimp[4],
			   *odimp[4];
	char	   *in_names[1] = {"x"},
			   *out_names[1] = {"y"};
	uint8_t    *buf;
	size_t		len;
	FILE	   *f;

	for (int i = 0; i < 4; i++)
	{
		Onnx__TensorShapeProto__Dimension init = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT;

		dims[i] = init;
		dimp[i] = &dims[i];
		odims[i] = init;
		odims[i].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
		odims[i].dim_value = i == 1 ? 3 : 1;
		odimp[i] = &odims[i];
	}
	odims[0].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
	odims[0].dim_param = "n";
	shout.n_dim = 4;
	shout.dim = odimp;
	if (dyn_batch)
	{
		dims[0].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
		dims[0].dim_param = "n";
	}
	else
	{
		dims[0].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
		dims[0].dim_value = 1;
	}
	dims[1].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
	dims[1].dim_value = 3;
	dims[2].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
	dims[2].dim_param = "h";
	dims[3].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
	dims[3].dim_param = "w";
	shin.n_dim = 4;
	shin.dim = dimp;
	ttin.has_elem_type = 1;
	ttin.elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
	ttin.shape = &shin;
	tin.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
	tin.tensor_type = &ttin;
	vin.name = "x";
	vin.type = &tin;
	ttout.has_elem_type = 1;
	ttout.elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
	if (dyn_batch == 1 || dyn_batch == 3)
		ttout.shape = &shout;
	tout.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
	tout.tensor_type = &ttout;
	vout.name = "y";
	vout.type = &tout;
	node.op_type = "GlobalAveragePool";
	node.name = "gap";
	node.n_input = 1;
	node.input = in_names;
	node.n_output = 1;
	node.output = out_names;
	g.name = "gap";
	g.n_node = 1;
	g.node = nodes;
	if (dyn_batch == 2)
	{
		node.output = mid_names;
		axes.name = "axes";
		axes.has_type = 1;
		axes.type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
		axes.n_ints = 1;
		axes.ints = axis0;
		keep.name = "keepdims";
		keep.has_type = 1;
		keep.type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
		keep.has_i = 1;
		keep.i = 0;
		reduce.op_type = "ReduceMean";
		reduce.name = "mean_over_batch";
		reduce.n_input = 1;
		reduce.input = mid_names;
		reduce.n_output = 1;
		reduce.output = out_names;
		reduce.n_attribute = 2;
		reduce.attribute = attrs;
		g.n_node = 2;
	}
	if (dyn_batch == 3)
	{
		/* x -> MaxPool -> g -> GlobalAveragePool -> y */
		axes.name = "kernel_shape";
		axes.has_type = 1;
		axes.type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
		axes.n_ints = 2;
		axes.ints = kernel;
		reduce.op_type = "MaxPool";
		reduce.name = "pool3";
		reduce.n_input = 1;
		reduce.input = in_names;
		reduce.n_output = 1;
		reduce.output = mid_names;
		reduce.n_attribute = 1;
		reduce.attribute = attrs;
		node.input = mid_names;
		nodes[0] = &reduce;
		nodes[1] = &node;
		g.n_node = 2;
	}
	g.n_input = 1;
	g.input = ins;
	g.n_output = 1;
	g.output = outs;
	os.domain = "";
	os.has_version = 1;
	os.version = 13;
	mp.has_ir_version = 1;
	mp.ir_version = 7;
	mp.n_opset_import = 1;
	mp.opset_import = osp;
	mp.graph = &g;

	len = onnx__model_proto__get_packed_size(&mp);
	buf = malloc(len);
	onnx__model_proto__pack(&mp, buf);
	f = fopen(path, "wb");
	if (f == NULL || fwrite(buf, 1, len, f) != len)
	{
		free(buf);
		if (f)
			fclose(f);
		return -1;
	}
	fclose(f);
	free(buf);
	return 0;
}

/* PNG bytes (malloc'd) of a w x h RGB image; every pixel is rgb[y % 2]. */
static void *
make_png(int w, int h, const uint8_t rgb[2][3], size_t *len)
{
	png_image img;
	uint8_t    *px = malloc((size_t) w * h * 3);
	png_alloc_size_t size = 0;
	void	   *out = NULL;

	*len = 0;
	if (px == NULL)
		return NULL;
	for (int y = 0; y < h; y++)
		for (int x = 0; x < w; x++)
			memcpy(px + 3 * (y * w + x), rgb[y % 2], 3);
	memset(&img, 0, sizeof(img));
	img.version = PNG_IMAGE_VERSION;
	img.width = (png_uint_32) w;
	img.height = (png_uint_32) h;
	img.format = PNG_FORMAT_RGB;
	if (png_image_write_to_memory(&img, NULL, &size, 0, px, 0, NULL) && size > 0)
	{
		out = malloc(size);
		if (!png_image_write_to_memory(&img, out, &size, 0, px, 0, NULL))
		{
			free(out);
			out = NULL;
		}
	}
	free(px);
	*len = size;
	return out;
}

/* The model cache: missing files, unsafe paths, digests, unload. */
static void
test_model_cache(void)
{
	char		err[512];
	const char *sqlstate = NULL;
	model_cache *mc;
	Pginfer__ModelSpec spec = PGINFER__MODEL_SPEC__INIT;
	uint8_t		digest[32];
	const ie_model *m1,
			   *m2;

	mc = model_cache_new("/nonexistent/models", err, sizeof(err));
	CHECK_EXPR(mc == NULL);
	CHECK_CONTAINS(err, "/nonexistent/models");

	mc = model_cache_new(tmpdir, err, sizeof(err));
	CHECK_EXPR(mc != NULL);
	if (mc == NULL)
		return;

	spec.file = "nope.onnx";
	CHECK_EXPR(model_cache_get(mc, &spec, &sqlstate, err, sizeof(err)) == NULL);
	CHECK_STR(sqlstate, PGINFER_SQLSTATE_NO_MODEL);
	CHECK_CONTAINS(err, "\"nope.onnx\" not found");

	spec.file = "../gap.onnx";
	CHECK_EXPR(model_cache_get(mc, &spec, &sqlstate, err, sizeof(err)) == NULL);
	CHECK_STR(sqlstate, PGINFER_SQLSTATE_BAD_PARAM);
	CHECK_CONTAINS(err, "..");

	spec.file = "sub";			/* a directory */
	CHECK_EXPR(model_cache_get(mc, &spec, &sqlstate, err, sizeof(err)) == NULL);
	CHECK_CONTAINS(err, "not a regular file");

	spec.file = "junk.onnx";	/* not a ModelProto: data_corrupted */
	CHECK_EXPR(model_cache_get(mc, &spec, &sqlstate, err, sizeof(err)) == NULL);
	CHECK_STR(sqlstate, PGINFER_SQLSTATE_DATA_CORRUPTED);
	CHECK_CONTAINS(err, "could not load model file \"junk.onnx\"");
	CHECK_EXPR(model_cache_count(mc) == 0);

	/* A wrong digest is refused; the right one loads. */
	spec.file = "gap.onnx";
	memset(digest, 0, sizeof(digest));
	spec.sha256.data = digest;
	spec.sha256.len = 32;
	CHECK_EXPR(model_cache_get(mc, &spec, &sqlstate, err, sizeof(err)) == NULL);
	CHECK_STR(sqlstate, PGINFER_SQLSTATE_DATA_CORRUPTED);
	CHECK_CONTAINS(err, "SHA-256 mismatch");
	{
		char		path[128];
		FILE	   *f;
		uint8_t    *bytes = malloc(1 << 16);
		size_t		n;

		snprintf(path, sizeof(path), "%s/gap.onnx", tmpdir);
		f = fopen(path, "rb");
		n = f ? fread(bytes, 1, 1 << 16, f) : 0;
		if (f)
			fclose(f);
		model_sha256(bytes, n, digest);
		free(bytes);
	}
	m1 = model_cache_get(mc, &spec, &sqlstate, err, sizeof(err));
	CHECK_EXPR(m1 != NULL);
	if (m1 == NULL)
		fprintf(stderr, "  (%s)\n", err);
	spec.sha256.len = 0;
	m2 = model_cache_get(mc, &spec, &sqlstate, err, sizeof(err));
	CHECK_EXPR(m1 != NULL && m2 == m1);	/* loaded once, kept */
	CHECK_EXPR(model_cache_count(mc) == 1);
	CHECK_STR(model_cache_file(mc, 0), "gap.onnx");
	CHECK_EXPR(model_cache_file(mc, 1) == NULL);
	CHECK_EXPR(model_cache_unload(mc, "gap.onnx") == 1);
	CHECK_EXPR(model_cache_unload(mc, "gap.onnx") == 0);
	CHECK_EXPR(model_cache_count(mc) == 0);

	{
		const char *const *dict;
		int			dict_len;

		CHECK_EXPR(model_cache_get_dict(mc, "missing.txt", &dict, &dict_len,
								   &sqlstate, err, sizeof(err)) == -1);
		CHECK_STR(sqlstate, PGINFER_SQLSTATE_NO_MODEL);
		CHECK_EXPR(model_cache_get_dict(mc, "/etc/passwd", &dict, &dict_len,
								   &sqlstate, err, sizeof(err)) == -1);
		CHECK_STR(sqlstate, PGINFER_SQLSTATE_BAD_PARAM);
	}
	model_cache_destroy(&mc);
	CHECK_EXPR(mc == NULL);
}

/* Builds a RunFragment header of kind k over model "gap.onnx". */
static void
fill_run(Pginfer__Header *h, Pginfer__RunFragment *run, Pginfer__Fragment *frag,
		 Pginfer__ModelSpec *spec, Pginfer__ModelSpec **specp,
		 Pginfer__FragmentKind k, uint64_t *ids, int n)
{
	frag->kind = k;
	frag->n_models = 1;
	specp[0] = spec;
	frag->models = specp;
	run->fragment = frag;
	run->n_row_ids = (size_t) n;
	run->row_ids = ids;
	h->version = PGINFER_PROTOCOL_VERSION;
	h->kind = PGINFER__MSG_KIND__MSG_RUN_FRAGMENT;
	h->request_id = 31;
	h->run = run;
}

/* A RunFragment request over one model, its parts kept together. */
typedef struct run_req
{
	Pginfer__Header h;
	Pginfer__RunFragment run;
	Pginfer__Fragment frag;
	Pginfer__ModelSpec spec;
	Pginfer__ModelSpec *specp[1];
} run_req;

/* Builds q as fill_run does, of kind k over model file and the n row ids. */
static void
req_init(run_req *q, const char *file, Pginfer__FragmentKind k, uint64_t *ids, int n)
{
	Pginfer__Header h = PGINFER__HEADER__INIT;
	Pginfer__RunFragment run = PGINFER__RUN_FRAGMENT__INIT;
	Pginfer__Fragment frag = PGINFER__FRAGMENT__INIT;
	Pginfer__ModelSpec spec = PGINFER__MODEL_SPEC__INIT;

	q->h = h;
	q->run = run;
	q->frag = frag;
	q->spec = spec;
	q->spec.file = (char *) file;
	fill_run(&q->h, &q->run, &q->frag, &q->spec, q->specp, k, ids, n);
}

/*
 * server_handle() end to end without a socket: ping, version mismatch,
 * garbage, cancel, unknown model, and PREDICT/CLASSIFY over the tiny
 * model with a bad row in the middle.
 */
static void
test_server_handle(void)
{
	server_opts opts = {NULL, tmpdir, 0, 0, -1};
	char		err[512];
	server	   *s = server_new(&opts, err, sizeof(err));
	Pginfer__Header h = PGINFER__HEADER__INIT;
	Pginfer__Header *u;
	server_reply *r = NULL;
	uint8_t    *buf;
	size_t		len;

	CHECK_EXPR(s != NULL);
	if (s == NULL)
		return;
	CHECK_EXPR(server_endpoint(s) == NULL);

	/* PING -> PONG with a state. */
	h.version = PGINFER_PROTOCOL_VERSION;
	h.kind = PGINFER__MSG_KIND__MSG_PING;
	h.request_id = 11;
	buf = pack(&h, &len);
	CHECK_EXPR(server_handle(s, buf, len, NULL, NULL, 0, &r) == 0 && r != NULL);
	free(buf);
	u = r ? pginfer__header__unpack(NULL, r->header_len, r->header) : NULL;
	CHECK_EXPR(u != NULL && u->kind == PGINFER__MSG_KIND__MSG_PONG && u->request_id == 11 &&
		  u->state != NULL && r->n_frames == 0);
	if (u != NULL && u->state != NULL)
	{
		CHECK_STR(u->state->device, "cpu");
		CHECK_EXPR(u->state->n_resident_models == 0);
		CHECK_EXPR(strchr(u->state->worker_id, ':') != NULL);
	}
	if (u)
		pginfer__header__free_unpacked(u, NULL);
	server_reply_destroy(&r);
	CHECK_EXPR(r == NULL);

	/* Version mismatch -> MSG_ERROR 08P01 naming both versions. */
	h.version = 3;
	buf = pack(&h, &len);
	server_handle(s, buf, len, NULL, NULL, 0, &r);
	free(buf);
	u = r ? pginfer__header__unpack(NULL, r->header_len, r->header) : NULL;
	CHECK_EXPR(u != NULL && u->kind == PGINFER__MSG_KIND__MSG_ERROR && u->error != NULL);
	if (u != NULL && u->error != NULL)
	{
		CHECK_STR(u->error->sqlstate, "08P01");
		CHECK_CONTAINS(u->error->message, "version 3");
		CHECK_CONTAINS(u->error->message, "version 1");
		CHECK_EXPR(u->request_id == 11);
		CHECK_EXPR(u->version == PGINFER_PROTOCOL_VERSION);
	}
	if (u)
		pginfer__header__free_unpacked(u, NULL);
	server_reply_destroy(&r);
	h.version = PGINFER_PROTOCOL_VERSION;

	/* A header that does not unpack -> MSG_ERROR, request id 0. */
	{
		static const uint8_t bad[] = {0x0a, 0xc8, 0x01, 'x'};

		server_handle(s, bad, sizeof(bad), NULL, NULL, 0, &r);
		u = r ? pginfer__header__unpack(NULL, r->header_len, r->header) : NULL;
		CHECK_EXPR(u != NULL && u->kind == PGINFER__MSG_KIND__MSG_ERROR && u->error);
		if (u && u->error)
		{
			CHECK_STR(u->error->sqlstate, "08P01");
			CHECK_CONTAINS(u->error->message, "malformed");
		}
		if (u)
			pginfer__header__free_unpacked(u, NULL);
		server_reply_destroy(&r);
	}

	/* CANCEL -> no reply. */
	h.kind = PGINFER__MSG_KIND__MSG_CANCEL;
	buf = pack(&h, &len);
	CHECK_EXPR(server_handle(s, buf, len, NULL, NULL, 0, &r) == 0 && r == NULL);
	free(buf);

	/* Run fragments over the tiny model. */
	{
		Pginfer__RunFragment run = PGINFER__RUN_FRAGMENT__INIT;
		Pginfer__Fragment frag = PGINFER__FRAGMENT__INIT;
		Pginfer__ModelSpec spec = PGINFER__MODEL_SPEC__INIT;
		Pginfer__ModelSpec *specp[1];
		uint64_t	ids[3] = {501, 502, 503};
		static const uint8_t colours_a[2][3] = {{255, 0, 0}, {0, 0, 255}};
		static const uint8_t colours_b[2][3] = {{0, 51, 255}, {0, 51, 255}};
		size_t		la,
					lb;
		void	   *pa = make_png(4, 2, colours_a, &la);
		void	   *pb = make_png(5, 3, colours_b, &lb);
		static const char junk[] = "GIF89a not really";
		const void *rows[3] = {pa, junk, pb};
		size_t		lens[3] = {la, sizeof(junk) - 1, lb};
		float		mean[3] = {0.5f, 0.5f, 0.5f};
		float		stdv[1] = {0.5f};
		char	   *labels[3] = {"red", "green", "blue"};

		CHECK_EXPR(pa != NULL && pb != NULL);

		/* Unknown model file -> MSG_ERROR naming the file. */
		spec.file = "missing_model.onnx";
		fill_run(&h, &run, &frag, &spec, specp, PGINFER__FRAGMENT_KIND__FRAG_PREDICT, ids, 3);
		buf = pack(&h, &len);
		server_handle(s, buf, len, rows, lens, 3, &r);
		free(buf);
		u = r ? pginfer__header__unpack(NULL, r->header_len, r->header) : NULL;
		CHECK_EXPR(u && u->kind == PGINFER__MSG_KIND__MSG_ERROR && u->error);
		if (u && u->error)
		{
			CHECK_STR(u->error->sqlstate, "58P01");
			CHECK_CONTAINS(u->error->message, "missing_model.onnx");
			CHECK_CONTAINS(u->error->hint, tmpdir);
		}
		if (u)
			pginfer__header__free_unpacked(u, NULL);
		server_reply_destroy(&r);

		/* PREDICT: per-channel means; the bad middle row fails alone. */
		spec.file = "gap.onnx";
		spec.n_mean = 3;
		spec.mean = mean;
		spec.n_std = 1;
		spec.std = stdv;
		buf = pack(&h, &len);
		server_handle(s, buf, len, rows, lens, 3, &r);
		free(buf);
		u = r ? pginfer__header__unpack(NULL, r->header_len, r->header) : NULL;
		CHECK_EXPR(u && u->kind == PGINFER__MSG_KIND__MSG_RESULT && u->result &&
			  u->result->n_rows == 3 && r->n_frames == 3);
		if (u && u->kind == PGINFER__MSG_KIND__MSG_ERROR && u->error)
			fprintf(stderr, "  (error %s)\n", u->error->message);
		if (u && u->result && u->result->n_rows == 3 && r->n_frames == 3)
		{
			Pginfer__RowResult **rr = u->result->rows;

			CHECK_EXPR(rr[0]->row_id == 501 && rr[1]->row_id == 502 && rr[2]->row_id == 503);
			CHECK_EXPR(rr[0]->ok && rr[0]->n_values == 3 && r->frame_len[0] == 12);
			CHECK_EXPR(!rr[1]->ok && r->frame_len[1] == 0 && rr[1]->n_values == 0);
			CHECK_STR(rr[1]->sqlstate, "22P03");
			CHECK_EXPR(rr[1]->message[0] != '\0' && rr[1]->hint[0] != '\0');
			CHECK_EXPR(rr[2]->ok && rr[2]->n_values == 3 && r->frame_len[2] == 12);
			if (r->frame_len[0] == 12 && r->frame_len[2] == 12)
			{
				const float *v0 = r->frames[0],
						   *v2 = r->frames[2];

				/* Half red, half blue rows: R mean 0.5 -> 0, G 0 -> -1, B 0.5 -> 0. */
				CHECK_NEAR(v0[0], 0.0, 1e-5);
				CHECK_NEAR(v0[1], -1.0, 1e-5);
				CHECK_NEAR(v0[2], 0.0, 1e-5);
				/* (0, 51, 255): (v/255 - 0.5) / 0.5 = -1, -0.6, 1. */
				CHECK_NEAR(v2[0], -1.0, 1e-5);
				CHECK_NEAR(v2[1], -0.6, 1e-5);
				CHECK_NEAR(v2[2], 1.0, 1e-5);
			}
		}
		if (u)
			pginfer__header__free_unpacked(u, NULL);
		server_reply_destroy(&r);

		/* Pixel limit from the request: 4x2 = 8 pixels > 7 -> 54000. */
		run.max_pixels = 7;
		buf = pack(&h, &len);
		server_handle(s, buf, len, rows, lens, 3, &r);
		free(buf);
		u = r ? pginfer__header__unpack(NULL, r->header_len, r->header) : NULL;
		CHECK_EXPR(u && u->result && u->result->n_rows == 3);
		if (u && u->result && u->result->n_rows == 3)
		{
			CHECK_EXPR(!u->result->rows[0]->ok);
			CHECK_STR(u->result->rows[0]->sqlstate, "54000");
			CHECK_EXPR(!u->result->rows[2]->ok);
			CHECK_STR(u->result->rows[2]->sqlstate, "54000");
		}
		if (u)
			pginfer__header__free_unpacked(u, NULL);
		server_reply_destroy(&r);
		run.max_pixels = 0;

		/* CLASSIFY with a stretch to 3x3: labels[argmax]; empty frames. */
		frag.kind = PGINFER__FRAGMENT_KIND__FRAG_CLASSIFY;
		spec.input_height = 3;
		spec.input_width = 3;
		spec.n_labels = 3;
		spec.labels = labels;
		buf = pack(&h, &len);
		server_handle(s, buf, len, rows, lens, 3, &r);
		free(buf);
		u = r ? pginfer__header__unpack(NULL, r->header_len, r->header) : NULL;
		CHECK_EXPR(u && u->result && u->result->n_rows == 3);
		if (u && u->result && u->result->n_rows == 3)
		{
			CHECK_EXPR(u->result->rows[2]->ok);
			CHECK_STR(u->result->rows[2]->text, "blue");
			CHECK_EXPR(!u->result->rows[1]->ok);
			CHECK_EXPR(r->frame_len[0] == 0 && r->frame_len[2] == 0);
		}
		if (u)
			pginfer__header__free_unpacked(u, NULL);
		server_reply_destroy(&r);

		/* Too few labels for the output -> MSG_ERROR 22023. */
		spec.n_labels = 2;
		buf = pack(&h, &len);
		server_handle(s, buf, len, rows, lens, 3, &r);
		free(buf);
		u = r ? pginfer__header__unpack(NULL, r->header_len, r->header) : NULL;
		CHECK_EXPR(u && u->kind == PGINFER__MSG_KIND__MSG_ERROR && u->error);
		if (u && u->error)
		{
			CHECK_STR(u->error->sqlstate, "22023");
			CHECK_CONTAINS(u->error->message, "3 scores but has 2 labels");
		}
		if (u)
			pginfer__header__free_unpacked(u, NULL);
		server_reply_destroy(&r);

		/* Unsupported preprocessing is a request error. */
		spec.n_labels = 3;
		spec.resize_mode = "keep_ratio_pad";
		buf = pack(&h, &len);
		server_handle(s, buf, len, rows, lens, 3, &r);
		free(buf);
		u = r ? pginfer__header__unpack(NULL, r->header_len, r->header) : NULL;
		CHECK_EXPR(u && u->kind == PGINFER__MSG_KIND__MSG_ERROR && u->error);
		if (u && u->error)
			CHECK_CONTAINS(u->error->message, "keep_ratio_pad");
		if (u)
			pginfer__header__free_unpacked(u, NULL);
		server_reply_destroy(&r);

		/* The model stayed loaded: a PING lists it. */
		h.kind = PGINFER__MSG_KIND__MSG_PING;
		h.run = NULL;
		buf = pack(&h, &len);
		server_handle(s, buf, len, NULL, NULL, 0, &r);
		free(buf);
		u = r ? pginfer__header__unpack(NULL, r->header_len, r->header) : NULL;
		CHECK_EXPR(u && u->state && u->state->n_resident_models == 1 &&
			  u->state->requests_served == 3);
		if (u && u->state && u->state->n_resident_models == 1)
			CHECK_STR(u->state->resident_models[0], "gap.onnx");
		if (u)
			pginfer__header__free_unpacked(u, NULL);
		server_reply_destroy(&r);

		free(pa);
		free(pb);
	}
	server_destroy(&s);
	CHECK_EXPR(s == NULL);
}

/*
 * Malformed headers never crash the dispatch: every prefix of a valid
 * RUN_FRAGMENT header, and random bytes, get a reply that unpacks (for
 * the prefixes: MSG_ERROR, as none is a complete request with its rows).
 */
static void
test_malformed_headers(void)
{
	server_opts opts = {NULL, tmpdir, 0, 0, -1};
	char		err[512];
	server	   *s = server_new(&opts, err, sizeof(err));
	run_req		q;
	uint64_t	ids[2] = {1, 2};
	uint8_t    *buf;
	size_t		len;
	int			bad_prefix = 0,
				bad_random = 0;
	unsigned	seed = 12345;

	CHECK_EXPR(s != NULL);
	if (s == NULL)
		return;
	req_init(&q, "gap.onnx", PGINFER__FRAGMENT_KIND__FRAG_PREDICT, ids, 2);
	buf = pack(&q.h, &len);
	for (size_t cut = 0; cut < len; cut++)
	{
		server_reply *r = NULL;
		Pginfer__Header *u;

		server_handle(s, buf, cut, NULL, NULL, 0, &r);
		u = r ? pginfer__header__unpack(NULL, r->header_len, r->header) : NULL;
		if (u == NULL || u->kind != PGINFER__MSG_KIND__MSG_ERROR || u->error == NULL)
			bad_prefix++;
		if (u)
			pginfer__header__free_unpacked(u, NULL);
		server_reply_destroy(&r);
	}
	CHECK_EXPR(len > 20 && bad_prefix == 0);
	free(buf);

	for (int k = 0; k < 3000; k++)
	{
		uint8_t		junk[64];
		size_t		n = (size_t) (rand_r(&seed) % 64);
		server_reply *r = NULL;
		Pginfer__Header *u;

		for (size_t i = 0; i < n; i++)
			junk[i] = (uint8_t) rand_r(&seed);
		server_handle(s, junk, n, NULL, NULL, 0, &r);
		u = r ? pginfer__header__unpack(NULL, r->header_len, r->header) : NULL;
		if (u == NULL)
			bad_random++;
		else
			pginfer__header__free_unpacked(u, NULL);
		server_reply_destroy(&r);
	}
	CHECK_EXPR(bad_random == 0);
	server_destroy(&s);
}

/* fragment_run() directly: row ids echoed, a stop between rows abandons. */
static void
test_fragment_run(void)
{
	char		err[512];
	const char *sqlstate = NULL;
	model_cache *mc = model_cache_new(tmpdir, err, sizeof(err));
	run_req		q;
	uint64_t	ids[2] = {9, 8};
	static const uint8_t grey[2][3] = {{102, 102, 102}, {102, 102, 102}};
	size_t		len;
	void	   *png = make_png(3, 3, grey, &len);
	const void *rows[2] = {png, png};
	size_t		lens[2] = {len, len};
	fragment_result *r = NULL;
	volatile sig_atomic_t stop = 0;

	CHECK_EXPR(mc != NULL && png != NULL);
	if (mc == NULL || png == NULL)
		goto done;
	req_init(&q, "gap.onnx", PGINFER__FRAGMENT_KIND__FRAG_PREDICT, ids, 2);
	CHECK_EXPR(fragment_run(mc, &q.run, rows, lens, 2, 0, 64, &stop, &r, &sqlstate, err, sizeof(err)) == 0);
	CHECK_EXPR(r != NULL && r->n_rows == 2);
	if (r != NULL && r->n_rows == 2)
	{
		CHECK_EXPR(r->rows[0].row_id == 9 && r->rows[1].row_id == 8);
		CHECK_EXPR(r->rows[1].ok && r->n_values[1] == 3 && r->values[1] != NULL);
		/* Defaults mean 0, std 1: 102 / 255 = 0.4. */
		if (r->values[1] != NULL)
			CHECK_NEAR(r->values[1][2], 0.4, 1e-5);
		CHECK_EXPR(r->compute_ms >= 0.0);
	}
	fragment_result_destroy(&r);
	CHECK_EXPR(r == NULL);

	/* Fewer row frames than row ids is refused. */
	CHECK_EXPR(fragment_run(mc, &q.run, rows, lens, 1, 0, 64, NULL, &r, &sqlstate, err, sizeof(err)) == -1);
	CHECK_STR(sqlstate, PGINFER_SQLSTATE_PROTOCOL);

	stop = 1;
	CHECK_EXPR(fragment_run(mc, &q.run, rows, lens, 2, 0, 64, &stop, &r, &sqlstate, err, sizeof(err)) == -1);
	CHECK_EXPR(r == NULL);
	CHECK_STR(sqlstate, FRAGMENT_SQLSTATE_SHUTDOWN);
	CHECK_CONTAINS(err, "stopped between rows; 2 of 2 rows were not run");

done:
	free(png);
	model_cache_destroy(&mc);
}

/*
 * Runs fragment_run over rows and returns the result (NULL on a request
 * error, with err printed).
 */
static fragment_result *
run_rows(model_cache *mc, Pginfer__RunFragment *run, const void **rows,
		 const size_t *lens, int n, int max_batch)
{
	fragment_result *r = NULL;
	const char *sqlstate = NULL;
	char		err[512];

	if (fragment_run(mc, run, rows, lens, n, 0, max_batch, NULL, &r,
					 &sqlstate, err, sizeof(err)) != 0)
		fprintf(stderr, "  (fragment_run: %s %s)\n", sqlstate, err);
	return r;
}

/*
 * Batched PREDICT: rows of one input shape run as one tensor (model_runs
 * counts the calls), a row's values in any batch equal its values alone
 * bit for bit, bad rows stay out, max_batch caps a call, a model with a
 * fixed batch dimension runs one row a call.
 */
static void
test_batched_run(void)
{
	char		err[512];
	model_cache *mc = model_cache_new(tmpdir, err, sizeof(err));
	run_req		q;
	uint64_t	ids[6] = {1, 2, 3, 4, 5, 6};
	static const uint8_t ca[2][3] = {{255, 0, 0}, {0, 0, 255}};
	static const uint8_t cb[2][3] = {{10, 200, 30}, {90, 0, 7}};
	static const char junk[] = "\x89PNG but not really";
	size_t		la,
				lb;
	void	   *pa = make_png(4, 2, ca, &la);
	void	   *pb = make_png(7, 5, cb, &lb);
	fragment_result *alone = NULL,
			   *r = NULL;

	CHECK_EXPR(mc != NULL && pa != NULL && pb != NULL);
	if (mc == NULL || pa == NULL || pb == NULL)
		goto done;
	req_init(&q, "gapn.onnx", PGINFER__FRAGMENT_KIND__FRAG_PREDICT, ids, 1);
	q.spec.input_height = 3;
	q.spec.input_width = 3;

	/* A alone. */
	{
		const void *rows[1] = {pa};
		size_t		lens[1] = {la};

		alone = run_rows(mc, &q.run, rows, lens, 1, 64);
		CHECK_EXPR(alone != NULL && alone->rows[0].ok && alone->n_values[0] == 3 &&
			  alone->model_runs == 1);
	}
	/*
	 * B, A, bad, A, B, A: five good rows of one shape, one call; the first
	 * batch after the load also runs its last row alone, once, to check
	 * that the output keeps the rows apart (fragment.c, rows_first), so
	 * two calls the first time and one the second.
	 */
	{
		const void *rows[6] = {pb, pa, junk, pa, pb, pa};
		size_t		lens[6] = {lb, la, sizeof(junk) - 1, la, lb, la};

		q.run.n_row_ids = 6;
		r = run_rows(mc, &q.run, rows, lens, 6, 64);
		CHECK_EXPR(r != NULL && r->n_rows == 6 && r->model_runs == 2);
		fragment_result_destroy(&r);
		r = run_rows(mc, &q.run, rows, lens, 6, 64);
		CHECK_EXPR(r != NULL && r->n_rows == 6 && r->model_runs == 1);
		if (r != NULL && alone != NULL && alone->values[0] != NULL && r->n_rows == 6)
		{
			CHECK_EXPR(!r->rows[2].ok && r->values[2] == NULL);
			CHECK_STR(r->rows[2].sqlstate, "22P03");
			for (int i = 0; i < 6; i++)
				CHECK_EXPR(r->rows[i].row_id == ids[i]);
			for (int i = 1; i < 6; i += 2)
				CHECK_EXPR(r->rows[i].ok && r->n_values[i] == 3 &&
					  memcmp(r->values[i], alone->values[0], 3 * sizeof(float)) == 0);
			CHECK_EXPR(r->rows[0].ok && r->values[0] != NULL &&
				  memcmp(r->values[0], r->values[4], 3 * sizeof(float)) == 0 &&
				  memcmp(r->values[0], alone->values[0], 3 * sizeof(float)) != 0);
		}
		fragment_result_destroy(&r);

		/* max_batch 2: five rows take three calls, same values. */
		r = run_rows(mc, &q.run, rows, lens, 6, 2);
		CHECK_EXPR(r != NULL && r->model_runs == 3);
		if (r != NULL && alone != NULL && alone->values[0] != NULL)
			CHECK_EXPR(r->values[5] != NULL &&
				  memcmp(r->values[5], alone->values[0], 3 * sizeof(float)) == 0);
		fragment_result_destroy(&r);

		/* Own sizes (no input size): one call per shape, A's values exact. */
		q.spec.input_height = q.spec.input_width = 0;
		r = run_rows(mc, &q.run, rows, lens, 6, 64);
		CHECK_EXPR(r != NULL && r->model_runs == 2);
		if (r != NULL)
		{
			/* A's own size: R mean 0.5, G 0, B 0.5 (pixel / 255, mean 0, std 1). */
			CHECK_EXPR(r->values[1] != NULL && r->values[3] != NULL &&
				  memcmp(r->values[1], r->values[3], 3 * sizeof(float)) == 0);
			if (r->values[1] != NULL)
			{
				CHECK_NEAR(r->values[1][0], 0.5, 1e-6);
				CHECK_NEAR(r->values[1][1], 0.0, 1e-6);
				CHECK_NEAR(r->values[1][2], 0.5, 1e-6);
			}
		}
		fragment_result_destroy(&r);

		/*
		 * An output that does not keep the batch first (ReduceMean over
		 * it): the 5-row call is redone row by row, 1 + 5 calls, and each
		 * row still gets its own values.
		 */
		q.spec.file = "gapr.onnx";
		q.spec.input_height = q.spec.input_width = 3;
		r = run_rows(mc, &q.run, rows, lens, 6, 64);
		CHECK_EXPR(r != NULL && r->model_runs == 6);
		if (r != NULL && alone != NULL && alone->values[0] != NULL)
		{
			CHECK_EXPR(r->rows[1].ok && r->n_values[1] == 3 &&
				  memcmp(r->values[1], alone->values[0], 3 * sizeof(float)) == 0);
			CHECK_EXPR(r->rows[4].ok && r->values[4] != NULL &&
				  memcmp(r->values[4], r->values[0], 3 * sizeof(float)) == 0);
		}
		fragment_result_destroy(&r);
		q.spec.input_height = q.spec.input_width = 0;

		/* A fixed batch dimension of 1: one call per good row. */
		q.spec.file = "gap.onnx";
		r = run_rows(mc, &q.run, rows, lens, 6, 64);
		CHECK_EXPR(r != NULL && r->model_runs == 5);
		if (r != NULL)
			CHECK_EXPR(r->rows[5].ok && r->values[5] != NULL && r->values[5][0] > 0.49f);
		fragment_result_destroy(&r);
	}

done:
	fragment_result_destroy(&alone);
	free(pa);
	free(pb);
	model_cache_destroy(&mc);
}

/*
 * Per-row model failures and input size caps: with input size 0 a row
 * whose own size the model cannot take (2x3 into a 3x3 MaxPool) fails
 * alone with 22023, batched or not, the others are answered; an input size
 * over FRAGMENT_MAX_INPUT_SIDE fails the request with 22023; with input
 * size 0 an image wider than that fails its row.
 */
static void
test_row_model_errors(void)
{
	char		err[512];
	const char *sqlstate = NULL;
	model_cache *mc = model_cache_new(tmpdir, err, sizeof(err));
	run_req		q;
	uint64_t	ids[4] = {1, 2, 3, 4};
	static const uint8_t grey[2][3] = {{51, 102, 153}, {51, 102, 153}};
	size_t		lg,
				ls,
				lw;
	void	   *pg = make_png(4, 4, grey, &lg);
	void	   *ps = make_png(2, 3, grey, &ls);
	void	   *pw = make_png(FRAGMENT_MAX_INPUT_SIDE + 1, 1, grey, &lw);
	fragment_result *r = NULL;

	CHECK_EXPR(mc != NULL && pg != NULL && ps != NULL && pw != NULL);
	if (mc == NULL || pg == NULL || ps == NULL || pw == NULL)
		goto done;
	req_init(&q, "mpn.onnx", PGINFER__FRAGMENT_KIND__FRAG_PREDICT, ids, 3);

	/* good, too small, good: the middle row fails alone */
	{
		const void *rows[3] = {pg, ps, pg};
		size_t		lens[3] = {lg, ls, lg};

		r = run_rows(mc, &q.run, rows, lens, 3, 64);
		CHECK_EXPR(r != NULL && r->n_rows == 3);
		if (r != NULL && r->n_rows == 3)
		{
			CHECK_EXPR(r->rows[0].ok && r->rows[2].ok && r->n_values[0] == 3 &&
				  r->values[0] != NULL && r->values[2] != NULL);
			/* grey everywhere: the max-pooled mean is the grey, 51 / 255 */
			if (r->values[0] != NULL)
				CHECK_NEAR(r->values[0][0], 0.2, 1e-6);
			CHECK_EXPR(!r->rows[1].ok && r->values[1] == NULL);
			CHECK_STR(r->rows[1].sqlstate, PGINFER_SQLSTATE_BAD_PARAM);
			CHECK_CONTAINS(r->rows[1].message, "model \"mpn.onnx\" cannot take the row's image at its own size, 2x3: ");
			CHECK_CONTAINS(r->rows[1].message, "MaxPool");
			CHECK_EXPR(r->rows[1].row_id == 2);
		}
		fragment_result_destroy(&r);
	}
	/* two too-small rows batched: the batch fails, each row alone fails */
	{
		const void *rows[4] = {ps, pg, ps, pg};
		size_t		lens[4] = {ls, lg, ls, lg};

		q.run.n_row_ids = 4;
		r = run_rows(mc, &q.run, rows, lens, 4, 64);
		CHECK_EXPR(r != NULL && r->n_rows == 4);
		if (r != NULL && r->n_rows == 4)
		{
			/* 4x4 batch 1 call; 2x3 batch 1 call + 2 alone */
			CHECK_EXPR(r->model_runs == 4);
			CHECK_EXPR(!r->rows[0].ok && !r->rows[2].ok && r->rows[1].ok && r->rows[3].ok);
			CHECK_STR(r->rows[0].sqlstate, PGINFER_SQLSTATE_BAD_PARAM);
			CHECK_STR(r->rows[2].sqlstate, PGINFER_SQLSTATE_BAD_PARAM);
		}
		fragment_result_destroy(&r);
	}
	/* an image wider than the cap, with input size 0: its row fails */
	{
		const void *rows[2] = {pw, pg};
		size_t		lens[2] = {lw, lg};

		q.run.n_row_ids = 2;
		q.spec.file = "gapn.onnx";
		r = run_rows(mc, &q.run, rows, lens, 2, 64);
		CHECK_EXPR(r != NULL && r->n_rows == 2);
		if (r != NULL && r->n_rows == 2)
		{
			CHECK_EXPR(!r->rows[0].ok && r->rows[1].ok && r->model_runs == 1);
			CHECK_STR(r->rows[0].sqlstate, PGINFER_SQLSTATE_BAD_PARAM);
			CHECK_CONTAINS(r->rows[0].message, "8193x1");
		}
		fragment_result_destroy(&r);
	}
	/* an input size over the cap fails the request */
	{
		const void *rows[1] = {pg};
		size_t		lens[1] = {lg};

		q.run.n_row_ids = 1;
		q.spec.input_height = 4;
		q.spec.input_width = FRAGMENT_MAX_INPUT_SIDE + 1;
		CHECK_EXPR(fragment_run(mc, &q.run, rows, lens, 1, 0, 64, NULL, &r, &sqlstate,
						   err, sizeof(err)) == -1 && r == NULL);
		CHECK_STR(sqlstate, PGINFER_SQLSTATE_BAD_PARAM);
		CHECK_CONTAINS(err, "8193x4");
		/* with a fixed input size a model failure is the request's */
		q.spec.file = "mpn.onnx";
		q.spec.input_height = 2;
		q.spec.input_width = 2;
		CHECK_EXPR(fragment_run(mc, &q.run, rows, lens, 1, 0, 64, NULL, &r, &sqlstate,
						   err, sizeof(err)) == -1 && r == NULL);
		CHECK_STR(sqlstate, PGINFER_SQLSTATE_INTERNAL);
		CHECK_CONTAINS(err, "model \"mpn.onnx\" failed");
	}

done:
	free(pg);
	free(ps);
	free(pw);
	model_cache_destroy(&mc);
}

/*
 * server_run_group(): two requests of one fragment run as one batch; each
 * reply carries its own request id, rows and frames; group keys tell
 * fragments apart; a request error answers every member.
 */
static void
test_run_group(void)
{
	server_opts opts = {NULL, tmpdir, 0, 64, 0};
	char		err[512];
	server	   *s = server_new(&opts, err, sizeof(err));
	Pginfer__Header h1 = PGINFER__HEADER__INIT,
				h2 = PGINFER__HEADER__INIT;
	Pginfer__RunFragment run1 = PGINFER__RUN_FRAGMENT__INIT,
				run2 = PGINFER__RUN_FRAGMENT__INIT;
	Pginfer__Fragment frag = PGINFER__FRAGMENT__INIT;
	Pginfer__ModelSpec spec = PGINFER__MODEL_SPEC__INIT;
	Pginfer__ModelSpec *specp[1];
	uint64_t	ids1[2] = {10, 11},
				ids2[1] = {20};
	static const uint8_t grey[2][3] = {{51, 102, 153}, {51, 102, 153}};
	static const char junk[] = "nope";
	size_t		len;
	void	   *png = make_png(2, 2, grey, &len);
	const void *f1[2] = {png, junk};
	const void *f2[1] = {png};
	size_t		l1[2] = {len, 4},
				l2[1] = {len};
	const Pginfer__Header *reqs[2] = {&h1, &h2};
	const void *const *frames[2] = {f1, f2};
	const size_t *lens[2] = {l1, l2};
	server_reply *replies[2] = {NULL, NULL};
	uint8_t    *k1,
			   *k2;
	size_t		kl1,
				kl2;

	CHECK_EXPR(s != NULL && png != NULL);
	if (s == NULL || png == NULL)
		goto done;
	spec.file = "gapn.onnx";
	fill_run(&h1, &run1, &frag, &spec, specp, PGINFER__FRAGMENT_KIND__FRAG_PREDICT, ids1, 2);
	fill_run(&h2, &run2, &frag, &spec, specp, PGINFER__FRAGMENT_KIND__FRAG_PREDICT, ids2, 1);
	h2.request_id = 32;

	/* Same fragment, same limit: same key; another limit or label: another. */
	k1 = request_group_key(&run1, &kl1);
	k2 = request_group_key(&run2, &kl2);
	CHECK_EXPR(k1 != NULL && k2 != NULL && kl1 == kl2 && memcmp(k1, k2, kl1) == 0);
	free(k2);
	run2.max_pixels = 1000;
	k2 = request_group_key(&run2, &kl2);
	CHECK_EXPR(k2 != NULL && (kl1 != kl2 || memcmp(k1, k2, kl1) != 0));
	free(k2);
	run2.max_pixels = 0;
	{
		Pginfer__Fragment frag2 = frag;
		Pginfer__ModelSpec spec2 = spec;
		Pginfer__ModelSpec *spec2p[1] = {&spec2};
		char	   *labels[1] = {"x"};

		spec2.n_labels = 1;
		spec2.labels = labels;
		frag2.models = spec2p;
		run2.fragment = &frag2;
		k2 = request_group_key(&run2, &kl2);
		CHECK_EXPR(k2 != NULL && (kl1 != kl2 || memcmp(k1, k2, kl1) != 0));
		free(k2);
		run2.fragment = &frag;
	}
	{
		/* another name only: the same key (one run), told apart by name */
		Pginfer__Fragment frag2 = frag;
		Pginfer__ModelSpec spec2 = spec;
		Pginfer__ModelSpec *spec2p[1] = {&spec2};
		Pginfer__Fragment *u;

		spec2.name = "other_name";
		frag2.models = spec2p;
		run2.fragment = &frag2;
		k2 = request_group_key(&run2, &kl2);
		CHECK_EXPR(k2 != NULL && kl1 == kl2 && memcmp(k1, k2, kl1) == 0);
		free(k2);
		CHECK_EXPR(!request_same_names(&frag, &frag2));
		CHECK_EXPR(request_same_names(&frag, &frag));
		u = request_fragment_unnamed(&frag2);
		CHECK_EXPR(u != NULL && u->n_models == 1 && u->models[0] != &spec2 &&
				   strcmp(u->models[0]->name, "") == 0 &&
				   strcmp(u->models[0]->file, "gapn.onnx") == 0 &&
				   u->kind == frag2.kind && u->next == NULL);
		CHECK_EXPR(strcmp(spec2.name, "other_name") == 0);
		request_fragment_unnamed_free(u);

		/*
		 * A chain (fragment, then a next stage of two models) with a further
		 * fragment and a NULL further fragment: a name that differs in the
		 * next stage only gives the same key, not the same names.
		 */
		{
			Pginfer__Fragment a1 = frag,
						a2 = frag,
						b1 = frag,
						b2 = frag;
			Pginfer__ModelSpec n2 = spec;
			Pginfer__ModelSpec *two[2] = {&spec, &spec};
			Pginfer__ModelSpec *renamed[2] = {&spec, &n2};
			Pginfer__Fragment *more[2] = {&frag, NULL};
			Pginfer__RunFragment ra = run1,
						rb = run1;

			n2.name = "renamed";
			a2.n_models = b2.n_models = 2;
			a2.models = two;
			b2.models = renamed;
			a1.next = &a2;
			b1.next = &b2;
			ra.fragment = &a1;
			rb.fragment = &b1;
			ra.n_more_fragments = rb.n_more_fragments = 2;
			ra.more_fragments = rb.more_fragments = more;
			k2 = request_group_key(&ra, &kl2);
			{
				size_t		kl3;
				uint8_t    *k3 = request_group_key(&rb, &kl3);

				CHECK_EXPR(k2 != NULL && k3 != NULL && kl2 == kl3 &&
						   memcmp(k2, k3, kl2) == 0 && (kl1 != kl2 || memcmp(k1, k2, kl1) != 0));
				free(k3);
			}
			free(k2);
			CHECK_EXPR(!request_same_names(&a1, &b1) && request_same_names(&a1, &a1));
			u = request_fragment_unnamed(&b1);
			CHECK_EXPR(u != NULL && u->next != NULL && u->next->n_models == 2 &&
					   u->next->models[1] != &n2 &&
					   strcmp(u->next->models[1]->name, "") == 0 &&
					   strcmp(n2.name, "renamed") == 0 &&
					   u->next->next == NULL && b1.next == &b2);
			request_fragment_unnamed_free(u);
		}
		run2.fragment = &frag;
	}
	free(k1);

	CHECK_EXPR(server_run_group(s, reqs, frames, lens, 2, replies) == 0);
	for (int k = 0; k < 2; k++)
	{
		Pginfer__Header *u = replies[k] ?
			pginfer__header__unpack(NULL, replies[k]->header_len, replies[k]->header) : NULL;
		size_t		want = k == 0 ? 2 : 1;

		CHECK_EXPR(u != NULL && u->kind == PGINFER__MSG_KIND__MSG_RESULT && u->result &&
			  u->result->n_rows == want && replies[k]->n_frames == (int) want);
		if (u != NULL && u->result && u->result->n_rows == want)
		{
			CHECK_EXPR(u->request_id == (k == 0 ? 31u : 32u));
			CHECK_EXPR(u->result->rows[0]->row_id == (k == 0 ? 10u : 20u));
			CHECK_EXPR(u->result->rows[0]->ok && replies[k]->frame_len[0] == 12);
			if (replies[k]->frame_len[0] == 12)
				CHECK_NEAR(((float *) replies[k]->frames[0])[2], 0.6, 1e-6);
			if (k == 0)
			{
				CHECK_EXPR(u->result->rows[1]->row_id == 11 && !u->result->rows[1]->ok);
				CHECK_EXPR(replies[0]->frame_len[1] == 0);
			}
		}
		if (u)
			pginfer__header__free_unpacked(u, NULL);
		server_reply_destroy(&replies[k]);
	}

	/* A request error (unknown model) answers both with MSG_ERROR. */
	spec.file = "gone.onnx";
	CHECK_EXPR(server_run_group(s, reqs, frames, lens, 2, replies) == 0);
	for (int k = 0; k < 2; k++)
	{
		Pginfer__Header *u = replies[k] ?
			pginfer__header__unpack(NULL, replies[k]->header_len, replies[k]->header) : NULL;

		CHECK_EXPR(u != NULL && u->kind == PGINFER__MSG_KIND__MSG_ERROR && u->error &&
			  u->request_id == (k == 0 ? 31u : 32u));
		if (u && u->error)
			CHECK_STR(u->error->sqlstate, "58P01");
		if (u)
			pginfer__header__free_unpacked(u, NULL);
		server_reply_destroy(&replies[k]);
	}

	/*
	 * The counters: one merged batch of 3 rows, one model call, and the
	 * check of its last row alone (the first batch after the load).
	 */
	{
		Pginfer__Header ph = PGINFER__HEADER__INIT;
		Pginfer__Header *u;
		server_reply *r = NULL;
		uint8_t    *buf;
		size_t		blen;

		ph.version = PGINFER_PROTOCOL_VERSION;
		ph.kind = PGINFER__MSG_KIND__MSG_PING;
		buf = pack(&ph, &blen);
		server_handle(s, buf, blen, NULL, NULL, 0, &r);
		free(buf);
		u = r ? pginfer__header__unpack(NULL, r->header_len, r->header) : NULL;
		CHECK_EXPR(u && u->state);
		if (u && u->state)
			CHECK_EXPR(u->state->batches_run == 1 && u->state->merged_batches == 1 &&
				  u->state->rows_run == 3 && u->state->model_runs == 2 &&
				  u->state->requests_served == 2 && u->state->queue_length == 0 &&
				  u->state->backlog_ms == 0.0);
		if (u)
			pginfer__header__free_unpacked(u, NULL);
		server_reply_destroy(&r);
	}

done:
	free(png);
	server_destroy(&s);
}

/* Log level names. */
static void
test_log_levels(void)
{
	log_level	l = LOG_LEVEL_ERROR;

	CHECK_EXPR(log_parse_level("debug", &l) == 0 && l == LOG_LEVEL_DEBUG);
	CHECK_EXPR(log_parse_level("WARN", &l) == 0 && l == LOG_LEVEL_WARN);
	CHECK_EXPR(log_parse_level("error", &l) == 0 && l == LOG_LEVEL_ERROR);
	CHECK_EXPR(log_parse_level("loud", &l) == -1 && l == LOG_LEVEL_ERROR);
	CHECK_STR(log_level_name(LOG_LEVEL_INFO), "INFO");
	CHECK_EXPR(fragment_max_pixels(0, 100) == 100);
	CHECK_EXPR(fragment_max_pixels(50, 100) == 50);
	CHECK_EXPR(fragment_max_pixels(500, 100) == 100);
	CHECK_EXPR(fragment_max_pixels(0, 0) == PGINFER_DEFAULT_MAX_PIXELS);
}

/*
 * Header.client as request_unpack gives it: cut at PGINFER_CLIENT_MAX
 * bytes, its bytes kept (the log escapes them, log_escape); an empty one
 * stays empty.
 */
static void
test_client(void)
{
	Pginfer__Header h = PGINFER__HEADER__INIT;
	char		client[301];
	uint8_t    *buf;
	size_t		len;
	Pginfer__Header *u;

	memset(client, 'x', 300);
	client[300] = '\0';
	memcpy(client, "db=caf\xc3\xa9 user=a\nb pid=\x01" "7", 24);
	h.version = PGINFER_PROTOCOL_VERSION;
	h.kind = PGINFER__MSG_KIND__MSG_PING;
	h.client = client;
	buf = pack(&h, &len);
	u = request_unpack(buf, len, NULL);
	CHECK_EXPR(u != NULL && u->client != NULL && strlen(u->client) == PGINFER_CLIENT_MAX &&
			   strncmp(u->client, client, PGINFER_CLIENT_MAX) == 0);
	pginfer__header__free_unpacked(u, NULL);
	free(buf);

	h.client = (char *) "";
	buf = pack(&h, &len);
	u = request_unpack(buf, len, NULL);
	CHECK_EXPR(u != NULL && u->client != NULL && u->client[0] == '\0');
	pginfer__header__free_unpacked(u, NULL);
	free(buf);
}

/* Writes the test files into a temporary directory, runs every test, cleans up. */
int
main(void)
{
	char		path[128];
	FILE	   *f;

	log_set_level(LOG_LEVEL_ERROR);
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_protocol.XXXXXX");
	if (mkdtemp(tmpdir) == NULL)
	{
		perror("mkdtemp");
		return 1;
	}
	snprintf(path, sizeof(path), "%s/gap.onnx", tmpdir);
	CHECK_EXPR(write_gap_model(path, 0) == 0);
	snprintf(path, sizeof(path), "%s/gapn.onnx", tmpdir);
	CHECK_EXPR(write_gap_model(path, 1) == 0);
	snprintf(path, sizeof(path), "%s/gapr.onnx", tmpdir);
	CHECK_EXPR(write_gap_model(path, 2) == 0);
	snprintf(path, sizeof(path), "%s/mpn.onnx", tmpdir);
	CHECK_EXPR(write_gap_model(path, 3) == 0);
	snprintf(path, sizeof(path), "%s/junk.onnx", tmpdir);
	f = fopen(path, "w");
	if (f)
	{
		fputs("this is not an onnx model\n", f);
		fclose(f);
	}
	snprintf(path, sizeof(path), "%s/sub", tmpdir);
	mkdir(path, 0700);

	test_round_trips();
	test_check_header();
	test_path_check();
	test_sha256();
	test_log_levels();
	test_client();
	test_model_cache();
	test_server_handle();
	test_malformed_headers();
	test_fragment_run();
	test_batched_run();
	test_row_model_errors();
	test_run_group();

	snprintf(path, sizeof(path), "%s/gap.onnx", tmpdir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/junk.onnx", tmpdir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/gapn.onnx", tmpdir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/gapr.onnx", tmpdir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/mpn.onnx", tmpdir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/sub", tmpdir);
	rmdir(path);
	rmdir(tmpdir);

	return tu_report("test_protocol");
}
