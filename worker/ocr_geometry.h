/*
 * ocr_geometry.h
 *	  Plane geometry and pixel warps for the OCR fragment, written to give
 *	  the numbers OpenCV gives where RapidOCR relies on OpenCV:
 *	- borders of 8-connected components and of the holes inside them
 *	  (what cv::findContours RETR_LIST reports, as point sets);
 *	- convex hull, minimum-area rectangle (rotating calipers, as
 *	  cv::minAreaRect) and its corner ordering (RapidOCR's get_mini_boxes);
 *	- polygon offset with round joins (Clipper's ClipperOffset, as
 *	  pyclipper runs it: integer-truncated input, ArcTolerance 0.25);
 *	- the mean of a float map inside a polygon rasterised as cv::fillPoly;
 *	- perspective transform from four point pairs and a bicubic warp with
 *	  replicated borders (cv::warpPerspective INTER_CUBIC as opencv-python
 *	  5.0 computes it: exact source points, floating-point Keys weights);
 *	- 2x2 dilation, 90-degree rotation.
 *
 * All functions are pure and thread-safe.  Points are in pixel units with
 * pixel centres on integer coordinates (OpenCV's convention).  This is
 * also the fragment's private header: the stage functions of ocr_det.c
 * and ocr_rec.c are declared at the end.
 */
#ifndef INFER_OCR_GEOMETRY_H
#define INFER_OCR_GEOMETRY_H

#include <stddef.h>
#include <stdint.h>

#include "worker/engine/engine.h"
#include "worker/image.h"
#include "worker/ocr.h"

typedef struct geo_pt
{
	float		x;
	float		y;
} geo_pt;

/* A rotated rectangle: centre, side lengths, angle of the w side (degrees). */
typedef struct geo_rrect
{
	float		cx;
	float		cy;
	float		w;
	float		h;
	float		angle;
} geo_rrect;

/* A point set (one contour), malloc'd points. */
typedef struct geo_contour
{
	int			n;
	geo_pt	   *pts;
} geo_contour;

/*
 * Convex hull of pts[0..n) into hull (room for n + 1 points), counter-clockwise
 * in y-down image coordinates, no collinear points.  Returns the count.
 */
int			geo_convex_hull(const geo_pt *pts, int n, geo_pt *hull);

/*
 * Where cv::convexHull's output starts.  The hull's vertices are the same
 * whatever the order of the input, but cv::convexHull rotates its output
 * to follow the input's point order, and cv::minAreaRect's float results
 * (so RapidOCR's integer boxes, after truncation) depend on it.  The hull
 * runs clockwise on screen (y down) from:
 *	GEO_START_LEFT: the lowest (x, y) point, for unordered point sets;
 *	GEO_START_AFTER_TOP_LEFT: the vertex after the lowest (y, x) one, where
 *	  cv::findContours starts an outer border (its points then run the
 *	  other way, so OpenCV's index order puts that vertex last);
 *	GEO_START_AFTER_TOP_RIGHT: the vertex after the top point with the
 *	  largest x, which ends Clipper's offset output as pyclipper returns it.
 * (Found by comparing with opencv-python 5.0 and pyclipper 1.4 on the
 * detector's maps of the test images.)
 */
typedef enum geo_hull_start
{
	GEO_START_LEFT,
	GEO_START_AFTER_TOP_LEFT,
	GEO_START_AFTER_TOP_RIGHT
} geo_hull_start;

/*
 * Minimum-area enclosing rectangle of pts[0..n) (n >= 1), by rotating
 * calipers over the hull edges (Freeman & Shapira 1975), computed as
 * cv::minAreaRect computes it.  Returns 0, or -1 when memory runs out.
 */
int			geo_min_area_rect(const geo_pt *pts, int n, geo_hull_start start,
							  geo_rrect *r);

/* The four corners of r (any order the caller re-sorts). */
void		geo_rrect_points(const geo_rrect *r, geo_pt out[4]);

