/*
 * image.h
 *	  Image decoding for infer-worker: JPEG (libjpeg-turbo) and PNG (libpng)
 *	  bytes into 8-bit RGB pixels.
 *
 * Every supported input ends as interleaved RGB, 8 bits a channel, rows top
 * to bottom, no padding between rows (stride = 3 * width):
 *	- grayscale, gray+alpha, RGB, RGBA, palette (with tRNS), 1/2/4/8/16-bit
 *	  PNG; 16-bit samples are scaled to 8 bits by rounding (v * 255 / 65535);
 *	- alpha is composited onto white (what a viewer shows);
 *	- JPEG: grayscale, YCbCr, and CMYK/YCCK (Adobe APP14 inverted CMYK
 *	  handled) converted to RGB;
 *	- the EXIF Orientation tag (1-8) of a JPEG is applied (libexif), so the
 *	  pixels come out as the image displays.
 *
 * Decoding is thread-safe: no state is kept between calls.
 */
#ifndef INFER_IMAGE_H
#define INFER_IMAGE_H

#include <stddef.h>
#include <stdint.h>

typedef enum image_status
{
	IMAGE_OK = 0,
	IMAGE_ERR_FORMAT,			/* not a JPEG or PNG (empty, text, ...) */
	IMAGE_ERR_TRUNCATED,		/* the data ends before the image does */
	IMAGE_ERR_CORRUPT,			/* decoder reported damaged data */
	IMAGE_ERR_TOO_LARGE,		/* width * height over the pixel limit */
	IMAGE_ERR_NOMEM,
	IMAGE_ERR_UNSUPPORTED		/* a JPEG or PNG of a kind not decoded
								 * (12-bit, lossless, hierarchical JPEG) */
} image_status;

typedef struct image_rgb
{
	int			width;
	int			height;
	uint8_t    *pixels;			/* height * width * 3 bytes, RGB */
} image_rgb;

/*
 * Decodes bytes[0..len) into a new image.  max_pixels bounds width *
 * height, checked from the header before any pixel memory is allocated.
 * Returns IMAGE_OK and sets *out, or an error status with a message in
 * err that says what is wrong (and where, e.g. "truncated after 25072 of
 * an expected ... bytes", "PNG declares 100000x100000 pixels").
 */
image_status image_decode(const void *bytes, size_t len, int64_t max_pixels,
						  image_rgb **out, char *err, size_t errlen);

/* New zeroed image, or NULL when memory runs out or the size is invalid. */
image_rgb  *image_new(int width, int height);

/* Frees *img and sets *img to NULL; NULL is fine. */
void		image_destroy(image_rgb **img);

/*
 * Encodes img as an 8-bit RGB PNG into a new malloc'd buffer: returns 0
 * with *out (the caller's, free() it) and *len, or -1 with a message in
 * err (out of memory, or libpng's error); *out is then NULL.
 */
int			image_encode_png(const image_rgb *img, uint8_t **out, size_t *len,
							 char *err, size_t errlen);

/* Short name of a status ("not an image", "truncated", ...). */
const char *image_status_name(image_status st);

#endif							/* INFER_IMAGE_H */
