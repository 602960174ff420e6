/*
 * test_ocr.c
 *	  Unit tests of the OCR fragment's geometry, resizing and decoding,
 *	  against numbers taken from OpenCV 5.0 (opencv-python), pyclipper and
 *	  RapidOCR 1.4.4 in build/venv (the expected arrays below were printed
 *	  by those libraries for the same synthetic inputs).
 *
 * test_thin_images runs the real models (build/models, or $PGINFER_MODEL_DIR)
 * on degenerate and very thin white images: each must answer quickly, with
 * no lines, and with a bounded detector input.
 *
 * Prints "test_ocr: N passed, M failed"; exits 1 when any check fails.
 */
#include <math.h>
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/unit/testutil.h"
#include "worker/ocr.h"
#include "worker/ocr_geometry.h"
#include "worker/preprocess.h"

/*
 * Most seconds a thin white page may take (test_thin_images): a bound on
 * pathological inputs (a band blown up to a huge detector input), not a
 * speed target; AddressSanitizer runs the models several times slower.
 */
#if defined(__SANITIZE_ADDRESS__)
#define WHITE_PAGE_MAX_S 10.0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WHITE_PAGE_MAX_S 10.0
#endif
#endif
#ifndef WHITE_PAGE_MAX_S
#define WHITE_PAGE_MAX_S 2.0
#endif

