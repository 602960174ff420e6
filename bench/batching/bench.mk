# bench/batching/bench.mk: `make bench-batching` measures batched against
# per-row execution (bench/batching/bench.sh); not part of `make check`.
# batching-client (bench/batching/bench_client.c, with the clients' shared
# tests/integration/client_util.c) drives a worker directly.
BENCH_BATCHING_CLIENT := $(BUILD)/bin/bench/batching-client

$(BENCH_BATCHING_CLIENT): $(BUILD)/obj/bench/batching/bench_client.o \
		$(BUILD)/obj/tests/integration/client_util.o $(COMMON_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_OUR) -o $@ $^ -lzmq -lprotobuf-c

.PHONY: bench-batching
bench-batching: $(BUILD)/bin/infer-worker $(BENCH_BATCHING_CLIENT)
	BUILD=$(BUILD) SHARED=$(SHARED) bench/batching/bench.sh