/*
 * RapidOCR's get_mini_boxes: min-area rectangle of pts, corners ordered
 * TL, TR, BR, BL by its x-sort-then-y rule; *sside = the shorter side.
 * Returns 0, or -1 when memory runs out.
 */
int			geo_mini_box(const geo_pt *pts, int n, geo_hull_start start,
						 geo_pt box[4], float *sside);

/*
 * Grows a 4-point polygon by distance (Clipper offset, round joins, input
 * truncated to integers, output rounded); *out gets a malloc'd polygon of
 * *n_out points.  Returns 0, or -1 when memory runs out.
 */
int			geo_offset_round(const geo_pt box[4], double distance,
							 geo_pt **out, int *n_out);

/*
 * Mean of map (h x w floats, row-major) over the pixels of the polygon
 * box (4 corners, truncated to integers) filled as cv::fillPoly (edges
 * included), inside the bounding box clipped to the map: RapidOCR's
 * box_score_fast.  Returns 0 for an empty mask.
 */
double		geo_poly_mean(const float *map, int w, int h, const geo_pt box[4]);

/* dst = 2x2 dilation of src (anchor at the kernel's centre (1,1)). */
void		geo_dilate2x2(const uint8_t *src, uint8_t *dst, int w, int h);

/*
 * Borders of mask (w x h, nonzero = foreground): for every 8-connected
 * component its outer border, and for every hole (4-connected background
 * not reaching the image edge) the foreground pixels 4-adjacent to it.
 * Each border is returned as the pixel points it passes through (enough
 * for hulls and min-area rectangles).  Components come in raster order of
 * their first pixel, each followed by its holes.  *out is malloc'd; free
 * with geo_contours_free().  Returns the count, or -1 when memory runs out.
 */
int			geo_find_borders(const uint8_t *mask, int w, int h,
							 geo_contour **out);
void		geo_contours_free(geo_contour **c, int n);

/*
 * The 3x3 homography M (row-major, double) with M * src[i] ~ dst[i], as
 * cv::getPerspectiveTransform (8x8 linear system, Gaussian elimination).
 * Returns 0, or -1 for a singular system.
 */
int			geo_perspective(const float src[4][2], const float dst[4][2],
							double M[9]);

/*
 * dst (out_w x out_h) = src warped by M (src -> dst map), bicubic,
 * replicated border: cv::warpPerspective(..., INTER_CUBIC,
 * BORDER_REPLICATE) on 8-bit 3-channel pixels.  NULL on a singular M or
 * when memory runs out.
 */
image_rgb  *geo_warp_perspective(const image_rgb *src, const double M[9],
								 int out_w, int out_h);

/*
 * RapidOCR's get_rotate_crop_image: the quadrilateral box (TL, TR, BR, BL)
 * cut out and rectified to int(max opposite side lengths), turned 90
 * degrees counter-clockwise (np.rot90) when height / width >= 1.5.
 */
image_rgb  *geo_crop_box(const image_rgb *img, const float box[4][2]);

/*
 * geo_crop_box's geometry without the pixels: the inverse of the
 * perspective map (crop to source coordinates, row-major 3x3, what
 * ie_warp_cubic_px and ie_dimage_warp take), the warped size and whether
 * it is then turned 90 degrees counter-clockwise.  -1 for a degenerate box.
 */
int			geo_crop_plan(const float box[4][2], double Minv[9], int *out_w, int *out_h,
						  int *rot90);

/* src turned 90 degrees counter-clockwise (np.rot90); NULL on no memory. */
image_rgb  *geo_rot90_ccw(const image_rgb *src);

/*
 * The OCR stages below are defined in ocr_det.c and ocr_rec.c and used by
 * ocr.c; they are declared here, the fragment's one private header.
 */
/* A detected box: corners TL, TR, BR, BL in the detector input image. */
typedef struct ocr_det_box
{
	float		pts[4][2];
	float		score;
} ocr_det_box;

