/*
 * emu_cuda.c
 *	  A host emulation of the parts of the CUDA runtime, cuBLAS and cuDNN
 *	  that the engine's CUDA backend calls, for testing the backend's host
 *	  code (worker/engine/cuda/device.c, exec.c, ops.c) on machines without
 *	  a GPU: tests/gpu/gpu.mk links those objects with this file and
 *	  emu_kernels.c into libinferengine_cudaemu.so, which the engine loads
 *	  in place of the real plugin (IE_CUDA_BACKEND).
 *
 * It is a test double of third-party libraries, not of the project: it
 * checks what the backend decides (which operator runs where, shapes,
 * strides, broadcasting, GEMM transposes and leading dimensions, cuDNN
 * descriptors, pools, copies), never the GPU itself.  "Device" memory is
 * host memory filled with 0xFF bytes (NaN as float) when allocated, so an
 * output element a kernel forgets to write shows up as NaN.  Streams are
 * synchronous.  The arithmetic follows each API's documented semantics
 * (BLAS column-major GEMM with beta == 0 not reading C; cuDNN NCHW
 * cross-correlation with symmetric padding and groups, its data gradient,
 * and pooling with or without padding in the average).  GEMMs and the
 * forward convolution also take IEEE half and bfloat16 data (emu_half.h:
 * software conversions, round to nearest even) with float accumulation;
 * a half convolution output is rounded to half, as cuDNN's is.  The algorithm
 * heuristics offer Winograd first, so that the backend's FP32 rule
 * (never Winograd) is exercised.
 *
 * Each function below stands in for the CUDA, cuBLAS or cuDNN function of
 * the same name and keeps its documented contract for the arguments the
 * backend passes (others return an error status).  No shared state: safe
 * from any thread.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "tests/gpu/emu/emu_half.h"

/*
 * Calls that cost a round trip to a real GPU, counted; with IE_EMU_COUNTS
 * set in the environment they are printed to stderr at exit (to see what a
 * run synchronises and copies, which a real device makes expensive).
 */
static struct
{
	long		sync,
				h2d,
				d2h,
				d2d,
				malloc;
}			emu_counts;

static void
emu_counts_print(void)
{
	fprintf(stderr, "cuda-emu: %ld synchronisations, %ld copies host to device, %ld device to host, %ld device to device, %ld cudaMalloc\n",
			emu_counts.sync, emu_counts.h2d, emu_counts.d2h, emu_counts.d2d, emu_counts.malloc);
}

static void
emu_count_copy(enum cudaMemcpyKind kind)
{
	static bool registered = false;

	if (!registered && getenv("IE_EMU_COUNTS") != NULL)
		atexit(emu_counts_print);
	registered = true;
	if (kind == cudaMemcpyHostToDevice)
		emu_counts.h2d++;
	else if (kind == cudaMemcpyDeviceToHost)
		emu_counts.d2h++;
	else
		emu_counts.d2d++;
}

/* ---- CUDA runtime ---- */

struct CUstream_st
{
	int			unused;
};

const char *
cudaGetErrorString(cudaError_t error)
{
	return error == cudaSuccess ? "no error" : "emulated CUDA error";
}

const char *
cudaGetErrorName(cudaError_t error)
{
	return error == cudaSuccess ? "cudaSuccess" : "cudaErrorEmulated";
}

cudaError_t
cudaGetDeviceCount(int *count)
{
	*count = 1;
	return cudaSuccess;
}

cudaError_t
cudaSetDevice(int device)
{
	return device == 0 ? cudaSuccess : cudaErrorInvalidDevice;
}

cudaError_t
cudaGetLastError(void)
{
	return cudaSuccess;
}

cudaError_t
cudaMemGetInfo(size_t *free_bytes, size_t *total)
{
	*free_bytes = (size_t) 12 << 30;
	*total = (size_t) 16 << 30;
	return cudaSuccess;
}

