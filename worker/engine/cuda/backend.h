/*
 * backend.h
 *	  The engine's CUDA backend as the rest of the engine sees it
 *	  (internal): checking a CUDA device, uploading a model's weights,
 *	  running a model on the device, and device memory.
 *
 * The backend is a plugin, libinferengine_cuda.so (cuda/device.c, exec.c,
 * ops.c, kernels.cu, linked with cudart, cuBLAS and cuDNN), loaded by
 * cuda/loader.c with dlopen the first time a device is asked for.  So a
 * worker that runs on the CPU neither loads nor maps CUDA's libraries
 * (they would add about 150 MB of resident memory at start), and a binary
 * built with CUDA still starts on a machine without it.  The ie_cuda_*
 * functions below are the loader's; the plugin's entry points are the
 * iecu_* functions, with the same contracts.  In a build without nvcc the
 * loader fails every call with "built without CUDA".
 *
 * Threading: each thread that runs a model on a device gets its own CUDA
 * stream, cuBLAS and cuDNN handles, device memory pool and pinned staging
 * buffer (device.c), created on its first run and freed when it exits.
 * Loading the plugin is done once (pthread_once).
 */
#ifndef IE_CUDA_BACKEND_H
#define IE_CUDA_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include "worker/engine/engine.h"

struct ie_model;

/*
 * A device image (engine.h): 8-bit RGB, interleaved, width * height * 3
 * bytes at ptr in CUDA device `device`'s memory, from the pool of the
 * thread whose context is owner (cap: the buffer's capacity).
 */
struct ie_dimage
{
	int			device;
	int			width;
	int			height;
	void	   *ptr;
	size_t		cap;
	void	   *owner;
};

/* Whether the engine was built with the CUDA backend. */
bool		ie_cuda_built(void);

/*
 * Checks that CUDA device `device` exists and can be used (plugin loaded,
 * driver present, context created); 0, or -1 with the cause in err ("no
 * CUDA device", "CUDA driver ...", "built without CUDA").
 */
int			ie_cuda_check_device(int device, char *err, size_t errlen);

/* Free and total memory of device (cudaMemGetInfo), bytes; 0 or -1 + err. */
int			ie_cuda_mem_info(int device, uint64_t *free_bytes, uint64_t *total_bytes,
							 char *err, size_t errlen);

/*
 * Uploads m's constant tensors to m->device and records which nodes have a
 * native kernel; logs once (stderr) the operators that will run on the CPU.
 * Returns 0, or on failure, with a message (the model is then released by
 * its destroy), -IE_ERR_NO_MEMORY when memory ran out and
 * -IE_ERR_NOT_SUPPORTED otherwise (no backend, no device, a device error:
 * the device cannot take the model).
 */
int			ie_cuda_model_prepare(struct ie_model *m, char *err, size_t errlen);

/* Frees what ie_cuda_model_prepare made (nothing for a model never prepared). */
void		ie_cuda_model_release(struct ie_model *m);

/* ie_model_run for a model on a CUDA device (same contract, engine.h). */
int			ie_cuda_model_run(const struct ie_model *m, const ie_tensor *const *inputs,
							  ie_tensor **outputs, char *err, size_t errlen);

/* ie_model_run_images for a model on a CUDA device (same contract, engine.h). */
int			ie_cuda_model_run_images(const struct ie_model *m, const ie_image *images, int n,
									 const ie_image_norm *norm, ie_tensor **outputs,
									 char *err, size_t errlen);

/* The device-image functions of engine.h, through the plugin (same contracts). */
ie_dimage  *ie_cuda_dimage_upload(int device, const uint8_t *pixels, int width, int height,
								  char *err, size_t errlen);
ie_dimage  *ie_cuda_dimage_warp(const ie_dimage *src, const double minv[9], int out_w,
								int out_h, int rot90_ccw, char *err, size_t errlen);
int			ie_cuda_dimage_rotate180(ie_dimage *img, char *err, size_t errlen);
int			ie_cuda_dimage_download(const ie_dimage *img, uint8_t *out, char *err,
									size_t errlen);
void		ie_cuda_dimage_destroy(ie_dimage *img);

/* The plugin's entry points (same contracts as the ie_cuda_* above). */
int			iecu_check_device(int device, char *err, size_t errlen);
int			iecu_mem_info(int device, uint64_t *free_bytes, uint64_t *total_bytes,
						  char *err, size_t errlen);
int			iecu_model_prepare(struct ie_model *m, char *err, size_t errlen);
void		iecu_model_release(struct ie_model *m);
int			iecu_model_run(const struct ie_model *m, const ie_tensor *const *inputs,
						   ie_tensor **outputs, char *err, size_t errlen);
int			iecu_model_run_images(const struct ie_model *m, const ie_image *images, int n,
								  const ie_image_norm *norm, ie_tensor **outputs,
								  char *err, size_t errlen);
ie_dimage  *iecu_dimage_upload(int device, const uint8_t *pixels, int width, int height,
							   char *err, size_t errlen);
ie_dimage  *iecu_dimage_warp(const ie_dimage *src, const double minv[9], int out_w,
							 int out_h, int rot90_ccw, char *err, size_t errlen);
int			iecu_dimage_rotate180(ie_dimage *img, char *err, size_t errlen);
int			iecu_dimage_download(const ie_dimage *img, uint8_t *out, char *err,
								 size_t errlen);
void		iecu_dimage_destroy(ie_dimage *img);

#endif							/* IE_CUDA_BACKEND_H */
