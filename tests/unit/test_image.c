/*
 * test_image.c
 *	  Unit test of worker/image.c: every image of the shared OCR sets decodes
 *	  to Pillow's size and pixels (tools/image_reference.py makes the table),
 *	  every bad input fails with the right status, and synthetic JPEGs and
 *	  PNGs cover what the sets lack (all 8 EXIF orientations, gray JPEG,
 *	  16-bit RGBA, 1-bit gray, palette with tRNS, Adam7, damaged PNG).
 *
 * Images are read from $PGINFER_SHARED/data/... (default "../shared").
 * Single-threaded except test_threads, which decodes from several threads.
 */
#include "worker/image.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <jpeglib.h>
#include <png.h>

#include "tests/unit/testutil.h"

#define MAX_PIXELS 100000000
#define TOLERANCE 2

typedef struct sample
{
	int			x;
	int			y;
	uint8_t		rgb[3];
} sample;

typedef struct expected_image
{
	const char *file;			/* under $PGINFER_SHARED/data/ */
	int			width;			/* as displayed: EXIF orientation applied */
	int			height;
	int			nsamples;
	sample		s[8];
} expected_image;

/*
 * Sizes and pixels from Pillow (tools/image_reference.py): corners, centre,
 * and per kind the pixels that tell right from wrong: fully transparent,
 * opaque and half-transparent pixels (alpha on white), 16-bit values where
 * rounding and truncation differ, darkest and most saturated pixels.
 */