cudaError_t
cudaMalloc(void **devPtr, size_t size)
{
	emu_counts.malloc++;
	/* no more than the device's memory (cudaMemGetInfo's total) */
	if (size > ((size_t) 16 << 30))
	{
		*devPtr = NULL;
		return cudaErrorMemoryAllocation;
	}
	*devPtr = malloc(size > 0 ? size : 1);
	if (*devPtr == NULL)
		return cudaErrorMemoryAllocation;
	memset(*devPtr, 0xff, size);	/* NaN: unwritten outputs show */
	return cudaSuccess;
}

cudaError_t
cudaFree(void *devPtr)
{
	free(devPtr);
	return cudaSuccess;
}

cudaError_t
cudaMallocHost(void **ptr, size_t size)
{
	*ptr = malloc(size > 0 ? size : 1);
	return *ptr == NULL ? cudaErrorMemoryAllocation : cudaSuccess;
}

cudaError_t
cudaFreeHost(void *ptr)
{
	free(ptr);
	return cudaSuccess;
}

cudaError_t
cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags)
{
	(void) flags;
	*pStream = calloc(1, sizeof(struct CUstream_st));
	return *pStream == NULL ? cudaErrorMemoryAllocation : cudaSuccess;
}

cudaError_t
cudaStreamDestroy(cudaStream_t stream)
{
	free(stream);
	return cudaSuccess;
}

cudaError_t
cudaStreamSynchronize(cudaStream_t stream)
{
	(void) stream;
	emu_counts.sync++;
	return cudaSuccess;
}

cudaError_t
cudaDeviceSynchronize(void)
{
	return cudaSuccess;
}

cudaError_t
cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
	emu_count_copy(kind);
	memmove(dst, src, count);
	return cudaSuccess;
}

cudaError_t
cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
				cudaStream_t stream)
{
	(void) stream;
	return cudaMemcpy(dst, src, count, kind);
}

cudaError_t
cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
				  size_t height, enum cudaMemcpyKind kind, cudaStream_t stream)
{
	emu_count_copy(kind);
	(void) stream;
	if (width > dpitch || width > spitch)
		return cudaErrorInvalidPitchValue;
	for (size_t r = 0; r < height; r++)
		memmove((char *) dst + r * dpitch, (const char *) src + r * spitch, width);
	return cudaSuccess;
}

cudaError_t
cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream)
{
	(void) stream;
	memset(devPtr, value, count);
	return cudaSuccess;
}

/* ---- cuBLAS ---- */

struct cublasContext
{
	cudaStream_t stream;
	cublasMath_t math;
};