/* Expected outputs from cv2.resize / cv2.warpPerspective on synth(). */
static const uint8_t rs_up[429] = {0,53,106,11,64,117,31,84,137,51,104,157,71,124,177,91,144,197,111,164,217,131,184,237,151,204,237,171,224,119,191,204,41,210,86,61,222,19,72,17,69,122,28,81,134,48,101,154,69,122,157,89,142,152,110,141,169,130,137,190,125,157,210,124,178,214,145,198,122,165,186,62,186,94,82,197,41,94,58,111,164,70,123,176,92,145,198,113,166,157,135,188,91,157,134,100,178,68,121,112,90,143,59,112,158,80,133,129,102,141,115,124,112,137,136,96,149,99,152,182,112,158,195,135,168,218,149,188,151,159,211,49,180,126,54,203,23,76,101,46,99,16,69,121,39,92,131,62,111,145,85,122,167,98,128,181,141,193,107,154,164,121,178,113,145,149,116,124,98,140,85,111,110,101,135,72,125,97,96,149,67,120,162,91,144,111,115,146,81,139,96,105,153,66,119,182,235,32,196,171,46,222,58,72,149,44,97,36,69,122,42,95,148,67,120,173,92,145,198,118,171,204,143,196,91,168,182,18,194,69,44,208,5,58,107,160,73,122,132,88,148,83,115,121,89,141,73,115,168,88,142,141,115,168,105,142,132,131,159,105,147,123,131,98,105,136,71,131,88,98,146,60,113,32,85,115,48,94,130,75,109,158,94,133,186,110,161,214,136,189,134,163,216,36,191,119,64,201,39,90,103,67,106,42,91,124,69,106,152,85,115,168,50,103,156,66,119,144,96,149,123,124,142,137,153,120,166,139,142,120,118,171,61,147,113,90,164,66,120,105,95,148,71,124,163,100,153,142,117,170,130,91,144,197,108,162,150,139,192,68,169,141,65,199,59,96,133,73,104,50,103,110,80,108,140,107,117,170,112,147,200,125,177,198,155,208,116,172,225,69,108,161,214,126,178,153,156,209,45,187,141,37,217,34,67,130,45,98,23,76,129,54,107,160,84,137,190,115,168,221,146,199,212,176,229,105,194,247,44};
static const uint8_t rs_down[162] = {116,169,222,144,40,93,93,128,178,178,127,50,50,103,135,144,188,110,215,60,113,113,166,197,198,16,69,129,182,85,79,111,121,157,210,93,191,130,41,106,159,148,184,130,98,196,72,68,104,157,210,186,90,100,141,194,131,135,117,120,110,151,71,156,95,89,161,107,160,148,201,112,108,149,107,105,158,210,138,158,187,154,124,177,74,77,131,129,182,223,167,106,76,67,120,66,77,130,136,42,79,132,105,158,140,151,171,141,117,170,60,145,70,102,123,119,172,178,117,63,80,133,122,165,154,101,179,62,93,105,158,169,173,176,80,163,216,82,96,71,124,80,130,164,80,133,186,80,133,186,136,189,129,183,27,80,110,156,194,199,65,66};
#define WARP_W 37
#define WARP_H 19
static const uint8_t warp_exp[2109] = {184,237,34,105,158,213,162,215,69,0,49,136,107,164,213,100,182,82,78,71,120,193,35,45,60,122,175,98,150,203,95,144,185,178,127,154,156,90,56,147,124,96,89,112,187,181,97,175,198,108,37,198,141,52,244,144,70,86,166,77,74,98,194,127,131,129,148,157,130,212,84,161,90,102,124,89,128,157,106,151,233,91,161,106,210,154,29,255,90,92,125,218,91,85,148,137,141,187,255,184,93,90,182,254,22,52,80,153,242,23,94,197,226,31,16,70,88,74,135,214,82,135,91,76,118,165,212,101,27,29,84,152,131,139,227,63,143,137,190,171,12,238,81,87,118,205,76,28,107,157,104,188,160,114,119,188,167,45,105,129,71,94,215,76,118,37,114,168,52,114,179,180,93,162,150,66,36,140,142,52,139,105,192,50,135,144,167,155,51,235,113,115,148,239,72,77,63,148,229,71,134,119,141,162,204,255,36,108,127,205,255,25,96,122,184,150,30,110,164,163,184,16,93,91,170,153,207,2,130,125,165,172,220,72,0,51,123,159,80,154,42,128,171,161,200,54,252,65,102,170,244,53,27,95,168,129,187,220,119,150,160,196,144,40,79,110,177,76,46,107,90,137,225,102,129,109,151,226,63,149,115,196,171,28,72,38,144,141,44,86,179,161,108,126,113,192,56,86,71,67,246,38,84,56,150,182,41,98,152,139,177,233,255,28,65,157,221,90,24,93,147,205,130,55,119,173,235,172,45,121,204,230,12,190,35,115,152,162,9,232,81,90,89,121,212,91,167,94,130,214,255,208,61,123,194,246,8,53,76,134,130,183,236,82,134,170,196,203,24,118,153,224,148,25,106,77,146,226,60,129,177,193,255,102,140,182,249,255,32,70,176,14,71,53,150,131,135,187,31,176,104,178,159,59,88,86,150,74,97,146,221,122,126,182,193,5,68,163,224,23,17,68,124,224,54,107,80,136,216,99,68,140,167,231,0,68,154,154,235,16,112,173,144,154,246,174,69,85,162,106,106,185,241,147,137,214,225,129,27,111,149,175,69,29,118,124,168,169,46,120,183,168,227,26,14,71,119,197,15,92,78,134,198,39,119,169,192,244,143,137,191,64,63,104,84,223,40,121,81,123,192,48,102,139,162,189,0,32,21,109,180,29,94,30,115,169,94,147,224,120,199,252,201,50,105,215,214,30,61,114,147,14,67,119,114,185,235,117,152,206,226,0,60,174,155,70,20,120,149,148,132,61,180,201,186,180,72,149,144,203,93,158,240,148,151,73,153,176,24,106,66,98,175,83,186,63,131,213,225,230,78,140,230,3,47,83,108,163,32,68,124,144,204,185,79,133,189,107,160,59,137,190,137,44,100,198,224,218,47,153,225,24,129,192,239,238,45,113,211,16,77,91,163,140,83,138,185,78,138,192,190,76,129,157,98,156,79,134,171,158,212,71,167,220,0,116,196,199,231,62,126,237,33,83,106,123,198,100,74,172,182,178,21,145,222,106,156,103,200,240,99,40,96,176,108,3,70,99,80,178,174,162,123,201,233,56,28,120,110,138,34,88,140,118,160,221,109,190,232,191,25,95,220,168,22,83,122,155,4,60,153,160,211,139,148,227,71,49,131,99,233,70,87,244,20,71,103,133,176,54,133,166,140,196,27,116,168,190,40,107,164,152,98,151,70,146,217,148,212,108,210,255,8,90,143,106,0,75,139,181,58,99,180,156,212,62,175,228,160,26,94,234,93,77,103,186,170,44,27,80,193,60,121,48,132,199,140,201,45,145,211,79,78,60,155,125,50,129,111,152,208,142,40,119,193,154,44,176,241,0,19,116,96,176,53,94,164,170,123,114,179,218,84,153,104,217,100,26,110,115,181,95,123,206,58,93,186,155,209,62,172,224,0,55,114,133,3,70,140,87,171,223,152,121,174,180,22,88,143,124,117,77,146,157,26,79,169,110,163,47,166,227,131,123,190,255,31,97,161,70,45,112,192,137,224,104,178,255,145,198,251,105,147,206,138,129,126,215,203,25,79,152,113,19,99,105,127,197,139,75,159,231,134,41,96,255,16,67,147,87,142,57,131,220,153,190,100,218,179,0,167,175,174,33,112,200,82,46,139,170,187,101,167,243,46,153,226,3,66,120,86,0,42,127,105,129,195,179,148,204,150,102,154,168,67,118,146,60,127,61,70,182,101,160,135,184,237,39,185,238,7,112,165,73,23,76,146,47,99,95,89,151,125,165,242,168,143,198,127,131,173,235,255,29,82,213,36,92,141,38,123,52,112,197,162,102,58,179,250,60,48,103,189,25,73,141,84,123,60,159,212,95,117,191,255,157,95,165,194,0,93,125,108,103,118,208,177,107,185,255,60,139,143,155,80,70,255,44,63,172,113,163,98,183,236,191,98,127,231,45,64,182,12,91,99,74,160,78,172,179,158,221,87,193,245,31,162,214,63,58,117,173,46,100,166,95,150,117,217,255,12,193,246,18,136,188,50,117,172,70,0,62,116,236,57,110,106,190,243,144,132,185,162,67,122,233,16,47,111,194,157,58,125,186,78,88,154,200,69,40,194,255,29,134,189,77,36,100,183,39,95,163,146,96,56,228,126,65,177,131,207,63,145,236,81,105,195,91,118,199,139,76,135,224,0,48,196,110,47,130,236,110,91,174,162,107,178,123,165,216,58,195,248,38,97,150,142,59,121,167,77,72,156,210,41,46,203,255,48,186,241,64,169,222,86,78,131,219,84,137,218,128,181,234,118,187,240,90,153,212,187,30,96,215,85,137,171,105,160,111,173,244,129,157,209,255,44,98,255,28,80,208,61,113,102,183,229,108,171,192,120,112,171,196,28,90,139,19,100,110,96,95,146,240,78,152,228,62,175,234,34,136,183,68,41,93,175,41,105,156,96,146,103,204,255,11,138,191,77,124,177,85,79,132,131,50,103,177,174,233,76,194,213,54,213,0,43,201,12,63,91,149,215,95,148,223,82,135,189,68,134,187,148,201,255,28,81,138,20,71,85,9,87,63,132,213,255,138,216,255,66,119,172,53,103,157,58,50,130,45,89,120,175,228,7,165,208,3,136,192,38,36,94,177,32,118,186,52,109,183,176,75,96,255,122,47,212,97,65,1,76,80,38,95,75,160,219,0,159,202,1,139,196,3,107,160,41,67,120,119,95,148,106,116,169,91,152,205,64,212,255,27,113,165,164,107,129,182,100,150,204,105,158,211,113,166,219,15,67,127,5,64,120,9,62,113,8,61,117,140,193,16,183,236,0,121,174,181,105,156,213,24,102,155,18,99,160,149,242,68,174,7,60,202,10,51,202,10,69,94,159,230,116,176,168,124,190,156,146,181,127,176,63,128,146,73,150,121,90,187,48,108,197,90,119,190,255,42,80,231,50,108,0,58,130,24,83,145,168,232,60,135,188,50,131,184,74,112,164,109,98,178,141,65,145,205,67,166,219,253,69,122,50,57,110,4,64,120,44,104,125,80,98,128,83,136,54,167,220,2,139,191,23,133,194,40,50,121,132,21,111,169,126,64,117,161,41,103,248,85,70,244,18,87,252,23,89,146,191,241,156,212,246,172,176,1,188,162,10,156,210,89,73,175,229,93,194,244,114,211,64,174,227,60,187,239,57,93,124,196,98,150,204,122,158,211,150,162,214,167,150,229,14,62,143,9,62,168,105,169,119,143,35,113,188,29,93,237,45,94,73,39,108,0,59,123,17,70,147,152,218,75,245,102,45,146,199,253,82,135,207,16,73,156,56,70,159,111,66,129,126,82,134,224,20,70,255,10,83,77,9,122,139,155,40,180,225,23,185,239,36,205,255,40,207,45,55,220,46,56,157,201,177,187,119,165,212,103,165,245,99,47,58,96,65,35,89,97,169,225,47,199,255,48,211,34,63,221,24,83,246,54,108,61,96,156,60,120,98,185,253,14,230,180,10,174,117,124,162,129,215,130,171,83,148,202,8,183,255,40,210,123,62,240,13,91,0,67,120,33,86,115,56,131,133,151,69,81,246,0,33,255,0,43,217,79,165,194,156,119,139,196,37,170,255,40,218,95,54,230,17,79,255,31,106,179,169,26,187,203,24,146,207,35,128,35,57,130,28,82,142,61,127,54,92,183,74,128,227,45,98,123,41,95,128,60,114,166,83,153,182,109,153,196,172,151,230,141,165,81,101,156,68,120,204,110,89,195,200,111,191,255,160,215,108,183,255,0,213,131,26,180,53,153,124,222,164,135,213,219,169,222,0,175,239,41,182,169,78,180,46,119,197,92,167,177,179,183,171,255,39,208,148,13,255,37,67,82,20,113,93,158,51,192,255,25,193,74,62,216,1,93,49,37,120,7,89,163,48,125,203,76,175,254,149,215,125,210,255,57,121,191,180,110,182,255,161,216,92,186,255,23,208,100,68,253,34,106,117,87,104,59,137,99,115,103,132,177,62,139,134,99,159,46,118,142,86,143,139,109,150,199,131,175,160,161,222,0,131,184,237,129,182,252,42,95,176,74,142,215,110,193,248,140,221,235,146,213,93,117,176,118,142,157,205,165,146,135,160,233,9,199,125,51,251,1,82,100,54,115,0,97,152,65,128,202,110,172,168,156,233,127,222,157,163,126,92,89,41,132,81,146,61,106,255,21,105,113,66,115,17,89,147,57,120,181,80,164,241,128,201,151,186,255,21,215,139,5,255,0,48,173,29,92,0,75,155,49,133,194,95,167,234,149,208,205,180,199,3};
#define WARP2_W 23
#define WARP2_H 15
/* RapidOCR box_score_fast on lcg_map() for the two boxes of test_poly_mean */
#define POLY_MEAN_1 0.504954799529
#define POLY_MEAN_2 0.509614105225
static const uint8_t warp2_exp[1035] = {0,53,106,0,53,106,0,53,106,0,49,102,24,77,130,61,114,167,97,150,203,133,186,255,169,249,122,232,112,35,100,17,92,1,76,129,60,113,166,96,151,229,134,189,95,177,255,0,245,101,48,74,11,98,0,84,146,47,132,184,111,169,250,154,207,16,191,255,24,0,53,106,0,53,106,0,52,105,0,50,103,29,82,134,61,113,184,92,167,224,150,208,255,191,255,69,255,60,38,49,23,85,11,74,137,67,117,169,118,142,221,129,168,69,137,223,66,197,110,141,107,144,67,127,56,81,228,64,119,59,100,155,85,138,160,126,180,218,0,50,103,3,56,109,7,60,116,20,75,135,68,133,175,129,172,113,173,81,138,53,105,159,75,130,129,103,125,176,98,171,237,163,232,37,207,27,55,255,50,106,72,108,136,113,92,169,74,148,211,127,190,93,244,0,47,69,47,128,48,128,181,126,181,203,181,180,0,80,133,200,92,145,197,101,156,185,135,166,207,167,172,151,135,142,35,128,38,131,44,137,161,140,168,46,199,21,89,238,67,119,40,105,155,98,151,204,137,209,248,212,248,14,245,4,72,0,68,143,73,137,214,172,143,195,152,206,53,205,41,120,27,120,167,163,119,174,185,238,44,184,237,34,172,253,24,217,95,53,104,35,136,38,144,159,154,160,132,162,99,109,62,102,79,118,95,187,144,193,182,188,179,21,214,35,123,120,209,209,184,195,66,186,86,135,110,162,107,193,117,146,178,207,62,181,30,63,24,75,146,98,152,229,163,238,136,35,88,98,23,76,112,12,65,122,52,123,155,137,150,211,145,188,77,160,87,68,95,84,191,96,200,164,193,152,114,208,148,72,204,147,12,142,15,94,26,92,135,108,141,235,169,224,178,205,81,33,100,85,96,133,138,160,156,188,140,136,205,143,136,215,113,231,92,48,75,128,215,89,142,220,107,161,205,159,215,14,212,27,67,44,74,164,88,184,144,191,145,191,204,240,51,255,89,33,119,52,106,59,127,201,134,214,90,223,91,6,170,100,178,148,80,167,99,82,72,66,138,157,118,203,144,244,129,38,102,65,123,87,152,200,39,87,144,197,250,87,212,255,69,154,208,63,0,49,127,79,146,173,168,162,210,152,208,69,255,18,67,98,123,88,119,121,180,139,204,59,213,68,93,173,188,19,218,73,60,88,75,102,75,160,224,193,254,51,78,131,115,86,150,114,48,36,107,38,104,160,129,203,255,212,18,69,85,138,89,66,119,93,55,108,175,123,193,145,198,168,12,188,31,108,67,108,118,159,55,122,95,147,76,184,71,124,84,139,112,241,12,64,53,87,137,100,162,231,200,255,35,98,150,185,154,207,105,0,49,111,85,136,220,115,216,51,248,59,110,187,240,37,0,64,124,64,144,217,67,151,241,181,242,123,97,151,59,24,77,178,129,194,110,142,208,78,106,191,124,121,130,41,148,78,152,16,70,166,127,156,187,170,224,51,117,170,220,179,232,56,0,52,120,94,147,225,100,175,86,53,97,151,218,53,27,62,89,143,114,169,220,73,116,166,194,97,151,210,71,129,93,115,90,63,144,215,176,232,84,148,195,163,177,210,142,109,166,97,47,121,221,74,170,159,148,146,62,218,117,104,144,220,32,7,60,144,79,133,196,57,111,120,108,144,165,198,134,27,30,71,147,135,117,212,51,144,141,188,165,22,243,87,83,157,21,74,121,48,104,80,159,229,211,44,100,70,110,129,211,39,91,106,80,128,117,194,237,132,128,208,118,128,70,190,81,62,198,68,104,77,176,96,122,179,78,132,180,156,117,189,53,50,18,115,147,61,139,55,162,159,180,159,101,241,127,76,128,197,58,60,116,195,45,149,202,106,156,208,211,78,136,83,57,139,0,49,110,91,119,195,172,226,29,132,179,190,194,30,94,33,45,140,108,101,165,151,36,152,167,138,6,215,129,34,173,82,155,35,112,160,90,167,182,132,141,232,184,162,37,152,153,36,114,126,184,100,155,228,138,192,67,169,186,238,197,77,147,137,96,100,93,185,103,81,161,189,182,242,63,51,89,137,238,36,89,92,154,172,58,119,87,138,136,181,235,135,54,89,131,82,134,141,197,97,153,235,167,210,61,151,217,173,157,52,148,172,149,96,47,141,166,117,208,108,44,130,106,185,23,80,238,16,74,106,117,148,94,186,48,138,104,88,184,108,128,38,118,133,15,63,129,129,180,197,208,255,28,142,184,20,255,23,76,145,231,124,119,177,88,145,225,255,237,82,142,230,0,47,76,84,143,11,104,96,100,173,228,172,99,176,226,58,16,71,90,132,20,72,126};