static const expected_image expected[] = {
	{"ocr/p01_web_docs.png", 900, 400, 4, {{0, 0, {223, 225, 229}}, {899, 0, {223, 225, 229}}, {0, 399, {255, 255, 255}}, {450, 200, {255, 255, 255}}}},
	{"ocr/p02_receipt_bakery.png", 480, 350, 4, {{0, 0, {214, 214, 210}}, {479, 0, {214, 214, 210}}, {0, 349, {214, 214, 210}}, {240, 175, {251, 250, 245}}}},
	{"ocr/p03_book_gpl.png", 480, 460, 4, {{0, 0, {248, 243, 231}}, {479, 0, {244, 239, 222}}, {0, 459, {246, 240, 227}}, {240, 230, {242, 235, 216}}}},
	{"ocr/p04_slide_results.png", 1280, 720, 4, {{0, 0, {15, 32, 39}}, {1279, 0, {35, 63, 74}}, {0, 719, {26, 49, 57}}, {640, 360, {30, 55, 64}}}},
	{"ocr/p05_street_sign.jpg", 900, 560, 4, {{0, 0, {120, 83, 65}}, {899, 0, {105, 63, 47}}, {0, 559, {93, 51, 37}}, {450, 280, {45, 89, 150}}}},
	{"ocr/p06_bakery_sign_fr.jpg", 1000, 600, 4, {{0, 0, {90, 85, 79}}, {999, 0, {108, 104, 95}}, {0, 599, {91, 93, 88}}, {500, 300, {54, 78, 54}}}},
	{"ocr/p07_honey_label.jpg", 900, 620, 4, {{0, 0, {127, 112, 83}}, {899, 0, {161, 141, 117}}, {0, 619, {142, 131, 99}}, {450, 310, {192, 181, 159}}}},
	{"ocr/p08_doc_on_desk.jpg", 1600, 1000, 4, {{0, 0, {48, 21, 10}}, {1599, 0, {67, 41, 24}}, {0, 999, {69, 51, 31}}, {800, 500, {254, 250, 247}}}},
	{"ocr/p09_terminal_screen.jpg", 820, 320, 4, {{0, 0, {15, 16, 21}}, {819, 0, {23, 27, 26}}, {0, 319, {28, 32, 33}}, {410, 160, {34, 38, 41}}}},
	{"ocr/p10_platform_sign.jpg", 760, 240, 4, {{0, 0, {147, 148, 143}}, {759, 0, {153, 154, 149}}, {0, 239, {168, 169, 164}}, {380, 120, {12, 94, 58}}}},
	{"ocr/p11_order_ticket.png", 420, 250, 4, {{0, 0, {201, 201, 196}}, {419, 0, {201, 201, 196}}, {0, 249, {201, 201, 196}}, {210, 125, {255, 255, 255}}}},
	{"ocr/p12_fridge_label.png", 640, 180, 4, {{0, 0, {223, 230, 234}}, {639, 0, {223, 230, 234}}, {0, 179, {223, 230, 234}}, {320, 90, {38, 80, 134}}}},
	{"ocr/p13_library_form.png", 790, 474, 4, {{0, 0, {217, 217, 212}}, {789, 0, {217, 217, 212}}, {0, 473, {217, 217, 212}}, {395, 237, {18, 44, 108}}}},
	{"ocr/p14_apache_defs.jpg", 590, 358, 4, {{0, 0, {58, 58, 58}}, {589, 0, {58, 58, 58}}, {0, 357, {58, 58, 58}}, {295, 179, {251, 251, 249}}}},
	{"ocr/p15_sticky_note.jpg", 640, 480, 4, {{0, 0, {160, 111, 55}}, {639, 0, {170, 119, 66}}, {0, 479, {191, 141, 80}}, {320, 240, {44, 46, 32}}}},
	{"ocr/p16_faded_receipt.png", 460, 300, 6, {{0, 0, {196, 195, 189}}, {459, 0, {196, 195, 189}}, {0, 299, {196, 195, 189}}, {230, 150, {236, 233, 225}}, {48, 221, {151, 150, 146}}, {154, 51, {172, 168, 157}}}},
	{"ocr/p17_session_notice.png", 640, 200, 4, {{0, 0, {255, 255, 255}}, {639, 0, {255, 255, 255}}, {0, 199, {255, 255, 255}}, {320, 100, {255, 255, 255}}}},
	{"ocr/p18_jazz_poster_dark.jpg", 800, 560, 4, {{0, 0, {48, 48, 40}}, {799, 0, {40, 37, 48}}, {0, 559, {27, 31, 42}}, {400, 280, {21, 23, 18}}}},
	{"ocr/p19_footer_small.png", 520, 130, 4, {{0, 0, {43, 43, 43}}, {519, 0, {43, 43, 43}}, {0, 129, {43, 43, 43}}, {260, 65, {43, 43, 43}}}},
	{"ocr/p20_git_log_small.png", 460, 150, 4, {{0, 0, {86, 108, 115}}, {459, 0, {86, 108, 115}}, {0, 149, {82, 103, 110}}, {230, 75, {0, 43, 54}}}},
	{"ocr/p21_curl_desc_small.png", 340, 140, 4, {{0, 0, {255, 255, 255}}, {339, 0, {255, 255, 255}}, {0, 139, {255, 255, 255}}, {170, 70, {255, 255, 255}}}},
	{"ocr/p22_kjv_page.png", 620, 420, 7, {{0, 0, {212, 212, 212}}, {619, 0, {230, 230, 230}}, {0, 419, {220, 220, 220}}, {310, 210, {241, 241, 241}}, {252, 158, {45, 45, 45}}, {366, 141, {242, 242, 242}}, {150, 88, {37, 37, 37}}}},
	{"ocr/p23_sample_label.png", 560, 230, 7, {{0, 0, {124, 124, 124}}, {559, 0, {103, 103, 103}}, {0, 229, {120, 120, 120}}, {280, 115, {244, 244, 244}}, {535, 114, {110, 110, 110}}, {447, 69, {236, 236, 236}}, {177, 83, {17, 17, 17}}}},
	{"ocr/p24_logo_rgba.png", 520, 170, 8, {{0, 0, {255, 255, 255}}, {519, 0, {255, 255, 255}}, {0, 169, {255, 255, 255}}, {260, 85, {255, 255, 255}}, {64, 90, {255, 255, 255}}, {278, 72, {18, 64, 138}}, {326, 75, {228, 233, 242}}, {167, 53, {18, 64, 138}}}},
	{"ocr/p25_caption_rgba.png", 640, 170, 8, {{0, 0, {255, 255, 255}}, {639, 0, {255, 255, 255}}, {0, 169, {255, 255, 255}}, {320, 85, {71, 71, 71}}, {539, 85, {255, 255, 255}}, {451, 92, {255, 255, 255}}, {312, 84, {71, 71, 71}}, {144, 42, {71, 71, 71}}}},
	{"ocr/p26_sale_sticker_rgba.png", 360, 210, 8, {{0, 0, {255, 255, 255}}, {359, 0, {255, 255, 255}}, {0, 209, {255, 255, 255}}, {180, 105, {255, 255, 255}}, {102, 105, {255, 255, 255}}, {59, 107, {176, 16, 42}}, {219, 99, {236, 198, 205}}, {75, 48, {176, 16, 42}}}},
	{"ocr/p27_banner_palette.png", 728, 160, 6, {{0, 0, {254, 139, 142}}, {727, 0, {255, 144, 165}}, {0, 159, {254, 139, 142}}, {364, 80, {254, 116, 140}}, {557, 50, {59, 10, 42}}, {176, 0, {254, 116, 140}}}},
	{"ocr/p28_ci_status_palette.png", 420, 180, 5, {{0, 0, {249, 250, 251}}, {419, 0, {249, 250, 251}}, {0, 179, {249, 250, 251}}, {210, 90, {249, 250, 251}}, {90, 59, {26, 127, 55}}}},
	{"ocr/p29_market_flyer_cmyk.jpg", 800, 520, 6, {{0, 0, {255, 226, 90}}, {799, 0, {255, 204, 86}}, {0, 519, {255, 188, 84}}, {400, 260, {184, 157, 56}}, {467, 188, {21, 44, 21}}, {334, 256, {255, 199, 57}}}},
	{"ocr/p30_business_card_cmyk.jpg", 700, 400, 6, {{0, 0, {216, 212, 207}}, {699, 0, {216, 212, 207}}, {0, 399, {216, 212, 207}}, {350, 200, {255, 255, 255}}, {302, 179, {17, 17, 17}}, {348, 150, {9, 135, 142}}}},
	{"ocr/p31_lift_notice_exif6.jpg", 900, 640, 8, {{0, 0, {124, 121, 114}}, {899, 0, {110, 113, 102}}, {0, 639, {124, 124, 114}}, {450, 320, {252, 253, 248}}, {588, 293, {0, 0, 0}}, {0, 465, {104, 116, 94}}, {180, 91, {132, 129, 122}}, {749, 160, {133, 128, 125}}}},
	{"ocr/p32_menu_board_es_exif6.jpg", 760, 560, 8, {{0, 0, {78, 51, 22}}, {759, 0, {87, 60, 31}}, {0, 559, {84, 58, 35}}, {380, 280, {83, 94, 86}}, {550, 552, {3, 15, 13}}, {313, 0, {95, 59, 27}}, {152, 80, {37, 50, 41}}, {633, 140, {30, 43, 36}}}},
	{"ocr/p33_invoice_exif6.jpg", 820, 560, 8, {{0, 0, {112, 79, 48}}, {819, 0, {98, 73, 42}}, {0, 559, {105, 79, 46}}, {410, 280, {251, 253, 252}}, {140, 93, {7, 7, 7}}, {363, 0, {111, 82, 40}}, {164, 80, {209, 207, 208}}, {683, 140, {219, 219, 219}}}},
	{"ocr/p34_blank_wall.jpg", 800, 600, 4, {{0, 0, {98, 90, 79}}, {799, 0, {102, 93, 84}}, {0, 599, {111, 100, 96}}, {400, 300, {142, 134, 123}}}},
	{"ocr/p35_blank_page.png", 600, 780, 6, {{0, 0, {249, 248, 244}}, {599, 0, {245, 244, 239}}, {0, 779, {243, 242, 239}}, {300, 390, {240, 239, 235}}, {298, 752, {237, 236, 231}}, {296, 744, {238, 237, 231}}}},
	{"ocr/p36_blank_slide.png", 1024, 576, 4, {{0, 0, {75, 44, 130}}, {1023, 0, {173, 52, 99}}, {0, 575, {110, 65, 139}}, {512, 288, {123, 67, 151}}}},
	{"ocr/p37_multi_webshop.png", 1000, 560, 4, {{0, 0, {31, 31, 36}}, {999, 0, {31, 31, 36}}, {0, 559, {238, 238, 238}}, {500, 280, {139, 139, 139}}}},
	{"ocr/p38_multi_noticeboard.jpg", 1000, 700, 4, {{0, 0, {202, 148, 88}}, {999, 0, {180, 129, 74}}, {0, 699, {175, 126, 67}}, {500, 350, {165, 120, 61}}}},
	{"ocr/p39_multi_package_lang.png", 760, 500, 4, {{0, 0, {254, 249, 239}}, {759, 0, {255, 250, 240}}, {0, 499, {243, 234, 216}}, {380, 250, {253, 251, 246}}}},
	{"ocr/p40_multi_dashboard.png", 720, 420, 4, {{0, 0, {17, 24, 39}}, {719, 0, {17, 24, 39}}, {0, 419, {17, 24, 39}}, {360, 210, {17, 24, 39}}}},
	{"ocr/p41_confidential_grayalpha.png", 520, 220, 8, {{0, 0, {255, 255, 255}}, {519, 0, {255, 255, 255}}, {0, 219, {255, 255, 255}}, {260, 110, {255, 255, 255}}, {229, 114, {255, 255, 255}}, {142, 78, {48, 48, 48}}, {80, 94, {192, 192, 192}}, {75, 58, {48, 48, 48}}}},
	{"ocr-real/bw_text.png", 516, 333, 4, {{0, 0, {255, 255, 255}}, {515, 0, {255, 255, 255}}, {0, 332, {255, 255, 255}}, {258, 166, {255, 255, 255}}}},
	{"ocr-real/imageTextN.png", 556, 257, 6, {{0, 0, {254, 254, 254}}, {555, 0, {254, 254, 254}}, {0, 256, {254, 254, 254}}, {278, 128, {254, 254, 254}}, {187, 22, {3, 1, 4}}, {321, 19, {213, 123, 41}}}},
	{"ocr-real/page.png", 384, 191, 4, {{0, 0, {136, 136, 136}}, {383, 0, {239, 239, 239}}, {0, 190, {63, 63, 63}}, {192, 95, {204, 204, 204}}}},
	{"ocr-real/scenetext01.jpg", 800, 600, 4, {{0, 0, {193, 172, 203}}, {799, 0, {69, 65, 80}}, {0, 599, {141, 100, 94}}, {400, 300, {63, 53, 80}}}},
	{"ocr-real/scenetext02.jpg", 1280, 960, 4, {{0, 0, {6, 7, 2}}, {1279, 0, {112, 19, 4}}, {0, 959, {8, 9, 4}}, {640, 480, {40, 33, 27}}}},
	{"ocr-real/scenetext03.jpg", 1004, 958, 4, {{0, 0, {178, 161, 115}}, {1003, 0, {149, 131, 107}}, {0, 957, {108, 104, 79}}, {502, 479, {113, 107, 95}}}},
	{"ocr-real/scenetext05.jpg", 1280, 960, 4, {{0, 0, {98, 109, 115}}, {1279, 0, {129, 135, 133}}, {0, 959, {134, 133, 138}}, {640, 480, {162, 147, 104}}}},
	{"ocr-real/scenetext06.jpg", 640, 480, 4, {{0, 0, {125, 171, 220}}, {639, 0, {155, 142, 108}}, {0, 479, {51, 56, 52}}, {320, 240, {189, 183, 131}}}},
};