cublasStatus_t
cublasCreate(cublasHandle_t *handle)
{
	*handle = calloc(1, sizeof(struct cublasContext));
	return *handle == NULL ? CUBLAS_STATUS_ALLOC_FAILED : CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasDestroy(cublasHandle_t handle)
{
	free(handle);
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasSetStream(cublasHandle_t handle, cudaStream_t streamId)
{
	handle->stream = streamId;
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode)
{
	handle->math = mode;
	return CUBLAS_STATUS_SUCCESS;
}

const char *
cublasGetStatusString(cublasStatus_t status)
{
	return status == CUBLAS_STATUS_SUCCESS ? "success" : "emulated cuBLAS error";
}

const char *
cublasGetStatusName(cublasStatus_t status)
{
	return status == CUBLAS_STATUS_SUCCESS ? "CUBLAS_STATUS_SUCCESS" : "CUBLAS_STATUS_EMULATED";
}

/* One column-major C = alpha op(A) op(B) + beta C (BLAS sgemm). */
static cublasStatus_t
sgemm1(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, float alpha,
	   const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc)
{
	if (m < 0 || n < 0 || k < 0 || ldc < (m > 1 ? m : 1) ||
		lda < ((ta == CUBLAS_OP_N ? m : k) > 1 ? (ta == CUBLAS_OP_N ? m : k) : 1) ||
		ldb < ((tb == CUBLAS_OP_N ? k : n) > 1 ? (tb == CUBLAS_OP_N ? k : n) : 1))
		return CUBLAS_STATUS_INVALID_VALUE;
	for (int j = 0; j < n; j++)
		for (int i = 0; i < m; i++)
		{
			double		acc = 0;

			for (int l = 0; l < k; l++)
			{
				float		a = ta == CUBLAS_OP_N ? A[i + (size_t) l * lda] : A[l + (size_t) i * lda];
				float		b = tb == CUBLAS_OP_N ? B[l + (size_t) j * ldb] : B[j + (size_t) l * ldb];

				acc += (double) a * b;
			}
			/* beta == 0: C is not read (it may hold anything) */
			C[i + (size_t) j * ldc] = (float) (alpha * acc) +
				(beta == 0.0f ? 0.0f : beta * C[i + (size_t) j * ldc]);
		}
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasSgemm(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
			int m, int n, int k, const float *alpha, const float *A, int lda,
			const float *B, int ldb, const float *beta, float *C, int ldc)
{
	(void) handle;
	return sgemm1(transa, transb, m, n, k, *alpha, A, lda, B, ldb, *beta, C, ldc);
}

cublasStatus_t
cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa,
						  cublasOperation_t transb, int m, int n, int k, const float *alpha,
						  const float *A, int lda, long long int strideA, const float *B,
						  int ldb, long long int strideB, const float *beta, float *C,
						  int ldc, long long int strideC, int batchCount)
{
	(void) handle;
	if (batchCount < 0)
		return CUBLAS_STATUS_INVALID_VALUE;
	for (int b = 0; b < batchCount; b++)
	{
		cublasStatus_t s = sgemm1(transa, transb, m, n, k, *alpha, A + b * strideA, lda,
								  B + b * strideB, ldb, *beta, C + b * strideC, ldc);

		if (s != CUBLAS_STATUS_SUCCESS)
			return s;
	}
	return CUBLAS_STATUS_SUCCESS;
}

/* Element i of a GEMM operand of type t (32F, 16F or 16BF), as a float. */
static float
gemm_load(const void *p, cudaDataType t, size_t i)
{
	if (t == CUDA_R_16F)
		return emu_f16_to_f32(((const uint16_t *) p)[i]);
	if (t == CUDA_R_16BF)
		return emu_bf16_to_f32(((const uint16_t *) p)[i]);
	return ((const float *) p)[i];
}

/*
 * One column-major C = alpha op(A) op(B) + beta C of cublasGemmEx: A and B
 * of one type, 32F, 16F or 16BF (read exactly), C 32F, accumulated in
 * float as CUBLAS_COMPUTE_32F does (in the order of l).
 */
static cublasStatus_t
gemm_ex1(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, float alpha,
		 const void *A, int lda, const void *B, int ldb, cudaDataType ab, float beta,
		 float *C, int ldc)
{
	if (m < 0 || n < 0 || k < 0 || ldc < (m > 1 ? m : 1) ||
		lda < ((ta == CUBLAS_OP_N ? m : k) > 1 ? (ta == CUBLAS_OP_N ? m : k) : 1) ||
		ldb < ((tb == CUBLAS_OP_N ? k : n) > 1 ? (tb == CUBLAS_OP_N ? k : n) : 1))
		return CUBLAS_STATUS_INVALID_VALUE;
	for (int j = 0; j < n; j++)
		for (int i = 0; i < m; i++)
		{
			float		acc = 0;

			for (int l = 0; l < k; l++)
				acc += gemm_load(A, ab, ta == CUBLAS_OP_N ? i + (size_t) l * lda : l + (size_t) i * lda) *
					gemm_load(B, ab, tb == CUBLAS_OP_N ? l + (size_t) j * ldb : j + (size_t) l * ldb);
			C[i + (size_t) j * ldc] = alpha * acc +
				(beta == 0.0f ? 0.0f : beta * C[i + (size_t) j * ldc]);
		}
	return CUBLAS_STATUS_SUCCESS;
}

/* The type combinations the emulation of cublasGemmEx takes. */
static bool
gemm_ex_types(cudaDataType a, cudaDataType b, cudaDataType c, cublasComputeType_t ct)
{
	return a == b && c == CUDA_R_32F && ct == CUBLAS_COMPUTE_32F &&
		(a == CUDA_R_32F || a == CUDA_R_16F || a == CUDA_R_16BF);
}

cublasStatus_t
cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
			 int m, int n, int k, const void *alpha, const void *A, cudaDataType Atype,
			 int lda, const void *B, cudaDataType Btype, int ldb, const void *beta, void *C,
			 cudaDataType Ctype, int ldc, cublasComputeType_t computeType,
			 cublasGemmAlgo_t algo)
{
	(void) handle;
	(void) algo;
	if (!gemm_ex_types(Atype, Btype, Ctype, computeType))
		return CUBLAS_STATUS_NOT_SUPPORTED;
	return gemm_ex1(transa, transb, m, n, k, *(const float *) alpha, A, lda, B, ldb, Atype,
					*(const float *) beta, C, ldc);
}

cublasStatus_t
cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa,
						   cublasOperation_t transb, int m, int n, int k, const void *alpha,
						   const void *A, cudaDataType Atype, int lda, long long int strideA,
						   const void *B, cudaDataType Btype, int ldb, long long int strideB,
						   const void *beta, void *C, cudaDataType Ctype, int ldc,
						   long long int strideC, int batchCount,
						   cublasComputeType_t computeType, cublasGemmAlgo_t algo)
{
	size_t		es = Atype == CUDA_R_32F ? 4 : 2;

	(void) handle;
	(void) algo;
	if (batchCount < 0)
		return CUBLAS_STATUS_INVALID_VALUE;
	if (!gemm_ex_types(Atype, Btype, Ctype, computeType))
		return CUBLAS_STATUS_NOT_SUPPORTED;
	for (int b = 0; b < batchCount; b++)
	{
		cublasStatus_t s = gemm_ex1(transa, transb, m, n, k, *(const float *) alpha,
									(const char *) A + b * strideA * es, lda,
									(const char *) B + b * strideB * es, ldb, Atype,
									*(const float *) beta, (float *) C + b * strideC, ldc);

		if (s != CUBLAS_STATUS_SUCCESS)
			return s;
	}
	return CUBLAS_STATUS_SUCCESS;
}