/* The synthetic test picture, same formula as the Python generator. */
static image_rgb *
synth(int w, int h)
{
	image_rgb  *im = image_new(w, h);

	for (int y = 0; y < h; y++)
		for (int x = 0; x < w; x++)
			for (int c = 0; c < 3; c++)
				im->pixels[((size_t) y * w + x) * 3 + c] =
					(uint8_t) ((x * 37 + y * 91 + c * 53 + ((x * y) % 29) * 5) & 255);
	return im;
}

/* Counts bytes that differ and the largest difference. */
static int
compare(const uint8_t *a, const uint8_t *b, int n, int *maxd)
{
	int			bad = 0;

	*maxd = 0;
	for (int i = 0; i < n; i++)
	{
		int			d = abs((int) a[i] - (int) b[i]);

		if (d)
			bad++;
		if (d > *maxd)
			*maxd = d;
	}
	return bad;
}

static void
test_resize(void)
{
	image_rgb  *a = synth(7, 5);
	image_rgb  *r = pre_resize(a, 13, 11);
	int			maxd,
				bad;

	bad = compare(r->pixels, rs_up, 429, &maxd);
	CHECK(bad == 0, "resize 7x5->13x11: %d differ, max %d", bad, maxd);
	image_destroy(&r);
	image_destroy(&a);

	a = synth(23, 17);
	r = pre_resize(a, 9, 6);
	bad = compare(r->pixels, rs_down, 162, &maxd);
	CHECK(bad == 0, "resize 23x17->9x6: %d differ, max %d", bad, maxd);
	image_destroy(&r);

	r = pre_resize(a, 23, 17);
	CHECK(memcmp(r->pixels, a->pixels, (size_t) 23 * 17 * 3) == 0, "same-size resize copies");
	image_destroy(&r);

	r = pre_rotate180(a);
	CHECK(memcmp(r->pixels, a->pixels + ((size_t) 23 * 17 - 1) * 3, 3) == 0 &&
		  memcmp(r->pixels + ((size_t) 23 * 17 - 1) * 3, a->pixels, 3) == 0,
		  "rotate180 swaps first and last pixel");
	image_destroy(&r);
	image_destroy(&a);
}

