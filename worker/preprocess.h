/*
 * preprocess.h
 *	  Turning decoded images into model input tensors: resizing, rotation,
 *	  and normalisation into planar float.
 *
 * Resizing follows OpenCV's cv::resize INTER_LINEAR on 8-bit images
 * (half-pixel centres, the 11-bit fixed-point weights of
 * modules/imgproc/src/resize.cpp) so the models see what they see under
 * RapidOCR.  All functions are pure: thread-safe, no state.
 */
#ifndef INFER_PREPROCESS_H
#define INFER_PREPROCESS_H

#include "worker/image.h"

/* src resized to width x height (both >= 1), bilinear; NULL when out of memory. */
image_rgb  *pre_resize(const image_rgb *src, int width, int height);

/* src turned by 180 degrees; NULL when out of memory. */
image_rgb  *pre_rotate180(const image_rgb *src);

/*
 * Writes img into out as planar float, CHW, channel order RGB (bgr = 0) or
 * BGR (bgr = 1): out[c][y][x] = (pixel / 255 - mean[c]) / std[c], with
 * mean and std given in the output channel order.  out has 3 planes of
 * out_h x out_w floats; img (img->width <= out_w, img->height <= out_h)
 * lands top-left and the rest is filled with pad.
 */
void		pre_normalize_chw(const image_rgb *img, const float mean[3],
							  const float std[3], int bgr, float *out,
							  int out_h, int out_w, float pad);

#endif							/* INFER_PREPROCESS_H */
