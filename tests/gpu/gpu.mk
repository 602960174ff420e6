# tests/gpu/: the CUDA backend's tests (docs/gpu.md).
#
# check-gpu runs on every machine: the device API (test_device.c) and
# infer-worker's --device flag at start (test_start.sh); without a GPU they
# check that cuda:0 is refused with a clear cause.  The GPU itself is
# exercised by tests/gpu/run.sh (conformance, every model against the CPU,
# throughput), which exits 77 where there is no GPU.
GPU_TEST_DEVICE := $(BUILD)/bin/gpu-test-device

$(GPU_TEST_DEVICE): $(BUILD)/obj/tests/gpu/test_device.o $(BUILD)/lib/libinferengine.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_OUR) -o $@ $< $(BUILD)/lib/libinferengine.a $(ENGINE_LDLIBS)

ALL_TARGETS   += $(GPU_TEST_DEVICE)
CHECK_TARGETS += check-gpu

.PHONY: check-gpu gpu-run
check-gpu: $(GPU_TEST_DEVICE) $(BUILD)/bin/infer-worker $(CUDA_BACKEND)
	$(GPU_TEST_DEVICE) $(ONNX_NODE_DIR)
	tests/gpu/test_start.sh $(BUILD)/bin/infer-worker

# the whole GPU check (builds first); exits 77 without a GPU
gpu-run:
	tests/gpu/run.sh

# gpu-test-prep: image preprocessing on the device against the host's
# (ie_model_run_images against worker/preprocess.c), run by run.sh on a GPU
# and by check-gpu-emu on the emulation
GPU_TEST_PREP := $(BUILD)/bin/gpu-test-prep

$(GPU_TEST_PREP): $(BUILD)/obj/tests/gpu/test_prep.o $(WORKER_LIB) $(BUILD)/lib/libinferengine.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_OUR) -o $@ $< $(WORKER_LDLIBS)

ALL_TARGETS += $(GPU_TEST_PREP)

# gpu-bench: every model on the CPU and the device, compared and timed (run.sh)
GPU_BENCH := $(BUILD)/bin/gpu-bench

$(GPU_BENCH): $(BUILD)/obj/tests/gpu/gpu_bench.o $(BUILD)/lib/libinferengine.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_OUR) -o $@ $< $(BUILD)/lib/libinferengine.a $(ENGINE_LDLIBS)

ALL_TARGETS += $(GPU_BENCH)

# The CUDA backend's host code on a host emulation of CUDA, cuBLAS and cuDNN
# (tests/gpu/emu/): what the backend decides -- which operator runs where,
# shapes, strides, GEMM and cuDNN parameters, pools, copies -- checked
# against ONNX's node tests and the real models on machines without a GPU.
# It says nothing about the GPU itself (run.sh does).  Built with the backend.
ifeq ($(HAVE_CUDA),1)
CUDA_EMU := $(BUILD)/lib/libinferengine_cudaemu.so
CUDA_EMU_OBJS := $(BUILD)/obj/tests/gpu/emu/emu_cuda.o $(BUILD)/obj/tests/gpu/emu/emu_kernels.o

$(CUDA_EMU_OBJS): CFLAGS_OUR += -I$(CUDA_HOME)/include -I$(dir $(CUDNN_H))

$(CUDA_EMU): $(filter %.o,$(patsubst %.c,$(BUILD)/obj/%.o,$(CUDA_C_SRCS))) $(CUDA_EMU_OBJS)
	@mkdir -p $(dir $@)
	$(CC) -shared -o $@ $^ -lm -lpthread

ALL_TARGETS   += $(CUDA_EMU)
CHECK_TARGETS += check-gpu-emu

.PHONY: check-gpu-emu
# (tests/onnx/onnx.mk, included after this file, makes the node tests' stamp)
check-gpu-emu: $(CUDA_EMU) $(BUILD)/bin/onnx-conformance $(GPU_BENCH) $(GPU_TEST_PREP) \
		$(BUILD)/onnx-node-tests.stamp
	IE_CUDA_BACKEND=$(abspath $(CUDA_EMU)) $(GPU_TEST_PREP) cuda:0 $(wildcard $(SHARED)/data/ocr/p0*.png)
	IE_CUDA_BACKEND=$(abspath $(CUDA_EMU)) $(BUILD)/bin/onnx-conformance --device cuda:0 \
		--node-dir $(ONNX_NODE_DIR) --known tests/onnx/known_failures.txt \
		--name gpu-emu-conformance 2>$(BUILD)/gpu-emu-conformance.log
	IE_CUDA_BACKEND=$(abspath $(CUDA_EMU)) $(BUILD)/bin/onnx-conformance --device cuda:0 \
		--node-dir $(ONNX_GEN_NODE_DIR) --known tests/onnx/known_failures.txt \
		--name gpu-emu-conformance-gen 2>$(BUILD)/gpu-emu-conformance-gen.log
	IE_CUDA_BACKEND=$(abspath $(CUDA_EMU)) $(BUILD)/bin/onnx-conformance --device cuda:0 \
		--dir tests/onnx/exports --metric rel-l2 --tol 1e-4 --name gpu-emu-exports \
		2>$(BUILD)/gpu-emu-exports.log
	@# every model against the CPU backend: the classifier also tiled to batch
	@# 2 and with TF32 on, the others at batch 1 (emulated convolutions are
	@# slow); then every model in FP16 (rel-l2 <= 1e-2) and BF16 (<= 1e-1:
	@# its 8-bit mantissa gives 1.3e-2 to 5.9e-2 on these models, docs/gpu.md)
	@if [ -d $(ONNX_MODEL_TESTS)/cls_p01 ] && [ -d $(ONNX_MODEL_TESTS)/rec_p01 ] && \
		[ -d $(ONNX_MODEL_TESTS)/det_p02 ]; then \
		set -e; export IE_CUDA_BACKEND=$(abspath $(CUDA_EMU)); \
		echo "$(GPU_BENCH) --device cuda:0 [--precision tf32|fp16|bf16] cls rec det minilm (emulated)"; \
		$(GPU_BENCH) --device cuda:0 --batches 1,2 --seconds 0 cls:images:$(ONNX_MODEL_TESTS)/cls_p01; \
		$(GPU_BENCH) --device cuda:0 --tf32 on --batches 2 --seconds 0 \
			cls:images:$(ONNX_MODEL_TESTS)/cls_p01; \
		$(GPU_BENCH) --device cuda:0 --batches 1 --seconds 0 \
			rec:images:$(ONNX_MODEL_TESTS)/rec_p01 det:images:$(ONNX_MODEL_TESTS)/det_p02 \
			$$([ -d $(TEXT_MODEL_TESTS)/minilm_b4_s40 ] && \
			   echo minilm:sentences:$(TEXT_MODEL_TESTS)/minilm_b4_s40); \
		for p in fp16:1e-2 bf16:1e-1; do \
			$(GPU_BENCH) --device cuda:0 --precision $${p%:*} --tol $${p#*:} --batches 1 \
				--seconds 0 cls:images:$(ONNX_MODEL_TESTS)/cls_p01 \
				rec:images:$(ONNX_MODEL_TESTS)/rec_p01 det:images:$(ONNX_MODEL_TESTS)/det_p02 \
				$$([ -d $(TEXT_MODEL_TESTS)/minilm_b4_s40 ] && \
				   echo minilm:sentences:$(TEXT_MODEL_TESTS)/minilm_b4_s40); \
		done; \
	else \
		echo "gpu-emu: no $(ONNX_MODEL_TESTS)/{cls_p01,rec_p01,det_p02} (make check-models makes them): models skipped"; \
	fi
endif