static void
test_normalize(void)
{
	image_rgb  *a = image_new(2, 1);
	float		out[3 * 2 * 3];
	static const float mean[3] = {0.5f, 0.5f, 0.5f};
	static const float sd[3] = {0.5f, 0.5f, 0.5f};

	a->pixels[0] = 255;			/* R */
	a->pixels[1] = 0;			/* G */
	a->pixels[2] = 51;			/* B */
	a->pixels[3] = a->pixels[4] = a->pixels[5] = 102;
	pre_normalize_chw(a, mean, sd, 1, out, 2, 3, -7.f);
	/* plane 0 is B: (51/255 - 0.5)/0.5 = -0.6 */
	CHECK(fabsf(out[0] - (-0.6f)) < 1e-6f, "B plane first: %g", out[0]);
	CHECK(fabsf(out[12] - 1.f) < 1e-6f, "R plane last: %g", out[12]);
	CHECK(out[2] == -7.f && out[3] == -7.f && out[5] == -7.f, "padding");
	image_destroy(&a);
}

static int
near(float a, float b, float tol)
{
	return fabsf(a - b) <= tol;
}

static void
test_min_area_rect(void)
{
	geo_pt		p1[] = {{0, 0}, {10, 0}, {10, 5}, {0, 5}, {3, 2}};
	geo_pt		p2[] = {{5, 0}, {10, 5}, {5, 10}, {0, 5}};
	geo_pt		p3[] = {{0, 0}, {20, 3}, {19, 9}, {-1, 6}, {7, 4}};
	geo_rrect	r;
	geo_pt		box[4];
	float		ss;

	/* cv2.minAreaRect: ((5, 2.5), (5, 10), -90) */
	geo_min_area_rect(p1, 5, GEO_START_LEFT, &r);
	CHECK(near(r.cx, 5, 1e-5f) && near(r.cy, 2.5f, 1e-5f) &&
		  near(fminf(r.w, r.h), 5, 1e-5f) && near(fmaxf(r.w, r.h), 10, 1e-5f),
		  "axis rect: %g %g %g %g", r.cx, r.cy, r.w, r.h);
	CHECK(r.angle == -90.f && r.w == 5.f && r.h == 10.f, "axis rect as cv2: (5, 10), -90");
	/* ((5, 5), (7.0710683, 7.0710683), -45) */
	geo_min_area_rect(p2, 4, GEO_START_LEFT, &r);
	CHECK(near(r.cx, 5, 1e-5f) && near(r.cy, 5, 1e-5f) &&
		  near(r.w, 7.0710683f, 1e-4f) && near(r.h, 7.0710683f, 1e-4f),
		  "diamond: %g %g %g %g", r.cx, r.cy, r.w, r.h);
	/* ((9.500001, 4.5), (6.0819583, 20.322643), -81.469238) */
	geo_min_area_rect(p3, 5, GEO_START_LEFT, &r);
	CHECK(near(r.cx, 9.5f, 1e-4f) && near(r.cy, 4.5f, 1e-4f) &&
		  near(fminf(r.w, r.h), 6.0819583f, 1e-4f) &&
		  near(fmaxf(r.w, r.h), 20.322643f, 1e-4f),
		  "tilted: %g %g %g %g", r.cx, r.cy, r.w, r.h);

	/* bit for bit: cv2.minAreaRect and cv2.boxPoints on p3 */
	{
		geo_pt		bp[4];

		CHECK(r.cx == 9.500000953674316f && r.cy == 4.5f && r.w == 6.081958293914795f &&
			  r.h == 20.322643280029297f && r.angle == -81.46923828125f,
			  "tilted exact: %.9g %.9g %.9g %.9g %.9g", r.cx, r.cy, r.w, r.h, r.angle);
		geo_rrect_points(&r, bp);
		CHECK(bp[0].x == 19.097801208496094f && bp[0].y == 9.014669418334961f &&
			  bp[1].x == -0.9999996423721313f && bp[1].y == 6.000000953674316f &&
			  bp[2].x == -0.0977996289730072f && bp[2].y == -0.014669179916381836f &&
			  bp[3].x == 20.0f && bp[3].y == 2.9999992847442627f,
			  "boxPoints exact: (%.9g,%.9g) (%.9g,%.9g)", bp[0].x, bp[0].y, bp[1].x, bp[1].y);
	}
	/* get_mini_boxes order TL, TR, BR, BL; boxPoints from OpenCV */
	geo_mini_box(p3, 5, GEO_START_LEFT, box, &ss);
	CHECK(near(box[0].x, -0.0977996f, 1e-3f) && near(box[0].y, -0.0146692f, 1e-3f) &&
		  near(box[1].x, 20.0f, 1e-3f) && near(box[1].y, 2.9999993f, 1e-3f) &&
		  near(box[2].x, 19.097801f, 1e-3f) && near(box[2].y, 9.0146694f, 1e-3f) &&
		  near(box[3].x, -0.9999996f, 1e-3f) && near(box[3].y, 6.000001f, 1e-3f) &&
		  near(ss, 6.0819583f, 1e-4f),
		  "mini box: (%g,%g) (%g,%g) (%g,%g) (%g,%g) s %g", box[0].x, box[0].y,
		  box[1].x, box[1].y, box[2].x, box[2].y, box[3].x, box[3].y, ss);
	geo_mini_box(p1, 5, GEO_START_LEFT, box, &ss);
	CHECK(near(box[0].x, 0, 1e-5f) && box[0].y == 0 && box[1].x == 10 && box[1].y == 0 &&
		  box[2].x == 10 && box[2].y == 5 && near(box[3].x, 0, 1e-5f) && box[3].y == 5 &&
		  ss == 5, "axis mini box order");
}

