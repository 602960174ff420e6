/*
 * ocr_main.c
 *	  infer-ocr: the OCR fragment from the command line, for tests, demos
 *	  and comparisons with RapidOCR.
 *
 *	  infer-ocr --model-dir DIR [--detect-only] [--json] [--threads N]
 *				[--time] IMAGE...
 *
 * For each image: without --json, a line with the file name, the
 * recognised lines, then an empty line; with --json, one line
 * {"file": ..., "ms": ..., "lines": [...]} (lines as ocr_result_json).
 * --time also writes each image's milliseconds to stderr.  An image that
 * cannot be read or decoded is reported on stderr and the others still
 * run; the exit status is then 1.
 *
 * The model directory holds the files RapidOCR 1.4.4 ships:
 * ch_PP-OCRv4_det_infer.onnx, ch_ppocr_mobile_v2.0_cls_infer.onnx,
 * ch_PP-OCRv4_rec_infer.onnx and ppocr_keys_v1.txt.
 *
 * Threading: single-threaded driver; the engine may use --threads threads.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/engine/engine.h"
#include "worker/image.h"
#include "worker/ocr.h"

#define MAX_PIXELS	(64LL * 1024 * 1024)

/* The command line summary, on stderr. */
static void
usage(void)
{
	fprintf(stderr, "usage: infer-ocr --model-dir DIR [--detect-only] [--json] "
			"[--threads N] [--time] IMAGE...\n");
}

/* Reads a whole file; NULL with a message in err. */
static unsigned char *
read_file(const char *path, size_t *len, char *err, size_t errlen)
{
	FILE	   *f = fopen(path, "rb");
	unsigned char *buf = NULL;
	long		sz;

	if (f == NULL)
	{
		snprintf(err, errlen, "cannot open: %s", strerror(errno));
		return NULL;
	}
	if (fseek(f, 0, SEEK_END) != 0 || (sz = ftell(f)) < 0 ||
		fseek(f, 0, SEEK_SET) != 0)
	{
		snprintf(err, errlen, "cannot seek: %s", strerror(errno));
		goto fail;
	}
	buf = malloc((size_t) sz + 1);
	if (buf == NULL)
	{
		snprintf(err, errlen, "out of memory for %ld bytes", sz);
		goto fail;
	}
	if (fread(buf, 1, (size_t) sz, f) != (size_t) sz)
	{
		snprintf(err, errlen, "cannot read: %s", strerror(errno));
		free(buf);
		buf = NULL;
		goto fail;
	}
	*len = (size_t) sz;
fail:
	fclose(f);
	return buf;
}