/* Path of a file under the shared data folder. */
static void
data_path(char *out, size_t outlen, const char *rel)
{
	const char *shared = getenv("PGINFER_SHARED");

	snprintf(out, outlen, "%s/data/%s", shared && *shared ? shared : "../shared", rel);
}

/* Decodes a file of the shared data folder; the status, *img on success. */
static image_status
decode_file(const char *rel, int64_t max_pixels, image_rgb **img, char *err, size_t errlen)
{
	char		path[1024];
	size_t		len = 0;
	uint8_t    *buf;
	image_status st;

	data_path(path, sizeof(path), rel);
	buf = tu_read_file(path, &len);
	if (buf == NULL)
	{
		snprintf(err, errlen, "cannot read %.200s", path);
		*img = NULL;
		return (image_status) -1;
	}
	st = image_decode(buf, len, max_pixels, img, err, errlen);
	free(buf);
	return st;
}

/* Whether pixel (x, y) of img is within tol of rgb on every channel. */
static bool
pixel_near(const image_rgb *img, int x, int y, const uint8_t rgb[3], int tol)
{
	const uint8_t *p = img->pixels + ((size_t) y * img->width + x) * 3;
	int			i;

	for (i = 0; i < 3; i++)
		if (abs((int) p[i] - (int) rgb[i]) > tol)
			return false;
	return true;
}

/* Every image of the sets: size and reference pixels. */
static void
test_reference_images(void)
{
	size_t		i;

	for (i = 0; i < sizeof(expected) / sizeof(expected[0]); i++)
	{
		const expected_image *e = &expected[i];
		image_rgb  *img = NULL;
		char		err[256] = "";
		image_status st = decode_file(e->file, MAX_PIXELS, &img, err, sizeof(err));
		int			k;

		CHECK(st == IMAGE_OK && img != NULL, "%s: decode: %s", e->file, err);
		if (st != IMAGE_OK || img == NULL)
			continue;
		CHECK(img->width == e->width && img->height == e->height,
			  "%s: size %dx%d, expected %dx%d", e->file, img->width, img->height,
			  e->width, e->height);
		if (img->width == e->width && img->height == e->height)
			for (k = 0; k < e->nsamples; k++)
			{
				const sample *s = &e->s[k];
				const uint8_t *p = img->pixels + ((size_t) s->y * img->width + s->x) * 3;

				CHECK(pixel_near(img, s->x, s->y, s->rgb, TOLERANCE),
					  "%s: pixel (%d,%d) = (%d,%d,%d), expected (%d,%d,%d)",
					  e->file, s->x, s->y, p[0], p[1], p[2],
					  s->rgb[0], s->rgb[1], s->rgb[2]);
			}
		image_destroy(&img);
		CHECK(img == NULL, "image_destroy sets the pointer to NULL");
	}
}