/* ---- cuDNN ---- */

struct cudnnContext
{
	cudaStream_t stream;
};
struct cudnnTensorStruct
{
	cudnnDataType_t type;		/* FLOAT, HALF or BFLOAT16 */
	int			n,
				c,
				h,
				w;
};
struct cudnnFilterStruct
{
	cudnnDataType_t type;
	int			k,
				c,
				h,
				w;
};
struct cudnnConvolutionStruct
{
	int			ph,
				pw,
				u,
				v,
				dh,
				dw,
				groups;
	cudnnMathType_t math;
};
struct cudnnPoolingStruct
{
	cudnnPoolingMode_t mode;
	int			wh,
				ww,
				ph,
				pw,
				sh,
				sw;
};

/* The data types the emulated descriptors take: float, half, bfloat16. */
static bool
emu_dnn_type(cudnnDataType_t t)
{
	return t == CUDNN_DATA_FLOAT || t == CUDNN_DATA_HALF || t == CUDNN_DATA_BFLOAT16;
}

/* Element i of a cuDNN tensor of type t, as a float. */
static float
dnn_load(const void *p, cudnnDataType_t t, size_t i)
{
	if (t == CUDNN_DATA_HALF)
		return emu_f16_to_f32(((const uint16_t *) p)[i]);
	if (t == CUDNN_DATA_BFLOAT16)
		return emu_bf16_to_f32(((const uint16_t *) p)[i]);
	return ((const float *) p)[i];
}

/* Stores v, rounded to type t (to nearest even), as element i. */
static void
dnn_store(void *p, cudnnDataType_t t, size_t i, float v)
{
	if (t == CUDNN_DATA_HALF)
		((uint16_t *) p)[i] = emu_f32_to_f16(v);
	else if (t == CUDNN_DATA_BFLOAT16)
		((uint16_t *) p)[i] = emu_f32_to_bf16(v);
	else
		((float *) p)[i] = v;
}

const char *
cudnnGetErrorString(cudnnStatus_t status)
{
	return status == CUDNN_STATUS_SUCCESS ? "CUDNN_STATUS_SUCCESS" : "emulated cuDNN error";
}