/* True when the point sets are equal as sets. */
static int
same_points(const geo_pt *a, int n, const int (*b)[2], int m)
{
	if (n != m)
		return 0;
	for (int i = 0; i < n; i++)
	{
		int			found = 0;

		for (int j = 0; j < m; j++)
			if (a[i].x == b[j][0] && a[i].y == b[j][1])
				found = 1;
		if (!found)
			return 0;
	}
	return 1;
}

/*
 * The unclip distance RapidOCR computes for a 4-point box (DBPostProcess
 * unclip, unclip_ratio 1.6): shoelace area * 1.6 / perimeter.
 */
static double
unclip_distance(const geo_pt *b)
{
	double		a = 0,
				l = 0;

	for (int i = 0; i < 4; i++)
	{
		geo_pt		p = b[i],
					q = b[(i + 1) % 4];

		a += (double) p.x * q.y - (double) q.x * p.y;
		l += hypot((double) q.x - p.x, (double) q.y - p.y);
	}
	return fabs(a) / 2 * 1.6 / l;
}

static void
test_unclip(void)
{
	/* pyclipper, JT_ROUND, distance = area * 1.6 / perimeter (RapidOCR) */
	geo_pt		b1[4] = {{10.7f, 10.7f}, {50.6f, 10.2f}, {50.4f, 30.9f}, {10.2f, 30.3f}};
	static const int e1[][2] = {{54, 0}, {58, 3}, {60, 7}, {61, 10}, {61, 30}, {60, 34},
	{57, 38}, {53, 40}, {50, 41}, {10, 41}, {6, 40}, {2, 37}, {0, 33}, {-1, 30}, {-1, 10},
	{0, 6}, {3, 2}, {7, 0}, {10, -1}, {50, -1}};
	geo_pt		b2[4] = {{3, 4}, {40, 9}, {38, 20}, {1, 15}};
	static const int e2[][2] = {{41, 2}, {44, 4}, {46, 7}, {47, 10}, {45, 21}, {43, 25},
	{40, 27}, {37, 27}, {0, 22}, {-3, 20}, {-5, 17}, {-6, 14}, {-4, 3}, {-2, -1}, {1, -3},
	{4, -3}};
	geo_pt	   *o = NULL;
	geo_pt		box[4];
	float		ss;
	int			n;

	geo_offset_round(b1, unclip_distance(b1), &o, &n);
	CHECK(same_points(o, n, e1, 20), "unclip rect: %d points", n);
	free(o);
	geo_offset_round(b2, unclip_distance(b2), &o, &n);
	CHECK(same_points(o, n, e2, 16), "unclip quad: %d points", n);
	/* get_mini_boxes of that: [[-3.5645616,-4.0222397],[47.954094,2.939743],...], 25.310482 */
	geo_mini_box(o, n, GEO_START_AFTER_TOP_RIGHT, box, &ss);
	CHECK(near(box[0].x, -3.5645616f, 1e-3f) && near(box[0].y, -4.0222397f, 1e-3f) &&
		  near(box[2].x, 44.564568f, 1e-3f) && near(box[2].y, 28.02224f, 1e-3f) &&
		  near(ss, 25.310482f, 1e-3f), "unclipped mini box (%g,%g) (%g,%g) %g",
		  box[0].x, box[0].y, box[2].x, box[2].y, ss);
	free(o);
}