/* The bad/ inputs: status, a message that says what is wrong, no image. */
static void
test_bad_inputs(void)
{
	static const struct
	{
		const char *file;
		image_status st;
		const char *in_message;
	}			bad[] = {
		{"ocr/bad/zero_bytes.jpg", IMAGE_ERR_FORMAT, "empty input"},
		{"ocr/bad/text_file.png", IMAGE_ERR_FORMAT, "not a JPEG or PNG (starts with \""},
		{"ocr/bad/truncated_40pct.jpg", IMAGE_ERR_TRUNCATED, "ends after 25072 bytes"},
		{"ocr/bad/corrupt_middle.jpg", IMAGE_ERR_CORRUPT, "orrupt JPEG data"},
		{"ocr/bad/huge_dimensions.png", IMAGE_ERR_TOO_LARGE, "100000x100000"},
	};
	size_t		i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
	{
		image_rgb  *img = (image_rgb *) &img;	/* must be reset to NULL */
		char		err[256] = "";
		image_status st = decode_file(bad[i].file, MAX_PIXELS, &img, err, sizeof(err));

		CHECK(st == bad[i].st, "%s: status %d (%s), expected %d (%s): %s",
			  bad[i].file, (int) st, image_status_name(st), (int) bad[i].st,
			  image_status_name(bad[i].st), err);
		CHECK(img == NULL, "%s: no image on error", bad[i].file);
		CHECK(strstr(err, bad[i].in_message) != NULL,
			  "%s: message \"%s\" lacks \"%s\"", bad[i].file, err, bad[i].in_message);
		if (st == IMAGE_OK)
			image_destroy(&img);
	}
}

/* The pixel limit: exact boundary for PNG and JPEG, and the 10^10-pixel PNG
 * refused fast without touching memory. */
static void
test_pixel_limit(void)
{
	image_rgb  *img = NULL;
	char		err[256] = "";
	image_status st;
	struct rusage before,
				after;
	struct timespec t0,
				t1;
	double		ms;

	/* p01_web_docs.png is 900x400, p05_street_sign.jpg 900x560 */
	st = decode_file("ocr/p01_web_docs.png", 900 * 400 - 1, &img, err, sizeof(err));
	CHECK(st == IMAGE_ERR_TOO_LARGE && img == NULL, "PNG one pixel over the limit: %s", err);
	CHECK(strstr(err, "900x400") != NULL && strstr(err, "359999") != NULL,
		  "limit message names size and limit: %s", err);
	st = decode_file("ocr/p01_web_docs.png", 900 * 400, &img, err, sizeof(err));
	CHECK(st == IMAGE_OK, "PNG exactly at the limit: %s", err);
	image_destroy(&img);
	st = decode_file("ocr/p05_street_sign.jpg", 900 * 560 - 1, &img, err, sizeof(err));
	CHECK(st == IMAGE_ERR_TOO_LARGE && img == NULL, "JPEG one pixel over the limit: %s", err);
	st = decode_file("ocr/p05_street_sign.jpg", 900 * 560, &img, err, sizeof(err));
	CHECK(st == IMAGE_OK, "JPEG exactly at the limit: %s", err);
	image_destroy(&img);

	getrusage(RUSAGE_SELF, &before);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	st = decode_file("ocr/bad/huge_dimensions.png", INT64_MAX, &img, err, sizeof(err));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	getrusage(RUSAGE_SELF, &after);
	ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
	/* with no pixel limit the built-in bound (3 * pixels <= INT_MAX) still
	 * refuses it, before allocating */
	CHECK(st == IMAGE_ERR_TOO_LARGE, "huge PNG without a limit: %s", err);
	CHECK(after.ru_maxrss - before.ru_maxrss < 64 * 1024,
		  "huge PNG raised peak memory by %ld kB", after.ru_maxrss - before.ru_maxrss);
	CHECK(ms < 1000.0, "huge PNG took %.1f ms", ms);
	image_destroy(&img);
}

/* ------------------------------------------------ synthetic JPEG and PNG */

typedef struct membuf
{
	uint8_t    *data;
	size_t		len;
	size_t		cap;
} membuf;

/* Appends n bytes to b; exits when memory runs out (a test). */
static void
membuf_add(membuf *b, const void *p, size_t n)
{
	if (b->len + n > b->cap)
	{
		b->cap = (b->len + n) * 2;
		b->data = realloc(b->data, b->cap);
		if (b->data == NULL)
			abort();
	}
	memcpy(b->data + b->len, p, n);
	b->len += n;
}

/* Colour of block (bx, by) of the 3x2-block orientation test picture. */
static void
block_colour(int bx, int by, uint8_t rgb[3])
{
	static const uint8_t colours[6][3] = {
		{220, 30, 30}, {30, 200, 30}, {30, 30, 220},
		{230, 230, 40}, {30, 210, 210}, {20, 20, 20},
	};

	memcpy(rgb, colours[by * 3 + bx], 3);
}

/* make_jpeg writes the Orientation tag as a LONG instead of a SHORT. */
static bool exif_as_long = false;

/*
 * Encodes a 48x32 picture of six 16x16 blocks as a JPEG (quality 95) with
 * an EXIF APP1 whose IFD0 holds Orientation = orientation (0: no APP1), in
 * big- or little-endian TIFF order, a SHORT (a LONG with exif_as_long).
 * gray: one-component JPEG.
 */
