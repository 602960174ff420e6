/*
 * test_prep.c
 *	  Image preprocessing on the device (ie_model_run_images, engine.h)
 *	  against the worker's host preprocessing (worker/preprocess.c:
 *	  pre_resize, pre_normalize_chw), value for value.
 *
 * The model is an ONNX Identity over one float input of any shape, built
 * here with protobuf-c, so its output is the preprocessed tensor itself.
 * Cases: random images up- and downscaled (also to and from 1 pixel, and
 * to the same size), several images of different sizes in one batch with
 * padding, RGB and BGR, other means and deviations, and the decoded real
 * images given on the command line at the detector's and the
 * recogniser's sizes.  Every value must be equal (the kernels use the
 * host's integer arithmetic and the same float operations).  Then the
 * refusals: a model on the CPU, an empty batch; and the kind of a run that
 * runs out of device memory (an Add of 2^43 floats), as on the CPU.
 *
 *	  gpu-test-prep DEVICE [IMAGE...]     (DEVICE: cuda:0)
 *
 * Prints "gpu-prep: N passed, M failed"; exit 0 when none failed, 77 when
 * DEVICE cannot be used (no GPU and no emulation).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx.pb-c.h"
#include "tests/gpu/check.h"
#include "worker/engine/engine.h"
#include "worker/image.h"
#include "worker/ocr_geometry.h"
#include "worker/preprocess.h"

/*
 * An ONNX model of one node op_type (opset 13) over n_in (1 or 2) float
 * inputs of any shape, x and x2, into y; NULL when out of memory.
 */
static ie_model *
one_node_model(const char *op_type, int n_in, char *err, size_t errlen)
{
	Onnx__ModelProto model = ONNX__MODEL_PROTO__INIT;
	Onnx__OperatorSetIdProto opset = ONNX__OPERATOR_SET_ID_PROTO__INIT;
	Onnx__OperatorSetIdProto *opsets[1] = {&opset};
	Onnx__GraphProto graph = ONNX__GRAPH_PROTO__INIT;
	Onnx__NodeProto node = ONNX__NODE_PROTO__INIT;
	Onnx__NodeProto *nodes[1] = {&node};
	Onnx__ValueInfoProto in = ONNX__VALUE_INFO_PROTO__INIT,
				in2 = ONNX__VALUE_INFO_PROTO__INIT,
				out = ONNX__VALUE_INFO_PROTO__INIT;
	Onnx__ValueInfoProto *ins[2] = {&in, &in2},
			   *outs[1] = {&out};
	Onnx__TypeProto tin = ONNX__TYPE_PROTO__INIT,
				tout = ONNX__TYPE_PROTO__INIT;
	Onnx__TypeProto__Tensor ttin = ONNX__TYPE_PROTO__TENSOR__INIT,
				ttout = ONNX__TYPE_PROTO__TENSOR__INIT;
	char	   *x[2] = {"x", "x2"},
			   *y = "y";
	uint8_t    *buf;
	size_t		len;
	ie_model   *m;

	opset.domain = "";
	opset.has_version = 1;
	opset.version = 13;
	node.op_type = (char *) op_type;
	node.name = "node";
	node.n_input = n_in;
	node.input = x;
	node.n_output = 1;
	node.output = &y;
	ttin.has_elem_type = ttout.has_elem_type = 1;
	ttin.elem_type = ttout.elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
	tin.value_case = tout.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
	tin.tensor_type = &ttin;
	tout.tensor_type = &ttout;
	in.name = x[0];
	in.type = &tin;
	in2.name = x[1];
	in2.type = &tin;
	out.name = y;
	out.type = &tout;
	graph.name = "one_node";
	graph.n_node = 1;
	graph.node = nodes;
	graph.n_input = n_in;
	graph.input = ins;
	graph.n_output = 1;
	graph.output = outs;
	model.has_ir_version = 1;
	model.ir_version = 8;
	model.n_opset_import = 1;
	model.opset_import = opsets;
	model.graph = &graph;
	len = onnx__model_proto__get_packed_size(&model);
	buf = malloc(len);
	if (buf == NULL)
	{
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	onnx__model_proto__pack(&model, buf);
	m = ie_model_load_bytes(buf, len, err, errlen);
	free(buf);
	return m;
}

static uint32_t rng = 12345;

static uint32_t
next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return rng;
}