static void
test_borders(void)
{
	/* ring with a hole, a 2x3 blob, a diagonal pair at the corner */
	uint8_t		m[12 * 20];
	geo_contour *cs = NULL;
	int			n;
	int			seen_outer = 0,
				seen_hole = 0,
				seen_blob = 0,
				seen_diag = 0;
	uint8_t		d[12 * 20];
	int			sum = 0;

	memset(m, 0, sizeof(m));
	for (int y = 2; y < 10; y++)
		for (int x = 2; x < 16; x++)
			m[y * 20 + x] = !(y >= 4 && y < 8 && x >= 4 && x < 14);
	for (int y = 1; y < 4; y++)
		for (int x = 17; x < 19; x++)
			m[y * 20 + x] = 1;
	m[10 * 20 + 0] = 1;
	m[11 * 20 + 1] = 1;
	n = geo_find_borders(m, 20, 12, &cs);
	/* cv2.findContours(RETR_LIST) finds 4; minAreaRect sizes from cv2 */
	CHECK(n == 4, "4 borders, got %d", n);
	for (int i = 0; i < n; i++)
	{
		geo_rrect	r;
		float		a,
					b;

		geo_min_area_rect(cs[i].pts, cs[i].n, GEO_START_LEFT, &r);
		a = fminf(r.w, r.h);
		b = fmaxf(r.w, r.h);
		if (near(r.cx, 8.5f, 1e-4f) && near(a, 7, 1e-4f) && near(b, 13, 1e-4f))
			seen_outer++;
		if (near(r.cx, 8.5f, 1e-4f) && near(r.cy, 5.5f, 1e-4f) && near(a, 5, 1e-4f) &&
			near(b, 11, 1e-4f))
			seen_hole++;
		if (near(r.cx, 17.5f, 1e-4f) && near(r.cy, 2, 1e-4f) && near(a, 1, 1e-4f) &&
			near(b, 2, 1e-4f))
			seen_blob++;
		if (near(r.cx, 0.5f, 1e-4f) && near(r.cy, 10.5f, 1e-4f) && near(a, 0, 1e-4f) &&
			near(b, 1.4142135f, 1e-4f))
			seen_diag++;
	}
	CHECK(seen_outer == 1 && seen_hole == 1 && seen_blob == 1 && seen_diag == 1,
		  "borders match cv2: outer %d hole %d blob %d diag %d", seen_outer,
		  seen_hole, seen_blob, seen_diag);
	geo_contours_free(&cs, n);
	CHECK(cs == NULL, "contours freed");

	/* cv2.dilate 2x2: 125 set pixels */
	geo_dilate2x2(m, d, 20, 12);
	for (int i = 0; i < 240; i++)
		sum += d[i];
	CHECK(sum == 125 && d[11 * 20 + 2] == 1 && d[1 * 20 + 16] == 0 && d[2 * 20 + 16] == 1,
		  "dilate: %d set", sum);
}

/* The same pseudo-random map on both sides: a small LCG. */
static void
lcg_map(float *m, int n)
{
	uint32_t	s = 12345;

	for (int i = 0; i < n; i++)
	{
		s = s * 1103515245u + 12345u;
		m[i] = (float) ((s >> 8) & 0xffff) / 65536.f;
	}
}

static void
test_poly_mean(void)
{
	float		m[30 * 40];
	geo_pt		b1[4] = {{3.5f, 4.2f}, {30.7f, 8.9f}, {28.1f, 20.4f}, {1.2f, 16.6f}};
	geo_pt		b2[4] = {{-2, -1}, {45, 0}, {44, 33}, {0, 31}};
	double		s;

	lcg_map(m, 30 * 40);
	/* RapidOCR box_score_fast on the same map */
	s = geo_poly_mean(m, 40, 30, b1);
	CHECK(fabs(s - POLY_MEAN_1) < 1e-6, "poly mean 1: %.9f want %.9f", s, POLY_MEAN_1);
	s = geo_poly_mean(m, 40, 30, b2);
	CHECK(fabs(s - POLY_MEAN_2) < 1e-6, "poly mean 2: %.9f want %.9f", s, POLY_MEAN_2);
}

static void
test_warp(void)
{
	image_rgb  *img = synth(60, 40);
	float		q1[4][2] = {{10, 8}, {47, 12}, {45, 30}, {8, 27}};
	float		q2[4][2] = {{-3, -2}, {20, 0}, {22, 15}, {0, 12}};
	image_rgb  *c;
	int			maxd,
				bad;
	double		M[9];
	float		dst[4][2] = {{0, 0}, {37, 0}, {37, 19}, {0, 19}};

	/* cv2.getPerspectiveTransform */
	geo_perspective((const float (*)[2]) q1, (const float (*)[2]) dst, M);
	CHECK(fabs(M[0] - 0.922219928125392) < 1e-9 && fabs(M[2] - -9.998805536517406) < 1e-9 &&
		  fabs(M[6] - -0.0013559230254185251) < 1e-12, "perspective matrix %g %g %g",
		  M[0], M[2], M[6]);

	c = geo_crop_box(img, (const float (*)[2]) q1);
	CHECK(c != NULL && c->width == WARP_W && c->height == WARP_H, "crop size");
	if (c)
	{
		bad = compare(c->pixels, warp_exp, WARP_W * WARP_H * 3, &maxd);
		CHECK(bad == 0, "warp vs cv2: %d of %d differ, max %d", bad,
			  WARP_W * WARP_H * 3, maxd);
	}
	image_destroy(&c);
	c = geo_crop_box(img, (const float (*)[2]) q2);
	CHECK(c != NULL && c->width == WARP2_W && c->height == WARP2_H, "crop2 size");
	if (c)
	{
		bad = compare(c->pixels, warp2_exp, WARP2_W * WARP2_H * 3, &maxd);
		CHECK(bad == 0, "warp with replicated border vs cv2: %d of %d differ, max %d",
			  bad, WARP2_W * WARP2_H * 3, maxd);
	}
	image_destroy(&c);
	image_destroy(&img);

	/* rot90: 3x2 -> 2x3, out[i][j] = in[j][W-1-i] */
	img = synth(3, 2);
	c = geo_rot90_ccw(img);
	CHECK(c->width == 2 && c->height == 3 &&
		  memcmp(c->pixels, img->pixels + 2 * 3, 3) == 0 &&
		  memcmp(c->pixels + 3, img->pixels + (3 + 2) * 3, 3) == 0 &&
		  memcmp(c->pixels + 4 * 3, img->pixels, 3) == 0, "rot90 ccw");
	image_destroy(&c);
	image_destroy(&img);

	/* a tall box is turned upright: 10 wide, 30 high -> 30 x 10 */
	img = synth(60, 40);
	{
		float		tall[4][2] = {{5, 5}, {15, 5}, {15, 35}, {5, 35}};

		c = geo_crop_box(img, (const float (*)[2]) tall);
		CHECK(c && c->width == 30 && c->height == 10, "tall crop turned");
	}
	image_destroy(&c);
	image_destroy(&img);
}

