# tests/integration/state.mk: the worker state, residency and simulated
# device test.  test_state.sh starts real infer-workers on 127.0.0.1 and
# drives them with worker-client (built by worker.mk, named here in full
# because worker.mk is read after this file).
CHECK_TARGETS += check-state

.PHONY: check-state
check-state: $(BUILD)/bin/infer-worker $(BUILD)/bin/tests/worker-client
	BUILD=$(BUILD) MODEL_DIR=$(MODEL_DIR) tests/integration/test_state.sh