/* A w x h image of random pixels (smooth in one half, noise in the other). */
static image_rgb *
random_image(int w, int h)
{
	image_rgb  *img = image_new(w, h);

	if (img == NULL)
		return NULL;
	for (int y = 0; y < h; y++)
		for (int x = 0; x < w; x++)
			for (int c = 0; c < 3; c++)
				img->pixels[((size_t) y * w + x) * 3 + c] =
					x < w / 2 ? (uint8_t) ((x * 7 + y * 3 + c * 50) & 255) :
					(uint8_t) (next_rand() & 255);
	return img;
}

/*
 * Runs n images through ie_model_run_images on m and through pre_resize +
 * pre_normalize_chw here; checks that every value is equal.
 */
static void
compare(const ie_model *m, const char *what, image_rgb *const *imgs, const int *rw,
		const int *rh, int n, const ie_image_norm *norm)
{
	ie_image   *ims = calloc((size_t) n, sizeof(*ims));
	int64_t		dims[4] = {n, 3, norm->out_h, norm->out_w};
	ie_tensor  *want = ie_tensor_new(IE_FLOAT, 4, dims);
	ie_tensor  *got = NULL;
	size_t		plane = (size_t) 3 * norm->out_h * norm->out_w;
	char		err[1024] = "";
	char		detail[1200];

	if (ims == NULL || want == NULL)
	{
		check(0, what, "out of memory");
		goto done;
	}
	for (int k = 0; k < n; k++)
	{
		image_rgb  *rs = pre_resize(imgs[k], rw[k], rh[k]);

		if (rs == NULL)
		{
			check(0, what, "pre_resize failed");
			goto done;
		}
		pre_normalize_chw(rs, norm->mean, norm->std, norm->bgr,
						  (float *) want->data + (size_t) k * plane, norm->out_h,
						  norm->out_w, norm->pad);
		image_destroy(&rs);
		ims[k].pixels = imgs[k]->pixels;
		ims[k].width = imgs[k]->width;
		ims[k].height = imgs[k]->height;
		ims[k].resize_w = rw[k];
		ims[k].resize_h = rh[k];
	}
	if (ie_model_run_images(m, ims, n, norm, &got, err, sizeof(err)) != 0)
	{
		check(0, what, err);
		goto done;
	}
	if (got->ndim != 4 || got->dims[0] != n || got->dims[1] != 3 ||
		got->dims[2] != norm->out_h || got->dims[3] != norm->out_w)
	{
		check(0, what, "the output has another shape");
		goto done;
	}
	for (size_t i = 0; i < (size_t) n * plane; i++)
	{
		float		a = ((const float *) got->data)[i],
					b = ((const float *) want->data)[i];

		if (memcmp(&a, &b, sizeof(float)) != 0)
		{
			snprintf(detail, sizeof(detail), "value %zu (image %zu, channel %zu, y %zu, x %zu): "
					 "device %.9g, host %.9g", i, i / plane, i % plane / (plane / 3),
					 i % (plane / 3) / norm->out_w, i % norm->out_w, a, b);
			check(0, what, detail);
			goto done;
		}
	}
	check(1, what, NULL);
done:
	free(ims);
	ie_tensor_destroy(&want);
	ie_tensor_destroy(&got);
}