static membuf
make_jpeg(int orientation, bool little_endian, bool gray)
{
	struct jpeg_compress_struct c;
	struct jpeg_error_mgr jerr;
	unsigned char *out = NULL;
	unsigned long outlen = 0;
	uint8_t		row[48 * 3];
	membuf		b = {0};
	int			x,
				y;

	c.err = jpeg_std_error(&jerr);
	jpeg_create_compress(&c);
	jpeg_mem_dest(&c, &out, &outlen);
	c.image_width = 48;
	c.image_height = 32;
	c.input_components = gray ? 1 : 3;
	c.in_color_space = gray ? JCS_GRAYSCALE : JCS_RGB;
	jpeg_set_defaults(&c);
	jpeg_set_quality(&c, 95, TRUE);
	jpeg_start_compress(&c, TRUE);
	if (orientation > 0)
	{
		uint8_t		app1[6 + 8 + 2 + 12 + 4];
		uint8_t    *t = app1 + 6;

		memcpy(app1, "Exif\0\0", 6);
		memset(t + 18, 0, 8);	/* value and its padding, next IFD = 0 */
		if (little_endian)
		{
			memcpy(t, "II\x2a\0\x08\0\0\0", 8);
			memcpy(t + 8, "\x01\0" "\x12\x01" "\x03\0" "\x01\0\0\0", 10);
			t[12] = exif_as_long ? 4 : 3;
			t[18] = (uint8_t) orientation;
		}
		else
		{
			memcpy(t, "MM\0\x2a\0\0\0\x08", 8);
			memcpy(t + 8, "\0\x01" "\x01\x12" "\0\x03" "\0\0\0\x01", 10);
			t[13] = exif_as_long ? 4 : 3;
			t[exif_as_long ? 21 : 19] = (uint8_t) orientation;
		}
		jpeg_write_marker(&c, JPEG_APP0 + 1, app1, sizeof(app1));
	}
	for (y = 0; y < 32; y++)
	{
		for (x = 0; x < 48; x++)
		{
			uint8_t		rgb[3];

			block_colour(x / 16, y / 16, rgb);
			if (gray)
				row[x] = rgb[1];
			else
				memcpy(row + 3 * x, rgb, 3);
		}
		{
			JSAMPROW	rp = row;

			jpeg_write_scanlines(&c, &rp, 1);
		}
	}
	jpeg_finish_compress(&c);
	jpeg_destroy_compress(&c);
	membuf_add(&b, out, outlen);
	free(out);
	return b;
}

/*
 * All 8 EXIF orientations, from the TIFF 6.0 definition of where the stored
 * row 0 and column 0 go: each block centre must land where that says.  Run
 * twice: the tag as a SHORT (the standard), then as a LONG (some writers';
 * Pillow applies it too).
 */
static void
exif_orientations(void)
{
	/* row 0 at: 0 top, 1 bottom, 2 left, 3 right; column 0 at: 0 left,
	 * 1 right, 2 top, 3 bottom */
	static const int row0[9] = {0, 0, 0, 1, 1, 2, 3, 3, 2};
	static const int col0[9] = {0, 0, 1, 1, 0, 2, 2, 3, 3};
	int			o;

	for (o = 0; o <= 8; o++)
	{
		membuf		jpg = make_jpeg(o, o % 2 == 1, false);
		image_rgb  *img = NULL;
		char		err[256] = "";
		image_status st = image_decode(jpg.data, jpg.len, MAX_PIXELS, &img, err, sizeof(err));
		bool		swap = o >= 5;
		int			bx,
					by;

		CHECK(st == IMAGE_OK, "orientation %d%s: decode: %s", o,
			  exif_as_long ? " (LONG)" : "", err);
		if (st == IMAGE_OK)
		{
			CHECK(img->width == (swap ? 32 : 48) && img->height == (swap ? 48 : 32),
				  "orientation %d: size %dx%d", o, img->width, img->height);
			for (by = 0; by < 2 && img->width == (swap ? 32 : 48); by++)
				for (bx = 0; bx < 3; bx++)
				{
					int			sx = bx * 16 + 8,
								sy = by * 16 + 8,
								dx,
								dy;
					uint8_t		rgb[3];
					int			r = o == 0 ? 0 : row0[o],
								c = o == 0 ? 0 : col0[o];

					if (!swap)
					{
						dx = c == 0 ? sx : 47 - sx;
						dy = r == 0 ? sy : 31 - sy;
					}
					else
					{
						dx = r == 2 ? sy : 31 - sy;
						dy = c == 2 ? sx : 47 - sx;
					}
					block_colour(bx, by, rgb);
					CHECK(pixel_near(img, dx, dy, rgb, 12),
						  "orientation %d%s: block (%d,%d) not at (%d,%d)", o,
						  exif_as_long ? " (LONG)" : "", bx, by, dx, dy);
				}
		}
		image_destroy(&img);
		free(jpg.data);
	}
}

static void
test_exif_orientations(void)
{
	exif_orientations();
	exif_as_long = true;
	exif_orientations();
	exif_as_long = false;
}

/*
 * JPEGs of kinds libjpeg-turbo does not decode (its start-of-frame marker
 * patched: SOF1 with 12-bit samples, SOF3 lossless, SOF5 hierarchical) are
 * IMAGE_ERR_UNSUPPORTED, whose message names the kind, not "corrupt" or
 * "not an image" (image trial).
 */
