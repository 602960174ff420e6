# bench/e2e/bench.mk: `make bench-e2e` measures SQL against the worker
# alone, the transport and worker scaling (bench/e2e/bench.sh); not part
# of `make check`.  It drives the worker directly with bench/batching's
# batching-client, and needs the extension installed (make install).
# e2e-zmq-bw (bench/e2e/zmq_bw.c) measures ZeroMQ against memcpy.
BENCH_E2E_ZMQ := $(BUILD)/bin/bench/e2e-zmq-bw

$(BENCH_E2E_ZMQ): $(BUILD)/obj/bench/e2e/zmq_bw.o
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_OUR) -o $@ $^ -lzmq

.PHONY: bench-e2e
bench-e2e: $(BUILD)/bin/infer-worker $(BENCH_BATCHING_CLIENT) $(WORKER_CLIENT) \
		$(BENCH_E2E_ZMQ)
	BUILD=$(BUILD) SHARED=$(SHARED) bench/e2e/bench.sh
