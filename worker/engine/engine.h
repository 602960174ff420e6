/*
 * engine.h
 *	  The ONNX executor: public interface used by the worker.
 *
 * A model is loaded once (protobuf-c over the official onnx.proto), planned
 * (topological order, initializers resolved, each node bound to its
 * operator) and then run any number of times with inputs of any shape the
 * graph allows (dynamic batch, height, width).  A loaded model is read-only
 * while it runs, so one model may serve several threads, each with its own
 * ie_model_run() call.
 *
 * Ownership: every function that returns a pointer gives it to the caller,
 * who frees it with the matching *_destroy(&p) (which also sets p to NULL).
 * Errors: functions return 0 (or a pointer) on success and -1 (or NULL) on
 * failure, with a one-line message in the caller's err buffer that names
 * the model, the node and the operator where it applies.
 */
#ifndef IE_ENGINE_H
#define IE_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IE_MAX_DIMS 8

/* Element types: the values of onnx.TensorProto.DataType. */
typedef enum ie_dtype
{
	IE_UNDEFINED = 0,
	IE_FLOAT = 1,
	IE_UINT8 = 2,
	IE_INT8 = 3,
	IE_UINT16 = 4,
	IE_INT16 = 5,
	IE_INT32 = 6,
	IE_INT64 = 7,
	IE_STRING = 8,
	IE_BOOL = 9,
	IE_FLOAT16 = 10,
	IE_DOUBLE = 11,
	IE_UINT32 = 12,
	IE_UINT64 = 13
} ie_dtype;

/*
 * A dense tensor, row-major (C order), dims[0] outermost.  ndim 0 is a
 * scalar (one element).  data holds numel * ie_dtype_size(dtype) bytes,
 * 64-byte aligned, owned by the tensor.
 */
typedef struct ie_tensor
{
	ie_dtype	dtype;
	int			ndim;
	int64_t		dims[IE_MAX_DIMS];
	void	   *data;
	size_t		nbytes;
	size_t		cap;			/* bytes of data's buffer when it came from
								 * the engine's buffer cache; 0 otherwise */
} ie_tensor;

/* Bytes per element of dtype; 0 for types the engine does not hold. */
size_t		ie_dtype_size(ie_dtype dtype);

/* ONNX name of dtype ("float", "int64", ...), for messages. */
const char *ie_dtype_name(ie_dtype dtype);

/* Number of elements (product of dims; 1 for a scalar). */
int64_t		ie_tensor_numel(const ie_tensor *t);

/*
 * New tensor of the given type and shape with zeroed data.  Returns NULL
 * when the size overflows (an empty shape's with its zero dims counted as
 * 1), passes ie_set_max_tensor_bytes's limit, or memory runs out.
 */
ie_tensor  *ie_tensor_new(ie_dtype dtype, int ndim, const int64_t *dims);

/*
 * Like ie_tensor_new but the data is not zeroed: for operators that write
 * every element.
 */
ie_tensor  *ie_tensor_new_uninit(ie_dtype dtype, int ndim, const int64_t *dims);

/*
 * Tensor data of 16 KiB and more is recycled through a process-wide cache
 * of freed buffers (at most 512 MiB).  ie_tensor_cache_clear() frees what
 * it holds; ie_tensor_cache_bytes() says how much that is.
 */
void		ie_tensor_cache_clear(void);
size_t		ie_tensor_cache_bytes(void);

/*
 * Largest tensor data (bytes) the engine allocates, process-wide, and the
 * largest scratch buffer an operator allocates for its own work whose
 * size follows the input's shape (an im2col band, a ConvTranspose's
 * column buffer, a reduction's accumulators; not tables sized by a rank
 * or a kernel).  A larger one fails its operator's allocation: the run
 * returns -IE_ERR_LIMIT, its message the operator's "out of memory ..."
 * (which names the buffer) followed by the tensor's or buffer's type,
 * shape and byte count and the limit.  So does one whose byte count
 * passes SIZE_MAX / 2, with or without a limit.  An empty shape (a dim 0)
 * is held to the same bounds with its zero dims counted as 1, since
 * operators loop over and multiply its other dims: [10^15, 0] and
 * [2^40, 2^40, 0] are refused like the tensors with data they describe
 * ("an empty <type> tensor of shape [..] has other dims of N bytes, ...").
 * 0, the default, sets no limit.  For fuzzing, and for hosts that would
 * rather fail a request than swap (infer-worker --max-tensor-bytes).  The
 * CUDA executor's device memory is bounded by the device, but the host
 * copies it makes (its outputs, the inputs of the operators it leaves to
 * the CPU) are held to the limit and refused as IE_ERR_LIMIT ("over the
 * tensor limit for a host tensor: ...").
 */