static void
test_unsupported_jpegs(void)
{
	static const struct
	{
		uint8_t		marker;
		uint8_t		precision;
		const char *in_message;
	}			cases[] = {
		{0xC1, 12, "unsupported JPEG: Unsupported JPEG data precision 12"},
		{0xC3, 8, "unsupported JPEG: Unsupported JPEG process: SOF type 0xc3"},
		{0xC5, 8, "unsupported JPEG: Unsupported JPEG process: SOF type 0xc5"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		membuf		jpg = make_jpeg(0, false, false);
		image_rgb  *img = NULL;
		char		err[256] = "";
		image_status st;
		size_t		k;

		for (k = 0; k + 4 < jpg.len; k++)
			if (jpg.data[k] == 0xFF && jpg.data[k + 1] == 0xC0)
				break;
		CHECK(k + 4 < jpg.len, "no SOF0 marker in the test JPEG");
		if (k + 4 < jpg.len)
		{
			jpg.data[k + 1] = cases[i].marker;
			jpg.data[k + 4] = cases[i].precision;
			st = image_decode(jpg.data, jpg.len, MAX_PIXELS, &img, err, sizeof(err));
			CHECK(st == IMAGE_ERR_UNSUPPORTED && img == NULL &&
				  strstr(err, cases[i].in_message) != NULL,
				  "SOF 0x%02x: status %s, \"%s\"", cases[i].marker,
				  image_status_name(st), err);
		}
		image_destroy(&img);
		free(jpg.data);
	}
}

/* A one-component JPEG comes out as R = G = B. */
static void
test_gray_jpeg(void)
{
	membuf		jpg = make_jpeg(0, false, true);
	image_rgb  *img = NULL;
	char		err[256] = "";
	image_status st = image_decode(jpg.data, jpg.len, MAX_PIXELS, &img, err, sizeof(err));

	CHECK(st == IMAGE_OK, "gray JPEG: %s", err);
	if (st == IMAGE_OK)
	{
		const uint8_t *p = img->pixels + (8 * 48 + 24) * 3;	/* block (1,0): 200 */

		CHECK(p[0] == p[1] && p[1] == p[2] && abs(p[0] - 200) <= 3,
			  "gray JPEG pixel (%d,%d,%d), expected about 200", p[0], p[1], p[2]);
	}
	image_destroy(&img);
	free(jpg.data);
}

/* libpng write callback into a membuf. */
static void
png_write_mem(png_structp png, png_bytep data, size_t n)
{
	membuf_add(png_get_io_ptr(png), data, n);
}

/* libpng flush callback: nothing to flush in memory. */
static void
png_flush_mem(png_structp png)
{
	(void) png;
}

/*
 * Encodes rows (height rows of rowbytes bytes, already in PNG sample layout)
 * as a PNG of the given IHDR; palette/trns optional.  Exits on libpng errors.
 */
static membuf
make_png(int width, int height, int depth, int color, bool interlace,
		 const uint8_t *rows, size_t rowbytes, const png_color *palette,
		 int npalette, const uint8_t *trns, int ntrns)
{
	membuf		b = {0};
	png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
	png_infop	info = png_create_info_struct(png);
	png_bytep  *rp = calloc((size_t) height, sizeof(png_bytep));
	int			y;

	if (png == NULL || info == NULL || rp == NULL || setjmp(png_jmpbuf(png)))
		abort();
	png_set_write_fn(png, &b, png_write_mem, png_flush_mem);
	png_set_IHDR(png, info, (png_uint_32) width, (png_uint_32) height, depth, color,
				 interlace ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
				 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
	if (palette != NULL)
		png_set_PLTE(png, info, palette, npalette);
	if (trns != NULL)
		png_set_tRNS(png, info, trns, ntrns, NULL);
	for (y = 0; y < height; y++)
		rp[y] = (png_bytep) (rows + (size_t) y * rowbytes);
	png_set_rows(png, info, rp);
	png_write_png(png, info, PNG_TRANSFORM_IDENTITY, NULL);
	png_destroy_write_struct(&png, &info);
	free(rp);
	return b;
}

/* Decodes b, checks size and status OK; returns the image or NULL. */
static image_rgb *
decode_ok(const char *what, membuf *b, int width, int height)
{
	image_rgb  *img = NULL;
	char		err[256] = "";
	image_status st = image_decode(b->data, b->len, MAX_PIXELS, &img, err, sizeof(err));

	CHECK(st == IMAGE_OK, "%s: %s", what, err);
	if (st != IMAGE_OK)
		return NULL;
	CHECK(img->width == width && img->height == height, "%s: size %dx%d", what,
		  img->width, img->height);
	if (img->width != width || img->height != height)
		image_destroy(&img);
	return img;
}

/* Expects pixel (x, y) of img to be exactly (r, g, bl). */
static void
check_pixel(const char *what, const image_rgb *img, int x, int y, int r, int g, int bl)
{
	const uint8_t *p = img->pixels + ((size_t) y * img->width + x) * 3;

	CHECK(p[0] == r && p[1] == g && p[2] == bl,
		  "%s: pixel (%d,%d) = (%d,%d,%d), expected (%d,%d,%d)", what, x, y,
		  p[0], p[1], p[2], r, g, bl);
}

/* A one-row PNG layout and the pixels it must decode to. */
typedef struct png_case
{
	const char *name;
	int			width;
	int			depth;
	int			color;
	const uint8_t *row;
	size_t		rowbytes;
	const png_color *palette;
	int			npalette;
	const uint8_t *trns;
	int			ntrns;
	int			npix;
	struct
	{
		const char *what;
		int			x;
		int			rgb[3];
	}			pix[5];
} png_case;

/* 16-bit RGBA: (65535, 32768, 0, a=32768), (1000, 60000, 30000, a=65535), (x, x, x, a=0) */
static const uint8_t png_rgba16[] = {
	0xff, 0xff, 0x80, 0x00, 0x00, 0x00, 0x80, 0x00,
	0x03, 0xe8, 0xea, 0x60, 0x75, 0x30, 0xff, 0xff,
	0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0x00, 0x00,
};
static const uint8_t png_gray16[] = {0x81, 0x00, 0x00, 0x81, 0xfe, 0x00};
static const uint8_t png_gray_alpha[] = {100, 128, 0, 0, 7, 255};
static const uint8_t png_gray1[] = {0xa0, 0x40};	/* 1010 0000 01.. */
static const png_color png_pal[3] = {{10, 20, 30}, {200, 0, 100}, {0, 0, 0}};
static const uint8_t png_pal_trns[3] = {255, 128, 0};
static const uint8_t png_pal4[] = {0x01, 0x20};	/* indexes 0, 1, 2, 0 */

static const png_case png_cases[] = {
	/*
	 * 16-bit RGBA: compositing in 16 bits, one rounding at the end.
	 * G: (32768*32768 + 65535*32767) / 65535^2 * 255 = 191.25 -> 191;
	 * B: 65535*32767 / 65535^2 * 255 = 127.498 -> 127; opaque: 1000 -> 3.89
	 * -> 4, 60000 -> 233.46 -> 233, 30000 -> 116.73 -> 117
	 */
	{"16-bit RGBA", 3, 16, PNG_COLOR_TYPE_RGB_ALPHA, png_rgba16, sizeof(png_rgba16),
		NULL, 0, NULL, 0, 3,
		{{"16-bit RGBA over white", 0, {255, 191, 127}},
		 {"16-bit RGBA opaque", 1, {4, 233, 117}},
		 {"16-bit RGBA transparent", 2, {255, 255, 255}}}},
	/*
	 * 16-bit gray: rounding v * 255 / 65535, not truncation (v >> 8):
	 * 0x8100 -> 128.498 -> 128 (>> 8: 129), 0x0081 -> 1 (0), 0xfe00 -> 253 (254)
	 */
	{"16-bit gray", 3, 16, PNG_COLOR_TYPE_GRAY, png_gray16, sizeof(png_gray16),
		NULL, 0, NULL, 0, 3,
		{{"16-bit gray 0x8100", 0, {128, 128, 128}},
		 {"16-bit gray 0x0081", 1, {1, 1, 1}},
		 {"16-bit gray 0xfe00", 2, {253, 253, 253}}}},
	/* 8-bit gray+alpha: (100, a=128) -> (100*128 + 255*127 + 127) / 255 = 177 */
	{"gray+alpha", 3, 8, PNG_COLOR_TYPE_GRAY_ALPHA, png_gray_alpha, sizeof(png_gray_alpha),
		NULL, 0, NULL, 0, 3,
		{{"gray+alpha half", 0, {177, 177, 177}},
		 {"gray+alpha transparent black", 1, {255, 255, 255}},
		 {"gray+alpha opaque", 2, {7, 7, 7}}}},
	/* 1-bit gray: 0 -> 0, 1 -> 255; 10 pixels in 2 bytes */
	{"1-bit gray", 10, 1, PNG_COLOR_TYPE_GRAY, png_gray1, sizeof(png_gray1),
		NULL, 0, NULL, 0, 5,
		{{"1-bit gray 1", 0, {255, 255, 255}},
		 {"1-bit gray 0", 1, {0, 0, 0}},
		 {"1-bit gray 1 (3rd)", 2, {255, 255, 255}},
		 {"1-bit gray 1 (10th)", 9, {255, 255, 255}},
		 {"1-bit gray 0 (9th)", 8, {0, 0, 0}}}},
	/*
	 * 4-bit palette with tRNS: entry 1 half transparent, entry 2
	 * transparent; 200*128+255*127 = 57985 (+127) / 255 = 227; 0 -> 127;
	 * 100 -> 177
	 */
	{"palette+tRNS", 4, 4, PNG_COLOR_TYPE_PALETTE, png_pal4, sizeof(png_pal4),
		png_pal, 3, png_pal_trns, 3, 3,
		{{"palette opaque", 0, {10, 20, 30}},
		 {"palette half", 1, {227, 127, 177}},
		 {"palette transparent", 2, {255, 255, 255}}}},
};

/* PNG layouts the sets lack, with values worked out by hand. */
static void
test_synthetic_pngs(void)
{
	image_rgb  *img;
	membuf		b;

	for (size_t i = 0; i < sizeof(png_cases) / sizeof(png_cases[0]); i++)
	{
		const png_case *c = &png_cases[i];

		b = make_png(c->width, 1, c->depth, c->color, false, c->row, c->rowbytes,
					 c->palette, c->npalette, c->trns, c->ntrns);
		img = decode_ok(c->name, &b, c->width, 1);
		if (img != NULL)
			for (int k = 0; k < c->npix; k++)
				check_pixel(c->pix[k].what, img, c->pix[k].x, 0, c->pix[k].rgb[0],
							c->pix[k].rgb[1], c->pix[k].rgb[2]);
		image_destroy(&img);
		free(b.data);
	}
	/* Adam7 interlaced RGB, 11x9: every pixel in place */
	{
		uint8_t		rows[9 * 11 * 3];
		int			x,
					y;
		bool		same = true;

		for (y = 0; y < 9; y++)
			for (x = 0; x < 11; x++)
			{
				rows[(y * 11 + x) * 3] = (uint8_t) (x * 20);
				rows[(y * 11 + x) * 3 + 1] = (uint8_t) (y * 25);
				rows[(y * 11 + x) * 3 + 2] = (uint8_t) (x * y);
			}
		b = make_png(11, 9, 8, PNG_COLOR_TYPE_RGB, true, rows, 33, NULL, 0, NULL, 0);
		img = decode_ok("interlaced RGB", &b, 11, 9);
		if (img != NULL)
			same = memcmp(img->pixels, rows, sizeof(rows)) == 0;
		CHECK(img != NULL && same, "interlaced RGB: pixels differ");
		image_destroy(&img);

		/* the same PNG cut short, and with a damaged IDAT */
		{
			char		err[256] = "";
			image_status st;
			size_t		idat = 0,
						i;

			st = image_decode(b.data, b.len - 30, MAX_PIXELS, &img, err, sizeof(err));
			CHECK(st == IMAGE_ERR_TRUNCATED && img == NULL, "truncated PNG: %s (%s)",
				  image_status_name(st), err);
			for (i = 8; i + 4 < b.len; i++)
				if (memcmp(b.data + i, "IDAT", 4) == 0)
				{
					idat = i;
					break;
				}
			CHECK(idat > 0, "IDAT found");
			b.data[idat + 10] ^= 0x55;
			st = image_decode(b.data, b.len, MAX_PIXELS, &img, err, sizeof(err));
			CHECK(st == IMAGE_ERR_CORRUPT && img == NULL, "damaged PNG: %s (%s)",
				  image_status_name(st), err);
			CHECK(strstr(err, "CRC") != NULL || strstr(err, "corrupt") != NULL,
				  "damaged PNG message: %s", err);
		}
		free(b.data);
	}
}

/* Format sniffing messages: say what the bytes look like. */
static void
test_format_messages(void)
{
	static const struct
	{
		const char *bytes;
		size_t		len;
		const char *in_message;
	}			cases[] = {
		{"GIF89a\x01\0\x01\0", 10, "GIF"},
		{"\x00\x01\x02\x03\xfe", 5, "00 01 02 03 fe"},
		{"%PDF-1.7\n", 9, "PDF"},
		{"\xff\xd8", 2, "ff d8"},
		{"\x89PNG\r\n", 6, "not a JPEG or PNG"},
	};
	size_t		i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		image_rgb  *img = NULL;
		char		err[256] = "";
		image_status st = image_decode(cases[i].bytes, cases[i].len, MAX_PIXELS,
									   &img, err, sizeof(err));

		CHECK(st == IMAGE_ERR_FORMAT && img == NULL && strstr(err, cases[i].in_message),
			  "format case %zu: %s: %s", i, image_status_name(st), err);
	}
	/* err may be NULL, and a tiny buffer is truncated, not overrun */
	{
		image_rgb  *img = NULL;
		char		tiny[8];

		CHECK(image_decode("", 0, MAX_PIXELS, &img, NULL, 0) == IMAGE_ERR_FORMAT,
			  "NULL err buffer");
		CHECK(image_decode("", 0, MAX_PIXELS, &img, tiny, sizeof(tiny)) == IMAGE_ERR_FORMAT &&
			  strlen(tiny) == sizeof(tiny) - 1, "tiny err buffer");
	}
	CHECK(strcmp(image_status_name(IMAGE_ERR_TRUNCATED), "truncated") == 0 &&
		  strcmp(image_status_name(IMAGE_OK), "ok") == 0, "status names");
	{
		image_rgb  *img = image_new(5, 3);

		CHECK(img != NULL && img->width == 5 && img->height == 3 && img->pixels[44] == 0,
			  "image_new zeroed 5x3");
		image_destroy(&img);
		image_destroy(&img);	/* NULL is fine */
		CHECK(image_new(0, 3) == NULL && image_new(3, -1) == NULL, "image_new rejects bad sizes");
	}
}

typedef struct thread_job
{
	const uint8_t *data;
	size_t		len;
	uint64_t	sum;			/* checksum of the pixels, or status on error */
	int			rounds;
} thread_job;

/* Decodes the same bytes several times; keeps a checksum of the last image. */
static void *
thread_main(void *arg)
{
	thread_job *j = arg;
	int			r;

	for (r = 0; r < j->rounds; r++)
	{
		image_rgb  *img = NULL;
		char		err[256];
		image_status st = image_decode(j->data, j->len, MAX_PIXELS, &img, err, sizeof(err));
		uint64_t	s = 1000000 + (uint64_t) st;

		if (st == IMAGE_OK)
		{
			size_t		i;

			s = 0;
			for (i = 0; i < (size_t) img->width * img->height * 3; i++)
				s = s * 31 + img->pixels[i];
		}
		j->sum = s;
		image_destroy(&img);
	}
	return NULL;
}

/* Decoding from four threads at once gives what one thread gives. */
static void
test_threads(void)
{
	static const char *files[4] = {
		"ocr/p31_lift_notice_exif6.jpg", "ocr/p22_kjv_page.png",
		"ocr/bad/corrupt_middle.jpg", "ocr/p29_market_flyer_cmyk.jpg",
	};
	thread_job	solo[4],
				par[4];
	pthread_t	th[4];
	uint8_t    *bufs[4];
	int			i;

	for (i = 0; i < 4; i++)
	{
		char		path[1024];

		data_path(path, sizeof(path), files[i]);
		bufs[i] = tu_read_file(path, &solo[i].len);
		CHECK(bufs[i] != NULL, "read %s", path);
		if (bufs[i] == NULL)
			return;
		solo[i].data = bufs[i];
		solo[i].rounds = 1;
		thread_main(&solo[i]);
		par[i] = solo[i];
		par[i].rounds = 3;
		par[i].sum = 0;
	}
	for (i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, thread_main, &par[i]);
	for (i = 0; i < 4; i++)
	{
		pthread_join(th[i], NULL);
		CHECK(par[i].sum == solo[i].sum, "%s: threaded decode differs", files[i]);
		free(bufs[i]);
	}
}

/*
 * image_encode_png (the test row of MSG_LOAD_MODEL): a 5x3 image of
 * distinct pixels decodes back to the same pixels; a grey 224x224 one too;
 * an empty image is refused with a message.
 */
static void
test_encode_png(void)
{
	int			sizes[2][2] = {{5, 3}, {224, 224}};

	for (int k = 0; k < 2; k++)
	{
		int			w = sizes[k][0],
					h = sizes[k][1];
		image_rgb  *img = image_new(w, h);
		image_rgb  *back = NULL;
		uint8_t    *png = NULL;
		size_t		len = 0;
		char		err[256] = "";

		CHECK(img != NULL, "encode: image_new %dx%d", w, h);
		if (img == NULL)
			continue;
		for (size_t i = 0; i < (size_t) w * h * 3; i++)
			img->pixels[i] = k == 0 ? (uint8_t) (i * 7 + 3) : 128;
		CHECK(image_encode_png(img, &png, &len, err, sizeof(err)) == 0 && png != NULL && len > 8,
			  "encode %dx%d: %s", w, h, err);
		if (png != NULL)
		{
			CHECK(image_decode(png, len, MAX_PIXELS, &back, err, sizeof(err)) == IMAGE_OK,
				  "encode %dx%d: decode back: %s", w, h, err);
			CHECK(back != NULL && back->width == w && back->height == h &&
				  memcmp(back->pixels, img->pixels, (size_t) w * h * 3) == 0,
				  "encode %dx%d: the decoded pixels are the encoded ones", w, h);
		}
		image_destroy(&back);
		image_destroy(&img);
		free(png);
	}
	{
		image_rgb	empty = {0, 0, NULL};
		uint8_t    *png = (uint8_t *) "x";
		size_t		len = 1;
		char		err[256] = "";

		CHECK(image_encode_png(&empty, &png, &len, err, sizeof(err)) == -1 &&
			  png == NULL && len == 0 && err[0] != '\0',
			  "encode: an empty image is refused with a message (%s)", err);
	}
}

/* Runs every test; prints the tally; exit status 1 when any check failed. */
int
main(void)
{
	test_encode_png();
	test_reference_images();
	test_bad_inputs();
	test_pixel_limit();
	test_exif_orientations();
	test_unsupported_jpegs();
	test_gray_jpeg();
	test_synthetic_pngs();
	test_format_messages();
	test_threads();
	return tu_report("test_image");
}