/*
 * ocr_det.c: DB post-processing of the probability map prob (h x w) of an
 * image of dest_w x dest_h pixels: threshold, 2x2 dilation, borders,
 * min-area boxes scored and unclipped, scaled to dest, ordered clockwise,
 * clipped, small ones dropped, sorted in reading order (RapidOCR's
 * boxes_from_bitmap, filter_tag_det_res, sorted_boxes).  *out is malloc'd
 * (NULL when none).  Returns the count, or -1 with a message in err.
 */
int			ocr_db_postprocess(const float *prob, int w, int h, int dest_w,
							   int dest_h, const ocr_params *p,
							   ocr_det_box **out, char *err, size_t errlen);

/*
 * Caps on the detector input (not RapidOCR's): after the limit_side_len
 * resize neither side may pass OCR_DET_MAX_SIDE nor the area
 * OCR_DET_MAX_PIXELS (54 MB of float input).  RapidOCR's own sizes for
 * images up to 2000 pixels a side within aspect 1:5 stay under both.
 */
#define OCR_DET_MAX_SIDE	4000
#define OCR_DET_MAX_PIXELS	4500000

/*
 * ocr_det.c: the detector input size for an h x w image: short side raised
 * to limit_side_len, sides rounded to multiples of 32, then scaled down
 * (rounding down) to the caps above.  A side may come out 0: no text.
 */
void		ocr_det_input_size(int h, int w, int limit_side_len, int *rh,
							   int *rw);

/*
 * ocr_det.c: the detector on img: resize (ocr_det_input_size), normalise
 * (BGR planes, mean 0.5, std 0.5), run, post-process.  dimg, when not NULL,
 * is img already in the detector's device memory (the OCR fragment on a
 * GPU): resized and normalised there.  Returns the count of boxes, or -1
 * with a message in err.
 */
int			ocr_detect(const ie_model *det, const ocr_params *p,
					   const image_rgb *img, const ie_dimage *dimg, ocr_det_box **out,
					   char *err, size_t errlen);

/*
 * A text-line crop for the classifier and the recogniser: on the host
 * (img), or in the models' device memory (dimg: the OCR fragment on a
 * GPU, which cuts, turns and feeds the crops there); the other is NULL.
 */
typedef struct ocr_crop
{
	image_rgb  *img;
	ie_dimage  *dimg;
} ocr_crop;

/*
 * ocr_rec.c: the direction classifier over crops[0..n): crops labelled
 * "180" with probability > thresh are turned by 180 degrees (in place on
 * the device, replaced on the host) and flagged in rotated[].  Returns 0,
 * or -1 with a message in err.
 */
int			ocr_classify(const ie_model *cls, ocr_crop *crops, int n,
						 float thresh, int *rotated, char *err, size_t errlen);

/*
 * ocr_rec.c: the recogniser over crops[0..n) (batches of 6 by aspect
 * ratio); texts[i] (malloc'd UTF-8) and scores[i] for each crop.  Returns
 * 0, -1 with a message in err, or OCR_STOPPED (nothing kept) when stop
 * (may be NULL) is non-zero before a batch.
 */
int			ocr_recognize(const ie_model *rec, const char *const *dict,
						  int dict_len, const ocr_crop *crops, int n,
						  char **texts, float *scores,
						  volatile sig_atomic_t *stop, char *err,
						  size_t errlen);

/*
 * ocr_rec.c: CTC greedy decoding of one sequence of T steps x C class
 * probabilities: argmax per step, repeats merged, blank (0) dropped;
 * *score = mean of the kept steps' maxima (0 when none).  *text is
 * malloc'd; NULL on no memory.
 */
char	   *ocr_ctc_decode(const float *probs, int T, int C,
						   const char *const *dict, int dict_len,
						   float *score);

#endif							/* INFER_OCR_GEOMETRY_H */