void		ie_set_max_tensor_bytes(size_t bytes);

/*
 * The calling thread's last tensor that ie_tensor_new(_uninit) refused for
 * its size (over ie_set_max_tensor_bytes's limit, or a byte count past
 * SIZE_MAX / 2), as "a <type> tensor of shape [..] is N bytes, more than
 * the M bytes a tensor may take" (an empty one, [0, 262144, 2, 3]: "an
 * empty <type> tensor of shape [..] has other dims of N bytes, ...") into
 * buf (len bytes): true, and the refusal is forgotten; false when there
 * is none (the thread's last allocation succeeded or ran out of memory).
 * So a caller whose ie_tensor_new returned NULL tells a limit from memory
 * running out.
 */
bool		ie_tensor_take_refusal(char *buf, size_t len);

/* Deep copy of t, or NULL when memory runs out. */
ie_tensor  *ie_tensor_clone(const ie_tensor *t);

/* Frees *t and sets *t to NULL; a NULL *t is fine. */
void		ie_tensor_destroy(ie_tensor **t);

typedef struct ie_model ie_model;

/*
 * Loads and plans an ONNX model from a file or from bytes in memory.
 * Fails (NULL, message in err) on a file that is not a ModelProto, an
 * opset the engine does not know, an operator or attribute value the
 * engine does not implement (naming the node), or a graph that is not a
 * DAG.
 */
ie_model   *ie_model_load_file(const char *path, char *err, size_t errlen);
ie_model   *ie_model_load_bytes(const void *bytes, size_t len,
								char *err, size_t errlen);

/*
 * The math of a model's matrix products on a CUDA device (docs/gpu.md
 * "Precision").  FP32: cuBLAS default math, cuDNN FMA math.  TF32: the
 * same FP32 tensors, cuBLAS and cuDNN may use TF32 tensor cores.  FP16,
 * BF16: MatMul, Gemm and Conv take 16-bit inputs (weights converted once
 * at load, activations at the operator) and accumulate in FP32; every
 * other operator computes in FP32.  The CPU backend computes in FP32
 * whatever the precision.
 */
typedef enum ie_precision
{
	IE_PRECISION_FP32 = 0,
	IE_PRECISION_TF32 = 1,
	IE_PRECISION_FP16 = 2,
	IE_PRECISION_BF16 = 3
} ie_precision;

/*
 * Parses "fp32" (also "" and NULL), "tf32", "fp16" or "bf16" into *p;
 * 0, or -1 with a message naming the accepted values.
 */
int			ie_precision_parse(const char *s, ie_precision *p, char *err, size_t errlen);

/* "fp32", "tf32", "fp16", "bf16"; NULL for another value. */
const char *ie_precision_name(ie_precision p);

/*
 * The kind of a failed load (ie_load_opts.error) or run (the negative of
 * ie_model_run's result), decided from the engine's own message formats
 * and the device's status codes, never from names the model file holds.
 * At a run: IE_ERR_INVALID for inputs that do not fit the model and for
 * values an operator refuses (a shape it cannot take, an index out of
 * range); IE_ERR_NOT_SUPPORTED for what the engine lacks (a type an
 * operator does not compute); IE_ERR_NO_MEMORY when host or device memory
 * ran out.  A device error (CUDA, cuBLAS, cuDNN) that is not out of
 * memory is IE_ERR_INVALID too.
 */
typedef enum ie_error_kind
{
	IE_ERR_NONE = 0,
	IE_ERR_INVALID,				/* load: not a complete, valid ONNX model;
								 * run: what the model cannot take */
	IE_ERR_NOT_SUPPORTED,		/* valid, but it needs what the engine lacks */
	IE_ERR_NO_MEMORY,
	IE_ERR_LIMIT				/* run: a tensor over ie_set_max_tensor_bytes's
								 * limit, or too large to count in bytes */
} ie_error_kind;

/* Options of one model load; NULL options mean the process defaults. */
typedef struct ie_load_opts
{
	ie_precision precision;		/* default FP32 (ie_set_tf32(1): TF32) */
	const char *name;			/* what messages call a model loaded from
								 * bytes (its file name); NULL: "<memory>" */
	ie_error_kind *error;		/* where the kind of the load's failure goes
								 * (IE_ERR_NONE when it loads), or NULL */
} ie_load_opts;

/* ie_model_load_file and _bytes with options (opts may be NULL). */
ie_model   *ie_model_load_file_opts(const char *path, const ie_load_opts *opts,
									char *err, size_t errlen);