/*
 * DB post-processing on a synthetic 64x96 probability map for a 192x128
 * image: a bar (kept), a faint bar (mean 0.4, dropped), a ring whose mean
 * is under 0.5 with its hole (both dropped), a slanted bar (kept).
 * Expected boxes: RapidOCR's DBPostProcess, filter_tag_det_res and
 * sorted_boxes on the same map.
 */
static void
test_db_postprocess(void)
{
	enum
	{
		H = 64, W = 96
	};
	static float m[H * W];
	static const int want[2][8] = {
		{2, 6, 136, 6, 136, 54, 2, 54},
		{91, 70, 191, 92, 189, 126, 84, 104},
	};
	ocr_params	p;
	ocr_det_box *b = NULL;
	char		err[128];
	int			n,
				same = 1;

	for (int i = 0; i < H * W; i++)
		m[i] = 0.05f;
	for (int y = 10; y < 20; y++)
		for (int x = 8; x < 61; x++)
			m[y * W + x] = 0.9f;
	for (int y = 30; y < 38; y++)
		for (int x = 20; x < 81; x++)
			m[y * W + x] = 0.4f;
	for (int y = 44; y < 59; y++)
		for (int x = 10; x < 41; x++)
			m[y * W + x] = (y >= 47 && y < 56 && x >= 13 && x < 38) ? 0.1f : 0.8f;
	for (int x = 50; x < 91; x++)
	{
		double		yc = 45 + (x - 50) * 0.2;

		for (int y = 0; y < H; y++)
			if (fabs(y - yc) <= 3)
				m[y * W + x] = 0.95f;
	}
	ocr_params_default(&p);
	n = ocr_db_postprocess(m, W, H, 192, 128, &p, &b, err, sizeof(err));
	CHECK(n == 2, "db boxes: %d", n);
	for (int i = 0; i < n && i < 2; i++)
		for (int k = 0; k < 8; k++)
			if ((int) b[i].pts[k / 2][k % 2] != want[i][k])
				same = 0;
	CHECK(n == 2 && same, "db boxes equal RapidOCR's");
	/* box_score_fast values RapidOCR printed for the two boxes */
	CHECK(n == 2 && fabsf(b[0].score - 0.80841749f) < 1e-6f &&
		  fabsf(b[1].score - 0.68397789f) < 1e-6f, "db scores %g %g",
		  n > 0 ? b[0].score : 0, n > 1 ? b[1].score : 0);
	free(b);
}

static void
test_ctc(void)
{
	/* 4 classes: blank, "a", "b", " "; steps a a blank a b b blank */
	const char *dict[] = {"", "a", "\xc3\xa9", " "};
	float		p[7][4] = {
		{0.1f, 0.8f, 0.05f, 0.05f},
		{0.2f, 0.6f, 0.1f, 0.1f},
		{0.9f, 0.05f, 0.05f, 0},
		{0.1f, 0.7f, 0.1f, 0.1f},
		{0.1f, 0.1f, 0.5f, 0.3f},
		{0.1f, 0.1f, 0.9f, 0},
		{0.4f, 0.1f, 0.1f, 0.4f},	/* tie: first max (blank) wins */
	};
	float		score;
	char	   *t = ocr_ctc_decode(&p[0][0], 7, 4, dict, 4, &score);

	CHECK(t && strcmp(t, "aa\xc3\xa9") == 0, "ctc text \"%s\"", t ? t : "(null)");
	/* kept steps 0, 3, 4: (0.8 + 0.7 + 0.5) / 3 */
	CHECK(fabsf(score - 2.0f / 3) < 1e-6f, "ctc score %g", score);
	free(t);
	{
		float		blank[2][4] = {{1, 0, 0, 0}, {1, 0, 0, 0}};

		t = ocr_ctc_decode(&blank[0][0], 2, 4, dict, 4, &score);
		CHECK(t && t[0] == '\0' && score == 0, "ctc all blank");
		free(t);
	}
}

static void
test_dict_and_output(void)
{
	char		path[] = "/tmp/test_ocr_dictXXXXXX";
	int			fd = mkstemp(path);
	FILE	   *f = fdopen(fd, "w");
	char	  **d = NULL;
	char		err[256];
	int			n;
	ocr_result	r;
	ocr_line	l[2];
	char	   *s;

	fputs("a\nb\r\n\xe4\xb8\xad", f);
	fclose(f);
	n = ocr_dict_load(path, &d, err, sizeof(err));
	CHECK(n == 5 && strcmp(d[0], "") == 0 && strcmp(d[1], "a") == 0 &&
		  strcmp(d[2], "b") == 0 && strcmp(d[3], "\xe4\xb8\xad") == 0 &&
		  strcmp(d[4], " ") == 0, "dictionary: %d entries", n);
	ocr_dict_free(&d, n);
	CHECK(d == NULL, "dictionary freed");
	unlink(path);
	CHECK(ocr_dict_load("/nonexistent/keys.txt", &d, err, sizeof(err)) == -1 &&
		  strstr(err, "/nonexistent/keys.txt") != NULL, "missing dictionary: %s", err);

	memset(l, 0, sizeof(l));
	l[0].text = "Hello \"x\"";
	l[0].text_score = 0.5f;
	l[1].text = "world";
	r.n_lines = 2;
	r.lines = l;
	s = ocr_result_text(&r);
	CHECK(strcmp(s, "Hello \"x\"\nworld") == 0, "text output");
	free(s);
	s = ocr_result_json(&r);
	CHECK(s && strstr(s, "\"text\":\"Hello \\\"x\\\"\"") && s[0] == '[', "json output %s", s);
	free(s);
}

