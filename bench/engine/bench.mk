# bench/engine/bench.mk: `make bench-engine` times our ONNX engine against
# ONNX Runtime on the same input tensors, 1 and 2 threads
# (bench/engine/bench.py); not part of `make check`.  engine-bench-run
# (bench/engine/bench_run.c) is the C side, linked with the engine library.
# BENCH_ENGINE_ARGS passes options through (e.g. --only cls --runs 20).
BENCH_ENGINE_RUN := $(BUILD)/bin/bench/engine-bench-run
BENCH_ENGINE_ARGS ?=

$(BENCH_ENGINE_RUN): $(BUILD)/obj/bench/engine/bench_run.o $(ENGINE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_OUR) -o $@ $^ $(ENGINE_LDLIBS)

.PHONY: bench-engine
bench-engine: $(BENCH_ENGINE_RUN)
	$(PYTHON) bench/engine/bench.py --runner $(BENCH_ENGINE_RUN) \
		--models $(MODEL_DIR) --shared $(SHARED) $(BENCH_ENGINE_ARGS)
