/*
 * image.c
 *	  Image decoding for infer-worker: JPEG (libjpeg-turbo) and PNG (libpng)
 *	  bytes into 8-bit interleaved RGB, alpha composited onto white, the EXIF
 *	  orientation of JPEGs applied (libexif).  See image.h for the contract.
 *
 * Threading: nothing static is written; every call keeps its decoder state
 * in a context of its own, so any number of threads may decode at once.
 *
 * Errors: both libraries report fatal errors by longjmp.  Each decoder does
 * its setjmp in a function whose state lives behind a pointer to a context
 * owned by the caller (so nothing it changes after setjmp is an
 * indeterminate local), and the caller frees everything on one path.
 * libjpeg only warns about truncated or damaged entropy-coded data and
 * goes on with grey filler; those warnings are turned into errors here, so
 * a damaged image is never returned as if it were whole.
 *
 * Pixel parity with Pillow (the Python reference pipeline): CMYK follows
 * Pillow's conversion exactly (R = (255 - K) - (C * (255 - K)) / 255 with its
 * rounding), EXIF orientations match ImageOps.exif_transpose; 16-bit samples
 * are rounded (v * 255 / 65535), where Pillow's own I;16 -> L conversion
 * clips instead.
 */
#include "worker/image.h"

#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <jerror.h>
#include <libexif/exif-data.h>
#include <png.h>

/* ---------------------------------------------------------------- common */

