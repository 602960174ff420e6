/*
 * device.c
 *	  The process-wide default device and the device helpers of engine.h:
 *	  parsing "cpu" / "cuda:N", checking a CUDA device before it becomes the
 *	  default, TF32 and precisions, and device memory.  The CUDA work itself is in cuda/
 *	  (cuda/backend.h), or cuda/nocuda.c in a build without CUDA.
 *
 * Threading: the default device and the TF32 flag are atomics; set them at
 * start-up, before models are loaded.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/engine/cuda/backend.h"
#include "worker/engine/model_int.h"

static atomic_int default_device = IE_DEVICE_CPU;
static atomic_int default_tf32 = 0;

/* Parses "cpu", "cuda" or "cuda:N" (N a decimal from 0 to 1023). */
int
ie_device_parse(const char *spec, int *device, char *err, size_t errlen)
{
	char	   *end;
	long		n;

	if (strcmp(spec, "cpu") == 0)
	{
		*device = IE_DEVICE_CPU;
		return 0;
	}
	if (strcmp(spec, "cuda") == 0)
	{
		*device = 0;
		return 0;
	}
	if (strncmp(spec, "cuda:", 5) == 0 && spec[5] >= '0' && spec[5] <= '9')
	{
		errno = 0;
		n = strtol(spec + 5, &end, 10);
		if (errno == 0 && *end == '\0' && n >= 0 && n < 1024)
		{
			*device = (int) n;
			return 0;
		}
	}
	snprintf(err, errlen, "device must be \"cpu\", \"cuda\" or \"cuda:N\" (N from 0), not \"%s\"",
			 spec);
	return -1;
}

/* Checks device and makes it the default for later loads. */
int
ie_set_device(int device, char *err, size_t errlen)
{
	if (device < IE_DEVICE_CPU)
	{
		snprintf(err, errlen, "invalid device %d", device);
		return -1;
	}
	if (device != IE_DEVICE_CPU && ie_cuda_check_device(device, err, errlen) != 0)
		return -1;
	atomic_store(&default_device, device);
	return 0;
}

/* The default device for models loaded now. */
int
ie_get_device(void)
{
	return atomic_load(&default_device);
}

/* TF32 on or off for models loaded from now on (CUDA only). */
void
ie_set_tf32(int on)
{
	atomic_store(&default_tf32, on ? 1 : 0);
}

int
ie_get_tf32(void)
{
	return atomic_load(&default_tf32);
}

static const char *const precision_names[] = {"fp32", "tf32", "fp16", "bf16"};

/* Name of p, or NULL when p is not an ie_precision. */
const char *
ie_precision_name(ie_precision p)
{
	return (int) p >= 0 && (int) p < 4 ? precision_names[p] : NULL;
}

/* Parses a precision name; NULL and "" are FP32. */
int
ie_precision_parse(const char *s, ie_precision *p, char *err, size_t errlen)
{
	*p = IE_PRECISION_FP32;
	if (s == NULL || s[0] == '\0')
		return 0;
	for (int i = 0; i < 4; i++)
		if (strcmp(s, precision_names[i]) == 0)
		{
			*p = (ie_precision) i;
			return 0;
		}
	snprintf(err, errlen, "unknown precision \"%s\" (fp32, tf32, fp16 or bf16)", s);
	return -1;
}

/* The precision a model was loaded with. */
ie_precision
ie_model_precision(const ie_model *model)
{
	return model->precision;
}

/* "cpu" or "cuda:N" into buf. */
const char *
ie_device_str(int device, char *buf, size_t len)
{
	if (device == IE_DEVICE_CPU)
		snprintf(buf, len, "cpu");
	else
		snprintf(buf, len, "cuda:%d", device);
	return buf;
}

/* Device memory through the backend; the CPU has none to report. */
int
ie_device_memory(int device, uint64_t *free_bytes, uint64_t *total_bytes,
				 char *err, size_t errlen)
{
	*free_bytes = 0;
	*total_bytes = 0;
	if (device == IE_DEVICE_CPU)
	{
		snprintf(err, errlen, "the cpu device has no device memory to report");
		return -1;
	}
	return ie_cuda_mem_info(device, free_bytes, total_bytes, err, errlen);
}

/* The device the model was loaded for. */
int
ie_model_device(const ie_model *model)
{
	return model->on_cuda ? model->device : IE_DEVICE_CPU;
}