cudnnStatus_t
cudnnCreate(cudnnHandle_t *handle)
{
	*handle = calloc(1, sizeof(struct cudnnContext));
	return *handle == NULL ? CUDNN_STATUS_ALLOC_FAILED : CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnDestroy(cudnnHandle_t handle)
{
	free(handle);
	return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnSetStream(cudnnHandle_t handle, cudaStream_t streamId)
{
	handle->stream = streamId;
	return CUDNN_STATUS_SUCCESS;
}

#define CREATE_DESTROY(T, S, CREATE, DESTROY) \
cudnnStatus_t CREATE(T *d) \
{ \
	*d = calloc(1, sizeof(struct S)); \
	return *d == NULL ? CUDNN_STATUS_ALLOC_FAILED : CUDNN_STATUS_SUCCESS; \
} \
cudnnStatus_t DESTROY(T d) \
{ \
	free(d); \
	return CUDNN_STATUS_SUCCESS; \
}

CREATE_DESTROY(cudnnTensorDescriptor_t, cudnnTensorStruct, cudnnCreateTensorDescriptor,
			   cudnnDestroyTensorDescriptor)
CREATE_DESTROY(cudnnFilterDescriptor_t, cudnnFilterStruct, cudnnCreateFilterDescriptor,
			   cudnnDestroyFilterDescriptor)
CREATE_DESTROY(cudnnConvolutionDescriptor_t, cudnnConvolutionStruct,
			   cudnnCreateConvolutionDescriptor, cudnnDestroyConvolutionDescriptor)
CREATE_DESTROY(cudnnPoolingDescriptor_t, cudnnPoolingStruct, cudnnCreatePoolingDescriptor,
			   cudnnDestroyPoolingDescriptor)

cudnnStatus_t
cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t d, cudnnTensorFormat_t format,
						   cudnnDataType_t dataType, int n, int c, int h, int w)
{
	if (format != CUDNN_TENSOR_NCHW || !emu_dnn_type(dataType) || n < 1 || c < 1 ||
		h < 1 || w < 1)
		return CUDNN_STATUS_BAD_PARAM;
	d->type = dataType;
	d->n = n;
	d->c = c;
	d->h = h;
	d->w = w;
	return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t d, cudnnDataType_t dataType,
						   cudnnTensorFormat_t format, int k, int c, int h, int w)
{
	if (format != CUDNN_TENSOR_NCHW || !emu_dnn_type(dataType) || k < 1 || c < 1 ||
		h < 1 || w < 1)
		return CUDNN_STATUS_BAD_PARAM;
	d->type = dataType;
	d->k = k;
	d->c = c;
	d->h = h;
	d->w = w;
	return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t d, int pad_h, int pad_w, int u,
								int v, int dilation_h, int dilation_w,
								cudnnConvolutionMode_t mode, cudnnDataType_t computeType)
{
	if (mode != CUDNN_CROSS_CORRELATION || computeType != CUDNN_DATA_FLOAT || pad_h < 0 ||
		pad_w < 0 || u < 1 || v < 1 || dilation_h < 1 || dilation_w < 1)
		return CUDNN_STATUS_BAD_PARAM;
	d->ph = pad_h;
	d->pw = pad_w;
	d->u = u;
	d->v = v;
	d->dh = dilation_h;
	d->dw = dilation_w;
	if (d->groups == 0)
		d->groups = 1;
	return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t d, int groupCount)
{
	if (groupCount < 1)
		return CUDNN_STATUS_BAD_PARAM;
	d->groups = groupCount;
	return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t d, cudnnMathType_t mathType)
{
	d->math = mathType;
	return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnGetConvolution2dForwardOutputDim(const cudnnConvolutionDescriptor_t conv,
									  const cudnnTensorDescriptor_t x,
									  const cudnnFilterDescriptor_t w, int *n, int *c, int *h,
									  int *wo)
{
	if (x->c != w->c * conv->groups || w->k % conv->groups != 0)
		return CUDNN_STATUS_BAD_PARAM;
	*n = x->n;
	*c = w->k;
	*h = 1 + (x->h + 2 * conv->ph - ((w->h - 1) * conv->dh + 1)) / conv->u;
	*wo = 1 + (x->w + 2 * conv->pw - ((w->w - 1) * conv->dw + 1)) / conv->v;
	return *h >= 1 && *wo >= 1 ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_BAD_PARAM;
}

cudnnStatus_t
cudnnGetConvolutionForwardAlgorithm_v7(cudnnHandle_t handle, const cudnnTensorDescriptor_t srcDesc,
									   const cudnnFilterDescriptor_t filterDesc,
									   const cudnnConvolutionDescriptor_t convDesc,
									   const cudnnTensorDescriptor_t destDesc,
									   const int requestedAlgoCount, int *returnedAlgoCount,
									   cudnnConvolutionFwdAlgoPerf_t *perf)
{
	(void) handle;
	(void) srcDesc;
	(void) filterDesc;
	(void) destDesc;
	*returnedAlgoCount = requestedAlgoCount < 2 ? requestedAlgoCount : 2;
	memset(perf, 0, sizeof(*perf) * (size_t) *returnedAlgoCount);
	if (*returnedAlgoCount > 0)
	{
		perf[0].algo = CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD;
		perf[0].mathType = convDesc->math;
	}
	if (*returnedAlgoCount > 1)
	{
		perf[1].algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
		perf[1].mathType = convDesc->math;
	}
	return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnGetConvolutionForwardWorkspaceSize(cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc,
										const cudnnFilterDescriptor_t wDesc,
										const cudnnConvolutionDescriptor_t convDesc,
										const cudnnTensorDescriptor_t yDesc,
										cudnnConvolutionFwdAlgo_t algo, size_t *sizeInBytes)
{
	(void) handle;
	(void) xDesc;
	(void) wDesc;
	(void) convDesc;
	(void) yDesc;
	(void) algo;
	*sizeInBytes = 4096;		/* the backend must supply a workspace */
	return CUDNN_STATUS_SUCCESS;
}

/* The workspace the emulation asked for must be there (the backend got it from its pool). */
static cudnnStatus_t
check_ws(const void *ws, size_t n)
{
	return ws != NULL && n >= 4096 ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_BAD_PARAM;
}

cudnnStatus_t
cudnnConvolutionForward(cudnnHandle_t handle, const void *alpha,
						const cudnnTensorDescriptor_t xd, const void *xv,
						const cudnnFilterDescriptor_t wd, const void *wv,
						const cudnnConvolutionDescriptor_t cd, cudnnConvolutionFwdAlgo_t algo,
						void *workSpace, size_t workSpaceSizeInBytes, const void *beta,
						const cudnnTensorDescriptor_t yd, void *yv)
{
	float		a = *(const float *) alpha,
				b = *(const float *) beta;
	int			on,
				oc,
				oh,
				ow;
	int			kg = wd->k / cd->groups;
	cudnnDataType_t t = xd->type;

	(void) handle;
	(void) algo;
	/* float, or half / bfloat16 data with float compute (PSEUDO_*_CONFIG) */
	if (check_ws(workSpace, workSpaceSizeInBytes) != CUDNN_STATUS_SUCCESS ||
		wd->type != t || yd->type != t ||
		cudnnGetConvolution2dForwardOutputDim(cd, xd, wd, &on, &oc, &oh, &ow) != CUDNN_STATUS_SUCCESS ||
		on != yd->n || oc != yd->c || oh != yd->h || ow != yd->w)
		return CUDNN_STATUS_BAD_PARAM;
	for (int n = 0; n < on; n++)
		for (int k = 0; k < oc; k++)
		{
			int			g = k / kg;

			for (int i = 0; i < oh; i++)
				for (int j = 0; j < ow; j++)
				{
					double		acc = 0;
					size_t		yi = (((size_t) n * oc + k) * oh + i) * ow + j;

					for (int c = 0; c < wd->c; c++)
						for (int r = 0; r < wd->h; r++)
							for (int s = 0; s < wd->w; s++)
							{
								int			ih = i * cd->u - cd->ph + r * cd->dh,
											iw = j * cd->v - cd->pw + s * cd->dw;

								if (ih < 0 || ih >= xd->h || iw < 0 || iw >= xd->w)
									continue;
								acc += (double) dnn_load(xv, t, (((size_t) n * xd->c + g * wd->c + c) * xd->h + ih) * xd->w + iw) *
									dnn_load(wv, t, (((size_t) k * wd->c + c) * wd->h + r) * wd->w + s);
							}
					dnn_store(yv, t, yi, (float) (a * acc) +
							  (b == 0.0f ? 0.0f : b * dnn_load(yv, t, yi)));
				}
		}
	return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnGetConvolutionBackwardDataAlgorithm_v7(cudnnHandle_t handle,
											const cudnnFilterDescriptor_t filterDesc,
											const cudnnTensorDescriptor_t diffDesc,
											const cudnnConvolutionDescriptor_t convDesc,
											const cudnnTensorDescriptor_t gradDesc,
											const int requestedAlgoCount, int *returnedAlgoCount,
											cudnnConvolutionBwdDataAlgoPerf_t *perf)
{
	(void) handle;
	(void) filterDesc;
	(void) diffDesc;
	(void) gradDesc;
	*returnedAlgoCount = requestedAlgoCount < 2 ? requestedAlgoCount : 2;
	memset(perf, 0, sizeof(*perf) * (size_t) *returnedAlgoCount);
	if (*returnedAlgoCount > 0)
	{
		perf[0].algo = CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD;
		perf[0].mathType = convDesc->math;
	}
	if (*returnedAlgoCount > 1)
	{
		perf[1].algo = CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
		perf[1].mathType = convDesc->math;
	}
	return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnGetConvolutionBackwardDataWorkspaceSize(cudnnHandle_t handle,
											 const cudnnFilterDescriptor_t wDesc,
											 const cudnnTensorDescriptor_t dyDesc,
											 const cudnnConvolutionDescriptor_t convDesc,
											 const cudnnTensorDescriptor_t dxDesc,
											 cudnnConvolutionBwdDataAlgo_t algo,
											 size_t *sizeInBytes)
{
	(void) handle;
	(void) wDesc;
	(void) dyDesc;
	(void) convDesc;
	(void) dxDesc;
	(void) algo;
	*sizeInBytes = 4096;
	return CUDNN_STATUS_SUCCESS;
}

/* dx = the gradient of the forward convolution dx -> dy with respect to its input. */
cudnnStatus_t
cudnnConvolutionBackwardData(cudnnHandle_t handle, const void *alpha,
							 const cudnnFilterDescriptor_t wd, const void *wv,
							 const cudnnTensorDescriptor_t dyd, const void *dyv,
							 const cudnnConvolutionDescriptor_t cd,
							 cudnnConvolutionBwdDataAlgo_t algo, void *workSpace,
							 size_t workSpaceSizeInBytes, const void *beta,
							 const cudnnTensorDescriptor_t dxd, void *dxv)
{
	const float *w = wv,
			   *dy = dyv;
	float	   *dx = dxv;
	float		a = *(const float *) alpha,
				b = *(const float *) beta;
	int			on,
				oc,
				oh,
				ow;
	int			kg = wd->k / cd->groups;
	size_t		nx = (size_t) dxd->n * dxd->c * dxd->h * dxd->w;
	double	   *acc;

	(void) handle;
	(void) algo;
	if (check_ws(workSpace, workSpaceSizeInBytes) != CUDNN_STATUS_SUCCESS ||
		dxd->type != CUDNN_DATA_FLOAT || dyd->type != CUDNN_DATA_FLOAT ||
		wd->type != CUDNN_DATA_FLOAT ||
		cudnnGetConvolution2dForwardOutputDim(cd, dxd, wd, &on, &oc, &oh, &ow) != CUDNN_STATUS_SUCCESS ||
		on != dyd->n || oc != dyd->c || oh != dyd->h || ow != dyd->w)
		return CUDNN_STATUS_BAD_PARAM;
	acc = calloc(nx, sizeof(double));
	if (acc == NULL)
		return CUDNN_STATUS_ALLOC_FAILED;
	for (int n = 0; n < on; n++)
		for (int k = 0; k < oc; k++)
		{
			int			g = k / kg;

			for (int i = 0; i < oh; i++)
				for (int j = 0; j < ow; j++)
				{
					float		d = dy[(((size_t) n * oc + k) * oh + i) * ow + j];

					for (int c = 0; c < wd->c; c++)
						for (int r = 0; r < wd->h; r++)
							for (int s = 0; s < wd->w; s++)
							{
								int			ih = i * cd->u - cd->ph + r * cd->dh,
											iw = j * cd->v - cd->pw + s * cd->dw;

								if (ih < 0 || ih >= dxd->h || iw < 0 || iw >= dxd->w)
									continue;
								acc[(((size_t) n * dxd->c + g * wd->c + c) * dxd->h + ih) * dxd->w + iw] +=
									(double) d * w[(((size_t) k * wd->c + c) * wd->h + r) * wd->w + s];
							}
				}
		}
	for (size_t i = 0; i < nx; i++)
		dx[i] = (float) (a * acc[i]) + (b == 0.0f ? 0.0f : b * dx[i]);
	free(acc);
	return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnSetPooling2dDescriptor(cudnnPoolingDescriptor_t d, cudnnPoolingMode_t mode,
							cudnnNanPropagation_t maxpoolingNanOpt, int windowHeight,
							int windowWidth, int verticalPadding, int horizontalPadding,
							int verticalStride, int horizontalStride)
{
	(void) maxpoolingNanOpt;
	if (windowHeight < 1 || windowWidth < 1 || verticalPadding < 0 || horizontalPadding < 0 ||
		verticalStride < 1 || horizontalStride < 1)
		return CUDNN_STATUS_BAD_PARAM;
	d->mode = mode;
	d->wh = windowHeight;
	d->ww = windowWidth;
	d->ph = verticalPadding;
	d->pw = horizontalPadding;
	d->sh = verticalStride;
	d->sw = horizontalStride;
	return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnPoolingForward(cudnnHandle_t handle, const cudnnPoolingDescriptor_t pd, const void *alpha,
					const cudnnTensorDescriptor_t xd, const void *xv, const void *beta,
					const cudnnTensorDescriptor_t yd, void *yv)
{
	const float *x = xv;
	float	   *y = yv;
	float		a = *(const float *) alpha,
				b = *(const float *) beta;
	int			oh = 1 + (xd->h + 2 * pd->ph - pd->wh) / pd->sh,
				ow = 1 + (xd->w + 2 * pd->pw - pd->ww) / pd->sw;

	(void) handle;
	if (xd->type != CUDNN_DATA_FLOAT || yd->type != CUDNN_DATA_FLOAT ||
		yd->n != xd->n || yd->c != xd->c || yd->h != oh || yd->w != ow)
		return CUDNN_STATUS_BAD_PARAM;
	for (int p = 0; p < xd->n * xd->c; p++)
		for (int i = 0; i < oh; i++)
			for (int j = 0; j < ow; j++)
			{
				double		acc = pd->mode == CUDNN_POOLING_MAX_DETERMINISTIC ||
					pd->mode == CUDNN_POOLING_MAX ? -INFINITY : 0.0;
				int			cnt = 0;
				size_t		yi = ((size_t) p * oh + i) * ow + j;
				float		v;

				for (int r = 0; r < pd->wh; r++)
					for (int s = 0; s < pd->ww; s++)
					{
						int			ih = i * pd->sh - pd->ph + r,
									iw = j * pd->sw - pd->pw + s;
						float		xv2;

						if (ih < 0 || ih >= xd->h || iw < 0 || iw >= xd->w)
							continue;
						xv2 = x[((size_t) p * xd->h + ih) * xd->w + iw];
						if (pd->mode == CUDNN_POOLING_MAX_DETERMINISTIC || pd->mode == CUDNN_POOLING_MAX)
							acc = xv2 > acc ? xv2 : acc;
						else
							acc += xv2;
						cnt++;
					}
				if (pd->mode == CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING)
					v = (float) (acc / (pd->wh * pd->ww));
				else if (pd->mode == CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING)
					v = (float) (acc / (cnt > 0 ? cnt : 1));
				else
					v = (float) acc;
				y[yi] = a * v + (b == 0.0f ? 0.0f : b * y[yi]);
			}
	return CUDNN_STATUS_SUCCESS;
}