/* Seconds on the monotonic clock. */
static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The detector input caps: RapidOCR's sizes kept, thin images bounded. */
static void
test_det_input_size(void)
{
	static const int cases[][4] = {
		/* h, w -> rh, rw */
		{160, 728, 736, 3360},	/* p27_banner_palette: RapidOCR's size kept */
		{1000, 1600, 992, 1600},
		{2000, 2000, 1984, 1984},
		{500, 2000, 736, 2944},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		int			rh,
					rw;

		ocr_det_input_size(cases[i][0], cases[i][1], 736, &rh, &rw);
		CHECK(rh == cases[i][2] && rw == cases[i][3], "det size of %dx%d: %dx%d",
			  cases[i][1], cases[i][0], rw, rh);
	}
	/* a 32x2000 band would be 736x46000: capped, multiples of 32 */
	{
		int			rh,
					rw;

		ocr_det_input_size(2000, 32, 736, &rh, &rw);
		CHECK(rh <= OCR_DET_MAX_SIDE && rw <= OCR_DET_MAX_SIDE &&
			  (double) rh * rw <= OCR_DET_MAX_PIXELS && rh % 32 == 0 && rw % 32 == 0 &&
			  rh >= 3968 && rw == 64, "det size of 32x2000: %dx%d", rw, rh);
		ocr_det_input_size(4000, 4000, 736, &rh, &rw);
		CHECK((double) rh * rw <= OCR_DET_MAX_PIXELS && rh == rw && rh >= 2080,
			  "det size of 4000x4000: %dx%d", rw, rh);
	}
}

/* Loads one model of dir into *m; CHECKs that it loaded. */
static void
load_model(const char *dir, const char *file, ie_model **m)
{
	char		path[1024];
	char		err[512] = "";

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	*m = ie_model_load_file(path, err, sizeof(err));
	CHECK(*m != NULL, "cannot load %s: %s", path, err);
}

/*
 * White images too thin to hold text (the reviewer's cases) and thin ones
 * that once grew to gigabytes: success, no lines, under 2 s each, and a
 * peak RSS well under what a 736x1380000 detector input needs.
 */
static void
test_thin_images(void)
{
	static const int sizes[][2] = {
		/* width, height */
		{1, 2000}, {2000, 1}, {3, 200}, {1, 30}, {5000, 1}, {1, 5000}, {1, 1},
		{4, 2000}, {2000, 4}, {8, 1500}, {20, 2000}, {40, 2000},
		{3000, 5}, {60000, 4},
	};
	const char *dir = getenv("PGINFER_MODEL_DIR");
	ie_model   *det = NULL,
			   *cls = NULL,
			   *rec = NULL;
	char	  **dict = NULL;
	int			dict_len;
	char		path[1024];
	char		err[512] = "";
	ocr_models	m;
	ocr_params	p;
	struct rusage ru;

	if (dir == NULL)
		dir = "build/models";
	load_model(dir, "ch_PP-OCRv4_det_infer.onnx", &det);
	load_model(dir, "ch_ppocr_mobile_v2.0_cls_infer.onnx", &cls);
	load_model(dir, "ch_PP-OCRv4_rec_infer.onnx", &rec);
	snprintf(path, sizeof(path), "%s/ppocr_keys_v1.txt", dir);
	dict_len = ocr_dict_load(path, &dict, err, sizeof(err));
	CHECK(dict_len > 0, "cannot load %s: %s", path, err);
	if (det == NULL || cls == NULL || rec == NULL || dict_len <= 0)
		goto done;
	m.det = det;
	m.cls = cls;
	m.rec = rec;
	m.dict = (const char *const *) dict;
	m.dict_len = dict_len;
	ocr_params_default(&p);

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
	{
		image_rgb  *img = image_new(sizes[i][0], sizes[i][1]);
		ocr_result *res = NULL;
		double		t0,
					dt;
		int			rc;

		CHECK(img != NULL, "white %dx%d: no image", sizes[i][0], sizes[i][1]);
		if (img == NULL)
			continue;
		memset(img->pixels, 255, (size_t) img->width * img->height * 3);
		t0 = now_s();
		rc = ocr_run(&m, &p, img, 0, &res, err, sizeof(err));
		dt = now_s() - t0;
		CHECK(rc == 0 && res != NULL && res->n_lines == 0,
			  "white %dx%d: rc %d, %d lines, %s", sizes[i][0], sizes[i][1], rc,
			  res ? res->n_lines : -1, rc ? err : "");
		CHECK(dt < WHITE_PAGE_MAX_S, "white %dx%d took %.2f s", sizes[i][0],
			  sizes[i][1], dt);
		ocr_result_destroy(&res);
		image_destroy(&img);
	}
	/* ru_maxrss is in KiB; the models and one capped input fit in 1 GiB */
	getrusage(RUSAGE_SELF, &ru);
	CHECK(ru.ru_maxrss < 1024L * 1024, "peak RSS %ld KiB", ru.ru_maxrss);

done:
	ocr_dict_free(&dict, dict_len > 0 ? dict_len : 0);
	ie_model_destroy(&det);
	ie_model_destroy(&cls);
	ie_model_destroy(&rec);
}

int
main(void)
{
	test_resize();
	test_normalize();
	test_min_area_rect();
	test_unclip();
	test_borders();
	test_poly_mean();
	test_warp();
	test_db_postprocess();
	test_ctc();
	test_dict_and_output();
	test_det_input_size();
	test_thin_images();
	return tu_report("test_ocr");
}
