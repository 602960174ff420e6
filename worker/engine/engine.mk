# worker/engine/: the ONNX executor, as a static library, and its CUDA
# backend, as a plugin.
#
# The CUDA backend (worker/engine/cuda/, docs/gpu.md) is built when $(NVCC)
# is found (HAVE_CUDA=1, detected; `make NVCC=/nonexistent` or
# `make HAVE_CUDA=0` builds without it).  Its host code (cuda/*.c) is plain
# C compiled by $(CC) with our warnings against the CUDA, cuBLAS and cuDNN
# headers; its kernels (cuda/*.cu) are compiled by nvcc for sm_90 plus PTX
# (newer GPUs JIT them), host code with -Werror.  Both go into
# $(BUILD)/lib/libinferengine_cuda.so, linked with cudart, cuBLAS and cuDNN,
# which the engine (cuda/loader.c, always in the static library) dlopens
# the first time a CUDA device is asked for: programs link no CUDA library
# and a CPU worker maps none.  The programs are linked with -rdynamic so
# that the plugin finds the engine's functions in them.  Without nvcc the
# loader refuses every device with "built without CUDA".
ONNX_PROTO  ?= /usr/include/onnx/onnx.proto
ENGINE_SRCS := $(wildcard worker/engine/*.c)
ENGINE_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(ENGINE_SRCS)) \
               $(BUILD)/obj/onnx/onnx.pb-c.o \
               $(BUILD)/obj/worker/engine/cuda/loader.o
ENGINE_LIB  := $(BUILD)/lib/libinferengine.a
ENGINE_LDLIBS := -lopenblas -lprotobuf-c -lm -lpthread -ldl -rdynamic

NVCC_PATH   := $(shell command -v $(NVCC) 2>/dev/null)
# the toolkit's root: nvcc lives in $(CUDA_HOME)/bin
CUDA_HOME   ?= $(patsubst %/bin/,%,$(dir $(realpath $(NVCC_PATH))))
# cuDNN's header: in the toolkit, or from Debian/NVIDIA packages
CUDNN_H     := $(firstword $(wildcard $(CUDA_HOME)/include/cudnn.h /usr/include/cudnn.h \
                  /usr/include/x86_64-linux-gnu/cudnn.h))
HAVE_CUDA   ?= $(if $(and $(NVCC_PATH),$(CUDNN_H)),1,0)
ifneq ($(NVCC_PATH),)
ifeq ($(CUDNN_H),)
$(warning nvcc found but no cudnn.h: building without the CUDA backend)
endif
endif
CUDA_ARCH   ?= -gencode arch=compute_90,code=sm_90 \
               -gencode arch=compute_90,code=compute_90
NVCC_FLAGS  := -std=c++17 -O2 -g -I. $(CUDA_ARCH) \
               -Xcompiler -Wall,-Wextra,-Werror,-fPIC -Werror all-warnings
CUDA_BACKEND :=

# a stamp per configuration: switching HAVE_CUDA in one BUILD rebuilds the loader and the library
ENGINE_STAMP := $(BUILD)/obj/worker/engine/cuda-$(HAVE_CUDA).stamp
$(ENGINE_STAMP):
	@mkdir -p $(dir $@)
	touch $@
$(BUILD)/obj/worker/engine/cuda/loader.o: $(ENGINE_STAMP)

ifeq ($(HAVE_CUDA),1)
CUDA_BACKEND := $(BUILD)/lib/libinferengine_cuda.so
CUDA_C_SRCS  := $(filter-out worker/engine/cuda/loader.c,$(wildcard worker/engine/cuda/*.c))
CUDA_CU_SRCS := $(wildcard worker/engine/cuda/*.cu)
CUDA_OBJS    := $(patsubst %.c,$(BUILD)/obj/%.o,$(CUDA_C_SRCS)) \
                $(patsubst %.cu,$(BUILD)/obj/%.o,$(CUDA_CU_SRCS))

# the host code sees the toolkit's headers (cuda_runtime_api.h, cublas_v2.h, cudnn.h)
$(patsubst %.c,$(BUILD)/obj/%.o,$(CUDA_C_SRCS)): CFLAGS_OUR += -I$(CUDA_HOME)/include \
	-I$(dir $(CUDNN_H))
# where the loader looks for the plugin last (first: $IE_CUDA_BACKEND, <program>/../lib)
$(BUILD)/obj/worker/engine/cuda/loader.o: CFLAGS_OUR += \
	-DIE_CUDA_BACKEND_SO='"$(abspath $(CUDA_BACKEND))"'

$(BUILD)/obj/worker/engine/cuda/%.o: worker/engine/cuda/%.cu | $(GEN_HEADERS)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCC_FLAGS) -MMD -MP -c $< -o $@

$(CUDA_BACKEND): $(CUDA_OBJS)
	@mkdir -p $(dir $@)
	$(CC) -shared -o $@ $^ -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 \
		-lcudnn -lcublas -lcudart -lstdc++ -lm -lpthread

ALL_TARGETS += $(CUDA_BACKEND)

# `make install` puts the plugin beside the installed worker (<prefix>/lib)
.PHONY: install-cuda-backend
install-worker: install-cuda-backend
install-cuda-backend: $(CUDA_BACKEND)
	install -d $(DESTDIR)$(PREFIX)/lib
	install -m 755 $(CUDA_BACKEND) $(DESTDIR)$(PREFIX)/lib/libinferengine_cuda.so
endif

# onnx.proto from Debian's libonnx-dev, compiled by protoc-c.
$(BUILD)/gen/onnx/onnx.pb-c.c $(BUILD)/gen/onnx/onnx.pb-c.h: $(ONNX_PROTO)
	mkdir -p $(BUILD)/gen/onnx
	cp $(ONNX_PROTO) $(BUILD)/gen/onnx/onnx.proto
	protoc-c --proto_path=$(BUILD)/gen --c_out=$(BUILD)/gen onnx/onnx.proto

$(BUILD)/obj/onnx/onnx.pb-c.o: $(BUILD)/gen/onnx/onnx.pb-c.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_GEN) -c $< -o $@

$(ENGINE_LIB): $(ENGINE_OBJS) $(ENGINE_STAMP)
	@mkdir -p $(dir $@)
	rm -f $@
	ar rcs $@ $(ENGINE_OBJS)

ALL_TARGETS += $(ENGINE_LIB)
