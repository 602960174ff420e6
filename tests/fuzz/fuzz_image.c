/*
 * fuzz_image.c
 *	  libFuzzer harness for worker/image.c: any bytes must give IMAGE_OK with
 *	  a consistent image, or an error status with a message, never a crash,
 *	  a leak or a read outside the input.  Not built by default:
 *
 *	clang -g -O1 -fsanitize=fuzzer,address,undefined -I. \
 *	    tests/fuzz/fuzz_image.c worker/image.c -ljpeg -lpng -lexif -o fuzz_image
 *	./fuzz_image -max_total_time=300 CORPUS_DIR ../shared/data/ocr
 *
 * Single-threaded; the pixel limit is small so that declared sizes, not
 * the fuzzer's memory limit, decide.
 */
#include "worker/image.h"

#include <stdlib.h>
#include <string.h>

#define FUZZ_MAX_PIXELS (4 * 1024 * 1024)

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* One input: decode it, then touch every pixel so that a short buffer shows. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	image_rgb  *img = NULL;
	char		err[256];
	image_status st;

	/* the input is copied to an exact-size buffer so that ASan sees overreads */
	uint8_t    *copy = malloc(size ? size : 1);

	if (copy == NULL)
		return 0;
	memcpy(copy, data, size);
	st = image_decode(copy, size, FUZZ_MAX_PIXELS, &img, err, sizeof(err));
	if (st == IMAGE_OK)
	{
		size_t		i,
					n;
		unsigned	sum = 0;

		if (img == NULL || img->width < 1 || img->height < 1 ||
			(int64_t) img->width * img->height > FUZZ_MAX_PIXELS)
			abort();
		n = (size_t) img->width * img->height * 3;
		for (i = 0; i < n; i++)
			sum += img->pixels[i];
		if (sum == 0xdeadbeef)
			err[0] = 0;			/* keeps the loop from being optimised away */
		image_destroy(&img);
	}
	else if (img != NULL || err[0] == '\0' ||
			 strcmp(image_status_name(st), "unknown status") == 0)
		abort();
	free(copy);
	return 0;
}