ie_model   *ie_model_load_bytes_opts(const void *bytes, size_t len,
									 const ie_load_opts *opts,
									 char *err, size_t errlen);

/* The precision model was loaded with. */
ie_precision ie_model_precision(const ie_model *model);
void		ie_model_destroy(ie_model **model);

/* Graph inputs (initializers excluded) and outputs, in declaration order. */
int			ie_model_n_inputs(const ie_model *model);
int			ie_model_n_outputs(const ie_model *model);
const char *ie_model_input_name(const ie_model *model, int i);
const char *ie_model_output_name(const ie_model *model, int i);

/*
 * Declared type and shape of input i; a dynamic dimension is -1.
 * Returns the rank, or -1 when i is out of range.
 */
int			ie_model_input_shape(const ie_model *model, int i, ie_dtype *dtype,
								 int64_t dims[IE_MAX_DIMS]);

/* Declared type and shape of output i, as ie_model_input_shape. */
int			ie_model_output_shape(const ie_model *model, int i, ie_dtype *dtype,
								  int64_t dims[IE_MAX_DIMS]);

/*
 * The name of dimension d of input i (output 0) or output i (non-zero)
 * when it is declared symbolic (ONNX TensorShapeProto.Dimension
 * dim_param, "N", "batch_size"), else NULL (a fixed or unnamed dimension,
 * no declared shape, or an index out of range).  Points into the model.
 */
const char *ie_model_dim_param(const ie_model *model, int output, int i, int d);

/* Bytes the model's weights take (initializers and Constant outputs). */
size_t		ie_model_weight_bytes(const ie_model *model);

/*
 * Runs the model.  inputs[i] feeds graph input i (ie_model_n_inputs of
 * them, in order); on success outputs[j] receives a new tensor for graph
 * output j (ie_model_n_outputs of them), owned by the caller.  Checks
 * input types and ranks against the graph's declarations.  Returns 0, or
 * on failure the negative of its kind (-IE_ERR_INVALID, which is -1,
 * -IE_ERR_NOT_SUPPORTED, -IE_ERR_NO_MEMORY) with the message in err; no
 * output is then left allocated.
 */
int			ie_model_run(const ie_model *model, const ie_tensor *const *inputs,
						 ie_tensor **outputs, char *err, size_t errlen);

/*
 * An error message of the engine's load or run functions past its
 * "model '<name>': " opening, for a caller whose own message names the
 * model; err itself when it has no such opening.  Points into err.
 */
const char *ie_message_body(const char *err);

/*
 * Image preprocessing on the model's device (docs/gpu.md).  An image:
 * 8-bit RGB pixels, interleaved, height rows of width * 3 bytes, resized
 * to resize_w x resize_h (bilinear: cv::resize INTER_LINEAR on 8-bit
 * images, the fixed-point arithmetic of worker/preprocess.c's pre_resize,
 * bit for bit; equal sizes copy).
 */
typedef struct ie_dimage ie_dimage;

typedef struct ie_image
{
	const uint8_t *pixels;		/* not owned; read during the call only */
	int			width;
	int			height;
	int			resize_w;
	int			resize_h;
	const ie_dimage *dpixels;	/* instead of pixels: an image already in the
								 * model's device memory (width and height
								 * must be its own); NULL otherwise */
} ie_image;

/*
 * Into planar float, CHW: value (v / 255 - mean[c]) / std[c] for output
 * channel c, which reads source channel 2 - c when bgr (else c); each
 * resized image lands top-left in an out_h x out_w plane, the rest is pad
 * (worker/preprocess.c's pre_normalize_chw).
 */
typedef struct ie_image_norm
{
	float		mean[3];
	float		std[3];
	int			bgr;
	float		pad;
	int			out_h;
	int			out_w;
} ie_image_norm;

/*
 * ie_model_run of a model with one input, that input made on the model's
 * CUDA device from n >= 1 images: an n x 3 x out_h x out_w float tensor,
 * row k = images[k] resized and normalised as above.  The pixels travel
 * (8 bits a channel, before resizing) in one copy, the preprocessing is one
 * kernel, and the tensor never goes through host memory.  The result is
 * what ie_model_run gives on the tensor that pre_resize and
 * pre_normalize_chw make on the host.  Errors (the negative of their kind,
 * as ie_model_run, + err): a model on the CPU ("preprocess on the host"), a
 * model of several inputs, an empty image or size, the input's checks of
 * ie_model_run, device errors, out of memory.
 */
int			ie_model_run_images(const ie_model *model, const ie_image *images, int n,
								const ie_image_norm *norm, ie_tensor **outputs,
								char *err, size_t errlen);