/* One random image of w x h to rw x rh, alone, RGB and then BGR. */
static void
one_random(const ie_model *m, int w, int h, int rw, int rh)
{
	image_rgb  *img = random_image(w, h);
	ie_image_norm norm = {{0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}, 0, 0.0f, rh, rw};
	char		what[128];

	if (img == NULL)
	{
		check(0, "random image", "out of memory");
		return;
	}
	snprintf(what, sizeof(what), "%dx%d to %dx%d, RGB", w, h, rw, rh);
	compare(m, what, &img, &rw, &rh, 1, &norm);
	norm.bgr = 1;
	norm.mean[0] = norm.mean[1] = norm.mean[2] = 0.5f;
	norm.std[0] = norm.std[1] = norm.std[2] = 0.5f;
	snprintf(what, sizeof(what), "%dx%d to %dx%d, BGR", w, h, rw, rh);
	compare(m, what, &img, &rw, &rh, 1, &norm);
	image_destroy(&img);
}

int
main(int argc, char **argv)
{
	char		err[1024];
	int			device;
	ie_model   *m = NULL,
			   *cpu = NULL;

	if (argc < 2)
	{
		fprintf(stderr, "usage: gpu-test-prep DEVICE [IMAGE...]\n");
		return 2;
	}
	if ((cpu = one_node_model("Identity", 1, err, sizeof(err))) == NULL)
	{
		printf("FAIL the identity model: %s\n", err);
		return 1;
	}
	if (ie_device_parse(argv[1], &device, err, sizeof(err)) != 0 ||
		ie_set_device(device, err, sizeof(err)) != 0)
	{
		printf("gpu-prep: %s: %s (skipped)\n", argv[1], err);
		ie_model_destroy(&cpu);
		return 77;
	}
	if ((m = one_node_model("Identity", 1, err, sizeof(err))) == NULL)
	{
		printf("FAIL the identity model on %s: %s\n", argv[1], err);
		return 1;
	}

	/* sizes: down, up, same, one pixel either way, odd ratios */
	one_random(m, 64, 48, 32, 24);
	one_random(m, 37, 23, 100, 61);
	one_random(m, 50, 40, 50, 40);
	one_random(m, 50, 40, 50, 17);
	one_random(m, 1, 1, 9, 5);
	one_random(m, 33, 21, 1, 1);
	one_random(m, 640, 480, 320, 224);
	one_random(m, 211, 97, 192, 48);

	/* a batch of several sizes, padded to the widest (the recogniser's way) */
	{
		int			w[4] = {120, 31, 300, 7},
					h[4] = {30, 40, 25, 9};
		int			rw[4] = {192, 37, 320, 5},
					rh[4] = {48, 48, 48, 48};
		image_rgb  *imgs[4];
		ie_image_norm norm = {{0.5f, 0.5f, 0.5f}, {0.5f, 0.5f, 0.5f}, 1, -1.5f, 48, 320};
		int			ok = 1;

		for (int k = 0; k < 4; k++)
			ok &= (imgs[k] = random_image(w[k], h[k])) != NULL;
		if (ok)
			compare(m, "a batch of 4 sizes, padded", imgs, rw, rh, 4, &norm);
		for (int k = 0; k < 4; k++)
			image_destroy(&imgs[k]);
	}

	/* a short image padded below (resize_h < out_h), and one cut on the right (resize_w > out_w) */
	{
		int			w[2] = {90, 200},
					h[2] = {20, 30};
		int			rw[2] = {120, 260},
					rh[2] = {30, 48};
		image_rgb  *imgs[2];
		ie_image_norm norm = {{0.5f, 0.5f, 0.5f}, {0.5f, 0.5f, 0.5f}, 0, 0.25f, 48, 192};
		int			ok = 1;

		for (int k = 0; k < 2; k++)
			ok &= (imgs[k] = random_image(w[k], h[k])) != NULL;
		if (ok)
			compare(m, "padded below and cut on the right", imgs, rw, rh, 2, &norm);
		for (int k = 0; k < 2; k++)
			image_destroy(&imgs[k]);
	}

	/* real images at the detector's (multiples of 32) and recogniser's sizes */
	for (int a = 2; a < argc; a++)
	{
		FILE	   *f = fopen(argv[a], "rb");
		static uint8_t buf[16 << 20];
		size_t		len = f != NULL ? fread(buf, 1, sizeof(buf), f) : 0;
		image_rgb  *img = NULL;
		char		what[512];

		if (f != NULL)
			fclose(f);
		if (image_decode(buf, len, 64LL << 20, &img, err, sizeof(err)) != IMAGE_OK)
		{
			check(0, argv[a], err);
			continue;
		}
		{
			int			rw = (img->width / 2 + 31) / 32 * 32,
						rh = (img->height / 2 + 31) / 32 * 32;
			ie_image_norm norm = {{0.5f, 0.5f, 0.5f}, {0.5f, 0.5f, 0.5f}, 1, 0.0f, rh, rw};

			snprintf(what, sizeof(what), "%s to %dx%d", argv[a], rw, rh);
			compare(m, what, &img, &rw, &rh, 1, &norm);
		}
		{
			int			rh = 48,
						rw = (int) (48.0 * img->width / img->height);
			ie_image_norm norm = {{0.5f, 0.5f, 0.5f}, {0.5f, 0.5f, 0.5f}, 1, 0.0f, 48,
			rw < 1 ? 1 : rw};

			rw = rw < 1 ? 1 : rw;
			snprintf(what, sizeof(what), "%s to %dx%d", argv[a], rw, rh);
			compare(m, what, &img, &rw, &rh, 1, &norm);
		}
		image_destroy(&img);
	}

	/* device images: upload, crops (plain and turned), turns, as model input */
	{
		image_rgb  *page = random_image(160, 120);
		ie_dimage  *dp = NULL;
		const float boxes[3][4][2] = {
			{{10.5f, 12.25f}, {120.75f, 18.0f}, {118.0f, 44.5f}, {8.0f, 38.0f}},	/* a skewed line */
			{{30.0f, 5.0f}, {52.0f, 6.0f}, {50.0f, 100.0f}, {29.0f, 99.0f}},	/* tall: turned */
			{{-5.0f, 100.0f}, {170.0f, 95.0f}, {171.0f, 130.0f}, {-4.0f, 131.0f}}	/* over the edges */
		};

		if (page != NULL)
			dp = ie_dimage_upload(device, page->pixels, page->width, page->height, err,
								  sizeof(err));
		check(dp != NULL, "ie_dimage_upload", err);
		if (dp != NULL)
		{
			uint8_t    *back = malloc((size_t) 160 * 120 * 3);

			check(back != NULL && ie_dimage_download(dp, back, err, sizeof(err)) == 0 &&
				  memcmp(back, page->pixels, (size_t) 160 * 120 * 3) == 0,
				  "a device image downloads as uploaded", err);
			free(back);
		}
		for (int b = 0; dp != NULL && b < 3; b++)
		{
			image_rgb  *host = geo_crop_box(page, boxes[b]);
			double		mi[9];
			int			cw,
						ch,
						rot90,
						w,
						h;
			ie_dimage  *dc = NULL;
			uint8_t    *got = NULL;
			char		what[128];

			snprintf(what, sizeof(what), "crop %d cut on the device = geo_crop_box", b);
			if (host == NULL || geo_crop_plan(boxes[b], mi, &cw, &ch, &rot90) != 0 ||
				(dc = ie_dimage_warp(dp, mi, cw, ch, rot90, err, sizeof(err))) == NULL)
			{
				check(0, what, err);
				image_destroy(&host);
				continue;
			}
			ie_dimage_size(dc, &w, &h);
			got = malloc((size_t) w * h * 3);
			check(w == host->width && h == host->height && got != NULL &&
				  ie_dimage_download(dc, got, err, sizeof(err)) == 0 &&
				  memcmp(got, host->pixels, (size_t) w * h * 3) == 0, what, err);
			if (b == 1)
				check(rot90 == 1, "the tall crop is turned 90 degrees", NULL);
			if (b == 0)
			{
				image_rgb  *r = pre_rotate180(host);
				int			rh = 48,
							rw = 120;
				ie_image_norm norm = {{0.5f, 0.5f, 0.5f}, {0.5f, 0.5f, 0.5f}, 1, 0.0f, 48, 192};
				ie_image	im = {NULL, w, h, rw, rh, dc};
				ie_tensor  *a = NULL,
						   *c = NULL;

				check(r != NULL && ie_dimage_rotate180(dc, err, sizeof(err)) == 0 &&
					  ie_dimage_download(dc, got, err, sizeof(err)) == 0 &&
					  memcmp(got, r->pixels, (size_t) w * h * 3) == 0,
					  "a 180-degree turn on the device = pre_rotate180", err);
				/* the turned device crop as model input = its host copy's */
				if (r != NULL && ie_model_run_images(m, &im, 1, &norm, &a, err, sizeof(err)) == 0)
				{
					im.pixels = r->pixels;
					im.dpixels = NULL;
					check(ie_model_run_images(m, &im, 1, &norm, &c, err, sizeof(err)) == 0 &&
						  a->nbytes == c->nbytes && memcmp(a->data, c->data, a->nbytes) == 0,
						  "a device image as model input = its host pixels", err);
				}
				else
					check(0, "a device image as model input", err);
				ie_tensor_destroy(&a);
				ie_tensor_destroy(&c);
				image_destroy(&r);
			}
			free(got);
			ie_dimage_destroy(&dc);
			image_destroy(&host);
		}
		ie_dimage_destroy(&dp);
		image_destroy(&page);
	}

	/* refusals */
	{
		ie_image	im = {(const uint8_t *) "abc", 1, 1, 1, 1, NULL};
		ie_image_norm norm = {{0, 0, 0}, {1, 1, 1}, 0, 0.0f, 1, 1};
		ie_tensor  *out = NULL;
		int			rc;

		rc = ie_model_run_images(cpu, &im, 1, &norm, &out, err, sizeof(err));
		check(rc != 0 && strstr(err, "runs on the CPU") != NULL && out == NULL,
			  "a model on the CPU is refused", err);
		rc = ie_model_run_images(m, &im, 0, &norm, &out, err, sizeof(err));
		check(rc != 0 && out == NULL, "an empty batch is refused", err);
		im.resize_w = 0;
		rc = ie_model_run_images(m, &im, 1, &norm, &out, err, sizeof(err));
		check(rc != 0 && out == NULL, "an empty size is refused", err);
	}

	/*
	 * The kind of a run's failure on the device: an Add whose output, 2^43
	 * floats, no device holds is out of memory (as on the CPU: test_engine),
	 * not an invalid run; a small one runs after it.
	 */
	{
		int64_t		da[2] = {1, 1 << 22},
					db[2] = {1 << 21, 1};
		ie_tensor  *a = ie_tensor_new(IE_FLOAT, 2, da),
				   *b = ie_tensor_new(IE_FLOAT, 2, db);
		const ie_tensor *ab[2] = {a, b};
		ie_tensor  *out = NULL;
		ie_model   *add = one_node_model("Add", 2, err, sizeof(err));
		int			rc;

		check(a != NULL && b != NULL && add != NULL, "the Add model", err);
		if (a != NULL && b != NULL && add != NULL)
		{
			rc = ie_model_run(add, ab, &out, err, sizeof(err));
			check(rc == -IE_ERR_NO_MEMORY && out == NULL && strstr(err, "out of memory") != NULL,
				  "a 2^43-float Add on the device is IE_ERR_NO_MEMORY", err);
			a->dims[1] = 2;
			a->nbytes = 2 * sizeof(float);
			b->dims[0] = 3;
			b->nbytes = 3 * sizeof(float);
			rc = ie_model_run(add, ab, &out, err, sizeof(err));
			check(rc == 0 && out != NULL && out->dims[0] == 3 && out->dims[1] == 2,
				  "a 3x2 Add on the device after it", err);
			ie_tensor_destroy(&out);
		}
		ie_model_destroy(&add);
		ie_tensor_destroy(&a);
		ie_tensor_destroy(&b);
	}

	ie_model_destroy(&m);
	ie_model_destroy(&cpu);
	printf("gpu-prep: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
