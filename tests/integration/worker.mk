# tests/integration/worker.mk: the infer-worker process test.
# worker-client is a small DEALER client (tests/integration/worker_client.c,
# with client_util.c, which bench/batching shares);
# test_worker.sh starts a real infer-worker on 127.0.0.1 and drives it.
WORKER_CLIENT := $(BUILD)/bin/tests/worker-client

# An explicit rule, so the unit tests' $(BUILD)/bin/tests/% pattern is not used.
$(WORKER_CLIENT): $(BUILD)/obj/tests/integration/worker_client.o \
		$(BUILD)/obj/tests/integration/client_util.o $(COMMON_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_OUR) -o $@ $^ -lzmq -lprotobuf-c

ALL_TARGETS += $(WORKER_CLIENT)
CHECK_TARGETS += check-worker

.PHONY: check-worker
check-worker: $(BUILD)/bin/infer-worker $(WORKER_CLIENT)
	BUILD=$(BUILD) MODEL_DIR=$(MODEL_DIR) SHARED=$(SHARED) PYTHON=$(PYTHON) \
		tests/integration/test_worker.sh