/*
 * Device images (docs/gpu.md, "The OCR fragment on the device"): 8-bit RGB
 * images, interleaved, kept in a CUDA device's memory between model runs,
 * so that a pipeline uploads a page once and cuts, turns and feeds its
 * pieces there.  An ie_dimage belongs to the thread that made it (its
 * memory comes from that thread's pool): use and destroy it there.  Every
 * function returns NULL / -1 with a message in err (out of device memory,
 * a device error, "built without CUDA", an empty size).
 */

/* A new device image on CUDA device `device`: a copy of width x height pixels. */
ie_dimage  *ie_dimage_upload(int device, const uint8_t *pixels, int width, int height,
							 char *err, size_t errlen);

/*
 * A new device image out_w x out_h: src warped by the perspective map
 * whose inverse is minv (row-major 3x3, output to source coordinates),
 * each pixel as ie_warp_cubic_px (warp_cubic.h: cv::warpPerspective
 * INTER_CUBIC, BORDER_REPLICATE, bit for bit), then turned 90 degrees
 * counter-clockwise (np.rot90) when rot90_ccw: out_h x out_w then.
 */
ie_dimage  *ie_dimage_warp(const ie_dimage *src, const double minv[9], int out_w, int out_h,
						   int rot90_ccw, char *err, size_t errlen);

/* Turns img by 180 degrees in place (cv::rotate ROTATE_180); 0 or -1. */
int			ie_dimage_rotate180(ie_dimage *img, char *err, size_t errlen);

/* Its size. */
void		ie_dimage_size(const ie_dimage *img, int *width, int *height);

/* Copies its width * height * 3 bytes to out (waits for the device); 0 or -1. */
int			ie_dimage_download(const ie_dimage *img, uint8_t *out, char *err, size_t errlen);

/* Frees *img (back to its thread's pool) and sets it to NULL. */
void		ie_dimage_destroy(ie_dimage **img);

/*
 * Threads one model run may use: the operators that parallelise split
 * their work over the engine's persistent thread pool (the caller's thread
 * included), and OpenBLAS is set to run serially inside each task.  n <= 0
 * picks the number of online CPUs.  Process-wide.  Results do not depend
 * on n: work is split the same way whatever the thread count.
 */
void		ie_set_threads(int n);
int			ie_get_threads(void);

/*
 * Nanoseconds on CLOCK_MONOTONIC, from an arbitrary point: the one clock
 * of the engine's thread pool and profiles, and of the worker's timings.
 */
int64_t		ie_now_ns(void);

/*
 * Devices (docs/gpu.md).  A model runs on the device that was the process
 * default when it was loaded: IE_DEVICE_CPU, or CUDA device N >= 0 when the
 * engine was built with CUDA.  On a CUDA device the weights are uploaded
 * once at load, each thread that runs models gets its own stream and
 * memory pool, and nodes without a CUDA kernel run on the CPU with copies.
 */
#define IE_DEVICE_CPU (-1)

/*
 * Parses "cpu", "cuda" (device 0) or "cuda:N" into *device; 0, or -1 with
 * a message naming the accepted forms.
 */
int			ie_device_parse(const char *spec, int *device, char *err, size_t errlen);

/*
 * Makes device the default for models loaded from now on, after checking
 * that it can be used (a CUDA device: present, driver loaded); 0, or -1
 * with the cause in err ("no CUDA device", "built without CUDA", ...) and
 * the default unchanged.  Process-wide.
 */
int			ie_set_device(int device, char *err, size_t errlen);
int			ie_get_device(void);

/*
 * Whether models loaded from now on without load options (ie_load_opts)
 * on a CUDA device get IE_PRECISION_TF32 instead of FP32: cuBLAS and cuDNN
 * may use TF32 tensor cores (about 1e-3 relative error per product instead
 * of FP32's 1e-7); off by default.  Process-wide; no effect on the CPU.
 */
void		ie_set_tf32(int on);
int			ie_get_tf32(void);

/* Formats device as "cpu" or "cuda:N" into buf (len bytes); returns buf. */
const char *ie_device_str(int device, char *buf, size_t len);

/*
 * Free and total memory of CUDA device `device` in bytes (cudaMemGetInfo);
 * 0, or -1 with a message for the CPU or when the device cannot be asked.
 */
int			ie_device_memory(int device, uint64_t *free_bytes, uint64_t *total_bytes,
							 char *err, size_t errlen);

/* The device model runs on (IE_DEVICE_CPU or a CUDA device index). */
int			ie_model_device(const ie_model *model);

#endif							/* IE_ENGINE_H */