/* Formats a message into err (when err is not NULL) and returns st. */
static image_status
set_error(char *err, size_t errlen, image_status st, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static image_status
set_error(char *err, size_t errlen, image_status st, const char *fmt, ...)
{
	va_list		ap;

	if (err != NULL && errlen > 0)
	{
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return st;
}

/* New zeroed width x height RGB image; NULL when a side is < 1, the byte
 * count does not fit in size_t or int, or memory runs out. */
image_rgb *
image_new(int width, int height)
{
	image_rgb  *img;

	if (width < 1 || height < 1 || (size_t) width > SIZE_MAX / 3 / (size_t) height)
		return NULL;
	img = calloc(1, sizeof(*img));
	if (img == NULL)
		return NULL;
	img->pixels = calloc((size_t) width * (size_t) height, 3);
	if (img->pixels == NULL)
	{
		free(img);
		return NULL;
	}
	img->width = width;
	img->height = height;
	return img;
}

/* Frees *img and its pixels, then sets *img to NULL; NULL pointers are fine. */
void
image_destroy(image_rgb **img)
{
	if (img == NULL || *img == NULL)
		return;
	free((*img)->pixels);
	free(*img);
	*img = NULL;
}

/* Short, constant name of st, for log lines and per-row errors. */
const char *
image_status_name(image_status st)
{
	switch (st)
	{
		case IMAGE_OK:
			return "ok";
		case IMAGE_ERR_FORMAT:
			return "not an image";
		case IMAGE_ERR_TRUNCATED:
			return "truncated";
		case IMAGE_ERR_CORRUPT:
			return "corrupt";
		case IMAGE_ERR_TOO_LARGE:
			return "too large";
		case IMAGE_ERR_NOMEM:
			return "out of memory";
		case IMAGE_ERR_UNSUPPORTED:
			return "unsupported kind of image";
	}
	return "unknown status";
}

/*
 * Checks width x height (as declared by a header named what) against
 * max_pixels (<= 0: no limit of the caller's) and against the built-in bound
 * 3 * width * height <= INT_MAX, so that no consumer's int arithmetic on the
 * pixel buffer can overflow.  Returns IMAGE_OK, or IMAGE_ERR_TOO_LARGE with a
 * message naming the size and the limit (IMAGE_ERR_CORRUPT for 0 sides).
 */
static image_status
check_size(const char *what, uint64_t width, uint64_t height, int64_t max_pixels,
		   char *err, size_t errlen)
{
	uint64_t	pixels = width * height;	/* both < 2^32: cannot overflow */

	if (width == 0 || height == 0)
		return set_error(err, errlen, IMAGE_ERR_CORRUPT,
						 "%s declares an empty image (%llux%llu pixels)", what,
						 (unsigned long long) width, (unsigned long long) height);
	if (max_pixels > 0 && pixels > (uint64_t) max_pixels)
		return set_error(err, errlen, IMAGE_ERR_TOO_LARGE,
						 "%s declares %llux%llu pixels (%llu), over the limit of %lld pixels",
						 what, (unsigned long long) width, (unsigned long long) height,
						 (unsigned long long) pixels, (long long) max_pixels);
	if (pixels > INT_MAX / 3)
		return set_error(err, errlen, IMAGE_ERR_TOO_LARGE,
						 "%s declares %llux%llu pixels (%llu), over the decoder's limit of %d pixels",
						 what, (unsigned long long) width, (unsigned long long) height,
						 (unsigned long long) pixels, INT_MAX / 3);
	return IMAGE_OK;
}

/* c (8-bit) under alpha a (8-bit) composited onto white, rounded. */
static inline uint8_t
over_white8(unsigned c, unsigned a)
{
	return (uint8_t) ((c * a + 255 * (255 - a) + 127) / 255);
}

/* A 16-bit sample scaled to 8 bits, rounded: v * 255 / 65535. */
static inline uint8_t
scale16(unsigned v)
{
	return (uint8_t) ((v * 255u + 32767u) / 65535u);
}

/* c (16-bit) under alpha a (16-bit) composited onto white in 16-bit
 * precision, then scaled to 8 bits with one rounding. */
static inline uint8_t
over_white16(uint64_t c, uint64_t a)
{
	const uint64_t den = 65535ull * 65535ull;
	uint64_t	num = (c * a + 65535ull * (65535ull - a)) * 255ull;

	return (uint8_t) ((num + den / 2) / den);
}

/* ------------------------------------------------------------ sniffing */

/*
 * Describes the first bytes of data that is neither JPEG nor PNG into err:
 * the bytes themselves (as text when they are printable, hex otherwise) and
 * the format they look like when it is a common one.
 */
static image_status
describe_unknown(const uint8_t *p, size_t len, char *err, size_t errlen)
{
	char		shown[64];
	size_t		n = len < 8 ? len : 8;
	size_t		i,
				o = 0;
	bool		text = true;
	const char *kind = NULL;

	if (len == 0)
		return set_error(err, errlen, IMAGE_ERR_FORMAT, "empty input (0 bytes)");
	for (i = 0; i < n; i++)
		if (p[i] < 0x20 ? (p[i] != '\n' && p[i] != '\r' && p[i] != '\t') : p[i] > 0x7e)
			text = false;
	if (text)
	{
		shown[o++] = '"';
		for (i = 0; i < n; i++)
		{
			if (p[i] == '\n' || p[i] == '\r' || p[i] == '\t')
			{
				shown[o++] = '\\';
				shown[o++] = p[i] == '\n' ? 'n' : p[i] == '\r' ? 'r' : 't';
			}
			else
				shown[o++] = (char) p[i];
		}
		shown[o++] = '"';
		shown[o] = '\0';
	}
	else
	{
		for (i = 0; i < n; i++)
			o += (size_t) snprintf(shown + o, sizeof(shown) - o, "%s%02x",
								   i ? " " : "", p[i]);
	}
	if (len >= 4 && memcmp(p, "GIF8", 4) == 0)
		kind = "a GIF image";
	else if (len >= 12 && memcmp(p, "RIFF", 4) == 0 && memcmp(p + 8, "WEBP", 4) == 0)
		kind = "a WebP image";
	else if (len >= 4 && (memcmp(p, "II*\0", 4) == 0 || memcmp(p, "MM\0*", 4) == 0))
		kind = "a TIFF image";
	else if (len >= 2 && memcmp(p, "BM", 2) == 0)
		kind = "perhaps a BMP image";
	else if (len >= 5 && memcmp(p, "%PDF-", 5) == 0)
		kind = "a PDF document";
	else if (len >= 2 && p[0] == 0xff && p[1] == 0xd8)
		kind = "a JPEG start marker without a following marker";
	else if (text)
		kind = "text";
	if (kind != NULL)
		return set_error(err, errlen, IMAGE_ERR_FORMAT,
						 "not a JPEG or PNG (starts with %s, %s; %zu bytes)",
						 shown, kind, len);
	return set_error(err, errlen, IMAGE_ERR_FORMAT,
					 "not a JPEG or PNG (starts with %s; %zu bytes)", shown, len);
}

/* ----------------------------------------------------------------- PNG */

typedef struct png_ctx
{
	const uint8_t *data;
	size_t		len;
	size_t		pos;
	int64_t		max_pixels;
	image_status st;			/* set before any longjmp */
	char	   *err;
	size_t		errlen;
	png_structp png;
	png_infop	info;
	uint8_t    *rows;			/* one decoded row, or all when interlaced */
	png_bytep  *rowp;			/* row pointers when interlaced */
	image_rgb  *img;
} png_ctx;

/* libpng error callback: keeps the first message, then jumps back to
 * png_run (must not return). */
static void
png_on_error(png_structp png, png_const_charp msg)
{
	png_ctx    *c = png_get_error_ptr(png);

	if (c->st == IMAGE_OK)
	{
		bool		nomem = strstr(msg, "memory") != NULL;

		c->st = nomem ? IMAGE_ERR_NOMEM : IMAGE_ERR_CORRUPT;
		set_error(c->err, c->errlen, c->st, "%s PNG data (row %u): %s",
				  nomem ? "out of memory decoding" : "corrupt",
				  png_get_current_row_number(png), msg);
	}
	png_longjmp(png, 1);
}

/* libpng warning callback: warnings (bad ancillary chunks) are ignored. */
static void
png_on_warning(png_structp png, png_const_charp msg)
{
	(void) png;
	(void) msg;
}

/* libpng read callback over the input bytes; running out is truncation. */
static void
png_read_mem(png_structp png, png_bytep out, size_t n)
{
	png_ctx    *c = png_get_io_ptr(png);

	if (n > c->len - c->pos)
	{
		png_uint_32 height = png_get_image_height(png, c->info);

		c->st = IMAGE_ERR_TRUNCATED;
		if (height == 0)
			set_error(c->err, c->errlen, c->st,
					  "PNG data is truncated: it ends after %zu bytes, in the header",
					  c->len);
		else
			set_error(c->err, c->errlen, c->st,
					  "PNG data is truncated: it ends after %zu bytes, at row %u of %u",
					  c->len, png_get_current_row_number(png), height);
		png_error(png, "truncated");
	}
	memcpy(out, c->data + c->pos, n);
	c->pos += n;
}

/*
 * One decoded PNG row (after png_set_expand: gray, gray+alpha, RGB or RGBA,
 * 8 or 16 bits big-endian) into width RGB pixels at dst, alpha over white.
 */
static void
png_row_to_rgb(const uint8_t *s, int channels, int depth, int width, uint8_t *dst)
{
	int			x;

	if (depth == 8)
	{
		for (x = 0; x < width; x++, dst += 3, s += channels)
		{
			switch (channels)
			{
				case 1:
					dst[0] = dst[1] = dst[2] = s[0];
					break;
				case 2:
					dst[0] = dst[1] = dst[2] = over_white8(s[0], s[1]);
					break;
				case 3:
					dst[0] = s[0];
					dst[1] = s[1];
					dst[2] = s[2];
					break;
				default:
					dst[0] = over_white8(s[0], s[3]);
					dst[1] = over_white8(s[1], s[3]);
					dst[2] = over_white8(s[2], s[3]);
					break;
			}
		}
		return;
	}
	for (x = 0; x < width; x++, dst += 3, s += 2 * channels)
	{
		unsigned	v0 = (unsigned) s[0] << 8 | s[1];

		switch (channels)
		{
			case 1:
				dst[0] = dst[1] = dst[2] = scale16(v0);
				break;
			case 2:
				dst[0] = dst[1] = dst[2] =
					over_white16(v0, (unsigned) s[2] << 8 | s[3]);
				break;
			case 3:
				dst[0] = scale16(v0);
				dst[1] = scale16((unsigned) s[2] << 8 | s[3]);
				dst[2] = scale16((unsigned) s[4] << 8 | s[5]);
				break;
			default:
				{
					unsigned	a = (unsigned) s[6] << 8 | s[7];

					dst[0] = over_white16(v0, a);
					dst[1] = over_white16((unsigned) s[2] << 8 | s[3], a);
					dst[2] = over_white16((unsigned) s[4] << 8 | s[5], a);
					break;
				}
		}
	}
}

/* Decodes c->data into c->img; on error returns the status after libpng's
 * longjmp (c->st, message in c->err).  The caller frees c's resources. */
static image_status
png_run(png_ctx *c)
{
	png_uint_32 width,
				height,
				y;
	int			depth,
				color,
				channels,
				passes;
	size_t		rowbytes;
	image_status st;

	if (setjmp(png_jmpbuf(c->png)))
		return c->st;

	png_set_read_fn(c->png, c, png_read_mem);
	/* our own size limit decides, not libpng's default 1e6 x 1e6 */
	png_set_user_limits(c->png, 0x7fffffff, 0x7fffffff);
	png_read_info(c->png, c->info);
	png_get_IHDR(c->png, c->info, &width, &height, &depth, &color, NULL, NULL, NULL);
	st = check_size("PNG", width, height, c->max_pixels, c->err, c->errlen);
	if (st != IMAGE_OK)
		return st;

	/* palette -> RGB, gray < 8 bits -> 8, tRNS -> alpha; 16 bits kept */
	png_set_expand(c->png);
	passes = png_set_interlace_handling(c->png);
	png_read_update_info(c->png, c->info);
	channels = png_get_channels(c->png, c->info);
	depth = png_get_bit_depth(c->png, c->info);
	rowbytes = png_get_rowbytes(c->png, c->info);
	if (channels < 1 || channels > 4 || (depth != 8 && depth != 16) ||
		rowbytes < (size_t) width * (size_t) channels * (size_t) (depth / 8))
		return set_error(c->err, c->errlen, IMAGE_ERR_UNSUPPORTED,
						 "unsupported PNG layout after expansion (%d channels of %d bits)",
						 channels, depth);

	c->img = image_new((int) width, (int) height);
	if (c->img == NULL)
		return set_error(c->err, c->errlen, IMAGE_ERR_NOMEM,
						 "out of memory for a %ux%u image", width, height);
	if (passes == 1)
	{
		c->rows = malloc(rowbytes);
		if (c->rows == NULL)
			return set_error(c->err, c->errlen, IMAGE_ERR_NOMEM,
							 "out of memory for a PNG row of %zu bytes", rowbytes);
		for (y = 0; y < height; y++)
		{
			png_read_row(c->png, c->rows, NULL);
			png_row_to_rgb(c->rows, channels, depth, (int) width,
						   c->img->pixels + (size_t) y * width * 3);
		}
	}
	else
	{
		/* Adam7 fills rows pass by pass: keep the whole image */
		if (rowbytes > SIZE_MAX / height)
			return set_error(c->err, c->errlen, IMAGE_ERR_TOO_LARGE,
							 "interlaced PNG of %ux%u is too large to buffer",
							 width, height);
		c->rows = malloc(rowbytes * height);
		c->rowp = malloc(sizeof(png_bytep) * height);
		if (c->rows == NULL || c->rowp == NULL)
			return set_error(c->err, c->errlen, IMAGE_ERR_NOMEM,
							 "out of memory for an interlaced PNG of %ux%u",
							 width, height);
		for (y = 0; y < height; y++)
			c->rowp[y] = c->rows + (size_t) y * rowbytes;
		png_read_image(c->png, c->rowp);
		for (y = 0; y < height; y++)
			png_row_to_rgb(c->rowp[y], channels, depth, (int) width,
						   c->img->pixels + (size_t) y * width * 3);
	}
	/* The chunks after the pixel data are not read: the image is whole. */
	return IMAGE_OK;
}

/* Decodes PNG bytes; see image_decode. */
static image_status
png_decode(const uint8_t *data, size_t len, int64_t max_pixels,
		   image_rgb **out, char *err, size_t errlen)
{
	png_ctx		c;
	image_status st;

	memset(&c, 0, sizeof(c));
	c.data = data;
	c.len = len;
	c.max_pixels = max_pixels;
	c.err = err;
	c.errlen = errlen;
	c.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &c, png_on_error,
								   png_on_warning);
	if (c.png == NULL)
		return set_error(err, errlen, IMAGE_ERR_NOMEM, "out of memory creating a PNG decoder");
	c.info = png_create_info_struct(c.png);
	if (c.info == NULL)
	{
		st = set_error(err, errlen, IMAGE_ERR_NOMEM, "out of memory creating a PNG decoder");
		goto fail;
	}
	st = png_run(&c);
	if (st != IMAGE_OK)
		goto fail;
	png_destroy_read_struct(&c.png, &c.info, NULL);
	free(c.rows);
	free(c.rowp);
	*out = c.img;
	return IMAGE_OK;

fail:
	png_destroy_read_struct(&c.png, c.info ? &c.info : NULL, NULL);
	free(c.rows);
	free(c.rowp);
	image_destroy(&c.img);
	return st;
}

/* ---------------------------------------------------------------- JPEG */

enum jpeg_phase
{
	JPHASE_HEADER,				/* markers, tables, (progressive) scans */
	JPHASE_SCANLINES,			/* rows being produced */
	JPHASE_FINISH				/* every row out; reading up to EOI */
};

typedef struct jpeg_ctx
{
	struct jpeg_decompress_struct cinfo;
	struct jpeg_error_mgr jerr;
	jmp_buf		jump;
	enum jpeg_phase phase;
	bool		created;
	image_status st;			/* set before any longjmp */
	char	   *err;
	size_t		errlen;
	size_t		len;
	uint8_t    *row;			/* one gray or CMYK output row */
	image_rgb  *img;
	int			orientation;	/* EXIF Orientation, 1..8 */
} jpeg_ctx;

/* Whether a libjpeg error code means "valid but unsupported" rather than
 * damaged data. */
static bool
jpeg_code_unsupported(int code)
{
	return code == JERR_BAD_PRECISION || code == JERR_NOT_COMPILED ||
		code == JERR_SOF_UNSUPPORTED ||
		code == JERR_ARITH_NOTIMPL || code == JERR_NOTIMPL ||
		code == JERR_CONVERSION_NOTIMPL || code == JERR_CCIR601_NOTIMPL;
}

/* libjpeg error_exit: records status and message, jumps back to jpeg_run. */
static void
jpeg_on_error(j_common_ptr cinfo)
{
	jpeg_ctx   *c = cinfo->client_data;
	char		msg[JMSG_LENGTH_MAX];
	int			code = cinfo->err->msg_code;

	cinfo->err->format_message(cinfo, msg);
	if (code == JERR_OUT_OF_MEMORY)
		c->st = set_error(c->err, c->errlen, IMAGE_ERR_NOMEM,
						  "out of memory decoding JPEG: %s", msg);
	else if (jpeg_code_unsupported(code))
		c->st = set_error(c->err, c->errlen, IMAGE_ERR_UNSUPPORTED,
						  "unsupported JPEG: %s", msg);
	else if (code == JERR_IMAGE_TOO_BIG)
		/* a side over JPEG_MAX_DIMENSION, refused from the header */
		c->st = set_error(c->err, c->errlen, IMAGE_ERR_TOO_LARGE,
						  "JPEG declares a side over libjpeg's limit: %s", msg);
	else
		c->st = set_error(c->err, c->errlen, IMAGE_ERR_CORRUPT,
						  "corrupt JPEG data (%zu bytes): %s", c->len, msg);
	longjmp(c->jump, 1);
}

/*
 * libjpeg emit_message: trace messages (level >= 0) are dropped.  Warnings
 * (level -1) about missing or damaged data before the last row is out are
 * errors: premature end -> IMAGE_ERR_TRUNCATED, damaged entropy data ->
 * IMAGE_ERR_CORRUPT.  Warnings that leave the pixels intact (unknown JFIF
 * revision or Adobe transform, bad ICC marker, anything after the last
 * row, such as a missing EOI) are ignored.
 */
static void
jpeg_on_message(j_common_ptr cinfo, int level)
{
	jpeg_ctx   *c = cinfo->client_data;
	struct jpeg_decompress_struct *d = &c->cinfo;
	char		msg[JMSG_LENGTH_MAX];
	int			code = cinfo->err->msg_code;

	if (level >= 0)
		return;
	cinfo->err->num_warnings++;
	if (c->phase == JPHASE_FINISH || code == JWRN_JFIF_MAJOR ||
		code == JWRN_ADOBE_XFORM || code == JWRN_BOGUS_ICC ||
		code == JWRN_TOO_MUCH_DATA)
		return;
	cinfo->err->format_message(cinfo, msg);
	if (code == JWRN_JPEG_EOF)
	{
		if (c->phase == JPHASE_SCANLINES)
			c->st = set_error(c->err, c->errlen, IMAGE_ERR_TRUNCATED,
							  "JPEG data is truncated: it ends after %zu bytes, at row %u of %u",
							  c->len, d->output_scanline, d->output_height);
		else
			c->st = set_error(c->err, c->errlen, IMAGE_ERR_TRUNCATED,
							  "JPEG data is truncated: it ends after %zu bytes, before the image data is complete",
							  c->len);
	}
	else
		c->st = set_error(c->err, c->errlen, IMAGE_ERR_CORRUPT,
						  "corrupt JPEG data at row %u of %u: %s",
						  d->output_scanline, d->output_height, msg);
	longjmp(c->jump, 1);
}

/* libjpeg output_message: never print to stderr. */
static void
jpeg_on_output(j_common_ptr cinfo)
{
	(void) cinfo;
}

/*
 * The Orientation tag (1..8) of IFD0 in the first APP1 "Exif" marker that
 * libjpeg saved, read with libexif; 1 when there is none or it is invalid.
 */
static int
jpeg_exif_orientation(const struct jpeg_decompress_struct *cinfo)
{
	jpeg_saved_marker_ptr m;

	for (m = cinfo->marker_list; m != NULL; m = m->next)
	{
		ExifData   *ed;
		ExifEntry  *e;
		int			o = 1;

		if (m->marker != JPEG_APP0 + 1 || m->data_length < 14 ||
			memcmp(m->data, "Exif\0\0", 6) != 0)
			continue;
		ed = exif_data_new();
		if (ed == NULL)
			return 1;
		/* read the tags as stored: no "fixing" of missing mandatory tags */
		exif_data_unset_option(ed, EXIF_DATA_OPTION_FOLLOW_SPECIFICATION);
		exif_data_load_data(ed, m->data, m->data_length);
		e = exif_content_get_entry(ed->ifd[EXIF_IFD_0], EXIF_TAG_ORIENTATION);
		/* SHORT by the standard; LONG in some writers' files (Pillow reads it) */
		if (e != NULL && e->format == EXIF_FORMAT_SHORT && e->components >= 1 &&
			e->data != NULL && e->size >= 2)
			o = exif_get_short(e->data, exif_data_get_byte_order(ed));
		else if (e != NULL && e->format == EXIF_FORMAT_LONG && e->components >= 1 &&
				 e->data != NULL && e->size >= 4)
		{
			ExifLong	l = exif_get_long(e->data, exif_data_get_byte_order(ed));

			o = l <= 8 ? (int) l : 0;
		}
		exif_data_unref(ed);
		return (o >= 1 && o <= 8) ? o : 1;
	}
	return 1;
}

/*
 * One CMYK row as libjpeg gives it (Adobe files store inverted values) into
 * RGB, as Pillow does: C = 255 - raw when inverted, nk = 255 - K,
 * R = nk - C * nk / 255 with Pillow's MULDIV255 rounding ((t >> 8) + t) >> 8,
 * t = C * nk + 128.
 */
static void
cmyk_row_to_rgb(const uint8_t *s, bool inverted, int width, uint8_t *dst)
{
	int			x,
				i;

	for (x = 0; x < width; x++, s += 4, dst += 3)
	{
		unsigned	nk = inverted ? s[3] : 255u - s[3];

		for (i = 0; i < 3; i++)
		{
			unsigned	cc = inverted ? 255u - s[i] : s[i];
			unsigned	t = cc * nk + 128;

			dst[i] = (uint8_t) (nk - (((t >> 8) + t) >> 8));
		}
	}
}

/* Decodes JPEG bytes into c->img (stored orientation) and c->orientation;
 * on error returns the status set before libjpeg's longjmp. */
static image_status
jpeg_run(jpeg_ctx *c, const uint8_t *data, size_t len, int64_t max_pixels)
{
	struct jpeg_decompress_struct *d = &c->cinfo;
	image_status st;
	bool		cmyk;

	if (setjmp(c->jump))
		return c->st;

	c->created = true;
	jpeg_create_decompress(d);
	jpeg_mem_src(d, data, (unsigned long) len);
	jpeg_save_markers(d, JPEG_APP0 + 1, 0xffff);
	jpeg_read_header(d, TRUE);
	st = check_size("JPEG", d->image_width, d->image_height, max_pixels,
					c->err, c->errlen);
	if (st != IMAGE_OK)
		return st;
	c->orientation = jpeg_exif_orientation(d);

	cmyk = d->jpeg_color_space == JCS_CMYK || d->jpeg_color_space == JCS_YCCK;
	if (cmyk)
		d->out_color_space = JCS_CMYK;
	else if (d->jpeg_color_space == JCS_GRAYSCALE)
		d->out_color_space = JCS_GRAYSCALE;
	else
		d->out_color_space = JCS_RGB;
	jpeg_start_decompress(d);
	if (d->output_components != (cmyk ? 4 : d->out_color_space == JCS_RGB ? 3 : 1))
		return set_error(c->err, c->errlen, IMAGE_ERR_UNSUPPORTED,
						 "unsupported JPEG: %d output components",
						 d->output_components);

	c->img = image_new((int) d->output_width, (int) d->output_height);
	if (c->img == NULL)
		return set_error(c->err, c->errlen, IMAGE_ERR_NOMEM,
						 "out of memory for a %ux%u image",
						 d->output_width, d->output_height);
	if (d->output_components != 3)
	{
		c->row = malloc((size_t) d->output_width * (size_t) d->output_components);
		if (c->row == NULL)
			return set_error(c->err, c->errlen, IMAGE_ERR_NOMEM,
							 "out of memory for a JPEG row");
	}

	c->phase = JPHASE_SCANLINES;
	while (d->output_scanline < d->output_height)
	{
		uint8_t    *dst = c->img->pixels +
			(size_t) d->output_scanline * d->output_width * 3;
		JSAMPROW	rowp = c->row != NULL ? c->row : dst;
		unsigned	x;

		if (jpeg_read_scanlines(d, &rowp, 1) != 1)
			return set_error(c->err, c->errlen, IMAGE_ERR_CORRUPT,
							 "JPEG decoder returned no data at row %u",
							 d->output_scanline);
		if (d->output_components == 1)
			for (x = 0; x < d->output_width; x++)
				dst[3 * x] = dst[3 * x + 1] = dst[3 * x + 2] = c->row[x];
		else if (d->output_components == 4)
			cmyk_row_to_rgb(c->row, d->saw_Adobe_marker, (int) d->output_width, dst);
	}
	c->phase = JPHASE_FINISH;
	jpeg_finish_decompress(d);
	return IMAGE_OK;
}

/*
 * src turned as EXIF orientation o (1..8) asks, so that it displays upright
 * (the transposes of Pillow's ImageOps.exif_transpose).  Returns a new image,
 * or NULL when out of memory; o == 1 is not handled here.
 */
static image_rgb *
apply_orientation(const image_rgb *src, int o)
{
	int			sw = src->width,
				sh = src->height;
	bool		swap = o >= 5;
	image_rgb  *dst = swap ? image_new(sh, sw) : image_new(sw, sh);
	int			x,
				y;

	if (dst == NULL)
		return NULL;
	for (y = 0; y < dst->height; y++)
	{
		uint8_t    *out = dst->pixels + (size_t) y * dst->width * 3;

		for (x = 0; x < dst->width; x++, out += 3)
		{
			int			sx,
						sy;
			const uint8_t *in;

			switch (o)
			{
				case 2:			/* mirrored left-right */
					sx = sw - 1 - x, sy = y;
					break;
				case 3:			/* turned 180 degrees */
					sx = sw - 1 - x, sy = sh - 1 - y;
					break;
				case 4:			/* mirrored top-bottom */
					sx = x, sy = sh - 1 - y;
					break;
				case 5:			/* transposed */
					sx = y, sy = x;
					break;
				case 6:			/* stored 90 degrees counter-clockwise */
					sx = y, sy = sh - 1 - x;
					break;
				case 7:			/* transversed */
					sx = sw - 1 - y, sy = sh - 1 - x;
					break;
				case 8:			/* stored 90 degrees clockwise */
					sx = sw - 1 - y, sy = x;
					break;
				default:
					sx = x, sy = y;
					break;
			}
			in = src->pixels + ((size_t) sy * sw + sx) * 3;
			out[0] = in[0];
			out[1] = in[1];
			out[2] = in[2];
		}
	}
	return dst;
}

/* Decodes JPEG bytes and applies their EXIF orientation; see image_decode. */
static image_status
jpeg_decode(const uint8_t *data, size_t len, int64_t max_pixels,
			image_rgb **out, char *err, size_t errlen)
{
	jpeg_ctx   *c;
	image_status st;

	/* jmp_buf and the decoder state are large: keep them off the stack */
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return set_error(err, errlen, IMAGE_ERR_NOMEM, "out of memory creating a JPEG decoder");
	c->err = err;
	c->errlen = errlen;
	c->len = len;
	c->orientation = 1;
	c->cinfo.err = jpeg_std_error(&c->jerr);
	c->jerr.error_exit = jpeg_on_error;
	c->jerr.emit_message = jpeg_on_message;
	c->jerr.output_message = jpeg_on_output;
	c->cinfo.client_data = c;

	st = jpeg_run(c, data, len, max_pixels);
	if (st != IMAGE_OK)
		goto fail;
	if (c->orientation != 1)
	{
		image_rgb  *turned = apply_orientation(c->img, c->orientation);

		if (turned == NULL)
		{
			st = set_error(err, errlen, IMAGE_ERR_NOMEM,
						   "out of memory applying EXIF orientation %d", c->orientation);
			goto fail;
		}
		image_destroy(&c->img);
		c->img = turned;
	}
	jpeg_destroy_decompress(&c->cinfo);
	free(c->row);
	*out = c->img;
	free(c);
	return IMAGE_OK;

fail:
	if (c->created)
		jpeg_destroy_decompress(&c->cinfo);
	free(c->row);
	image_destroy(&c->img);
	free(c);
	return st;
}

/* ---------------------------------------------------------------- entry */

/* Decodes bytes[0..len) (JPEG or PNG, told by the signature) into a new RGB
 * image; see image.h for the contract. */
image_status
image_decode(const void *bytes, size_t len, int64_t max_pixels,
			 image_rgb **out, char *err, size_t errlen)
{
	static const uint8_t png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
	const uint8_t *p = bytes;

	if (err != NULL && errlen > 0)
		err[0] = '\0';
	*out = NULL;
	if (len > 0 && p == NULL)
		return set_error(err, errlen, IMAGE_ERR_FORMAT, "no input bytes (NULL pointer)");
	if (len >= 3 && p[0] == 0xff && p[1] == 0xd8 && p[2] == 0xff)
		return jpeg_decode(p, len, max_pixels, out, err, errlen);
	if (len >= 8 && memcmp(p, png_sig, 8) == 0)
		return png_decode(p, len, max_pixels, out, err, errlen);
	return describe_unknown(p, len, err, errlen);
}

/* ---------------------------------------------------------- PNG encoding */

typedef struct png_sink
{
	uint8_t    *data;			/* owned until handed to the caller */
	size_t		len;
	size_t		cap;
	png_bytep  *rows;			/* row pointers into the image, owned */
	png_structp png;
	png_infop	info;
	char		msg[200];		/* libpng's error message */
} png_sink;

/* libpng's write callback: appends to the sink, longjmp on no memory. */
static void
png_sink_write(png_structp png, png_bytep data, size_t n)
{
	png_sink   *k = png_get_io_ptr(png);

	if (k->len + n > k->cap)
	{
		size_t		cap = k->cap ? k->cap : 1024;
		uint8_t    *grown;

		while (cap < k->len + n)
			cap *= 2;
		grown = realloc(k->data, cap);
		if (grown == NULL)
			png_error(png, "out of memory encoding a PNG");
		k->data = grown;
		k->cap = cap;
	}
	memcpy(k->data + k->len, data, n);
	k->len += n;
}

/* libpng's flush callback: nothing to flush in memory. */
static void
png_sink_flush(png_structp png)
{
	(void) png;
}

/* libpng's error callback: keeps the message and unwinds to the setjmp. */
static void
png_sink_error(png_structp png, png_const_charp msg)
{
	png_sink   *k = png_get_error_ptr(png);

	snprintf(k->msg, sizeof(k->msg), "%s", msg);
	png_longjmp(png, 1);
}

/* The setjmp part of image_encode_png: its state lives in *k. */
static int
png_sink_encode(png_sink *k, const image_rgb *img)
{
	if (setjmp(png_jmpbuf(k->png)))
		return -1;
	png_set_write_fn(k->png, k, png_sink_write, png_sink_flush);
	png_set_IHDR(k->png, k->info, (png_uint_32) img->width, (png_uint_32) img->height,
				 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
				 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
	png_set_rows(k->png, k->info, k->rows);
	png_write_png(k->png, k->info, PNG_TRANSFORM_IDENTITY, NULL);
	return 0;
}

/* Encodes img as an RGB PNG; see image.h. */
int
image_encode_png(const image_rgb *img, uint8_t **out, size_t *len,
				 char *err, size_t errlen)
{
	png_sink   *k = calloc(1, sizeof(*k));
	int			rc = -1;

	*out = NULL;
	*len = 0;
	if (k == NULL || img == NULL || img->width < 1 || img->height < 1)
	{
		(void) set_error(err, errlen, IMAGE_ERR_NOMEM, "%s", k == NULL ? "out of memory encoding a PNG" :
						 "no image to encode as a PNG");
		goto done;
	}
	k->rows = calloc((size_t) img->height, sizeof(*k->rows));
	k->png = png_create_write_struct(PNG_LIBPNG_VER_STRING, k, png_sink_error, NULL);
	k->info = k->png != NULL ? png_create_info_struct(k->png) : NULL;
	if (k->rows == NULL || k->png == NULL || k->info == NULL)
	{
		(void) set_error(err, errlen, IMAGE_ERR_NOMEM, "out of memory encoding a PNG");
		goto done;
	}
	for (int y = 0; y < img->height; y++)
		k->rows[y] = img->pixels + (size_t) y * (size_t) img->width * 3;
	if (png_sink_encode(k, img) != 0)
	{
		(void) set_error(err, errlen, IMAGE_ERR_CORRUPT, "could not encode a PNG: %s", k->msg);
		goto done;
	}
	*out = k->data;
	*len = k->len;
	k->data = NULL;
	rc = 0;

done:
	if (k != NULL)
	{
		if (k->png != NULL)
			png_destroy_write_struct(&k->png, k->info != NULL ? &k->info : NULL);
		free(k->rows);
		free(k->data);
		free(k);
	}
	return rc;
}