/* JSON string literal of s on stdout. */
static void
print_json_str(const char *s)
{
	putchar('"');
	for (; *s; s++)
	{
		unsigned char c = (unsigned char) *s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

/* Monotonic clock in milliseconds. */
static double
now_ms(void)
{
	return ie_now_ns() / 1e6;
}

/* Loads one model from dir/name; NULL with a message on stderr. */
static ie_model *
load_model(const char *dir, const char *name)
{
	char		path[4096];
	char		err[512];
	ie_model   *m;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	m = ie_model_load_file(path, err, sizeof(err));
	if (m == NULL)
		fprintf(stderr, "infer-ocr: %s: %s\n", path, err);
	return m;
}

/* Options, models, then one OCR run per image argument. */
int
main(int argc, char **argv)
{
	const char *model_dir = NULL;
	int			detect_only = 0,
				json = 0,
				timing = 0,
				threads = 0;
	int			first_image = argc;
	ie_model   *det = NULL,
			   *cls = NULL,
			   *rec = NULL;
	char	  **dict = NULL;
	int			dict_len = 0;
	ocr_models	models;
	ocr_params	params;
	char		err[512];
	char		path[4096];
	int			status = 0;

	for (int i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "--model-dir") == 0 && i + 1 < argc)
			model_dir = argv[++i];
		else if (strcmp(argv[i], "--detect-only") == 0)
			detect_only = 1;
		else if (strcmp(argv[i], "--json") == 0)
			json = 1;
		else if (strcmp(argv[i], "--time") == 0)
			timing = 1;
		else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
			threads = atoi(argv[++i]);
		else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
		{
			usage();
			return 0;
		}
		else if (argv[i][0] == '-' && argv[i][1] == '-')
		{
			fprintf(stderr, "infer-ocr: unknown option \"%s\"\n", argv[i]);
			usage();
			return 2;
		}
		else
		{
			first_image = i;
			break;
		}
	}
	if (model_dir == NULL || first_image >= argc)
	{
		usage();
		return 2;
	}
	if (threads > 0)
		ie_set_threads(threads);

	det = load_model(model_dir, "ch_PP-OCRv4_det_infer.onnx");
	if (det == NULL)
		goto fail;
	if (!detect_only)
	{
		cls = load_model(model_dir, "ch_ppocr_mobile_v2.0_cls_infer.onnx");
		rec = load_model(model_dir, "ch_PP-OCRv4_rec_infer.onnx");
		if (cls == NULL || rec == NULL)
			goto fail;
		snprintf(path, sizeof(path), "%s/ppocr_keys_v1.txt", model_dir);
		dict_len = ocr_dict_load(path, &dict, err, sizeof(err));
		if (dict_len < 0)
		{
			fprintf(stderr, "infer-ocr: %s\n", err);
			goto fail;
		}
	}
	models.det = det;
	models.cls = cls;
	models.rec = rec;
	models.dict = (const char *const *) dict;
	models.dict_len = dict_len;
	ocr_params_default(&params);

	for (int i = first_image; i < argc; i++)
	{
		size_t		len = 0;
		unsigned char *bytes = read_file(argv[i], &len, err, sizeof(err));
		image_rgb  *img = NULL;
		ocr_result *res = NULL;
		image_status st;
		double		t0,
					ms;

		if (bytes == NULL)
		{
			fprintf(stderr, "infer-ocr: %s: %s\n", argv[i], err);
			status = 1;
			continue;
		}
		t0 = now_ms();
		st = image_decode(bytes, len, MAX_PIXELS, &img, err, sizeof(err));
		free(bytes);
		if (st != IMAGE_OK)
		{
			fprintf(stderr, "infer-ocr: %s: %s: %s\n", argv[i],
					image_status_name(st), err);
			status = 1;
			continue;
		}
		if (ocr_run(&models, &params, img, detect_only, &res, err, sizeof(err)) < 0)
		{
			fprintf(stderr, "infer-ocr: %s: %s\n", argv[i], err);
			image_destroy(&img);
			status = 1;
			continue;
		}
		ms = now_ms() - t0;
		if (timing)
			fprintf(stderr, "infer-ocr: %s: %dx%d, %d lines, %.0f ms\n", argv[i],
					img->width, img->height, res->n_lines, ms);
		if (json)
		{
			char	   *j = ocr_result_json(res);

			printf("{\"file\":");
			print_json_str(argv[i]);
			printf(",\"ms\":%.1f,\"lines\":%s}\n", ms, j ? j : "[]");
			free(j);
		}
		else
		{
			char	   *t = ocr_result_text(res);

			printf("%s\n", argv[i]);
			if (t && t[0])
				printf("%s\n", t);
			printf("\n");
			free(t);
		}
		fflush(stdout);
		ocr_result_destroy(&res);
		image_destroy(&img);
	}
	ocr_dict_free(&dict, dict_len);
	ie_model_destroy(&det);
	ie_model_destroy(&cls);
	ie_model_destroy(&rec);
	return status;

fail:
	ocr_dict_free(&dict, dict_len);
	ie_model_destroy(&det);
	ie_model_destroy(&cls);
	ie_model_destroy(&rec);
	return 1;
}
