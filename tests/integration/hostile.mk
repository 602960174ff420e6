# tests/integration/hostile.mk: the hostile-input test (issue 7, "Hostile
# input").  test_hostile.sh makes decompression bombs, lying protocol
# messages, a text over the limit and broken models from real files, sends
# each to a real infer-worker on 127.0.0.1 (worker-client), and checks the
# clear error and that the same worker then answers a good request right.
CHECK_TARGETS += check-hostile

.PHONY: check-hostile
check-hostile: $(BUILD)/bin/infer-worker $(BUILD)/bin/tests/worker-client
	BUILD=$(BUILD) MODEL_DIR=$(MODEL_DIR) SHARED=$(SHARED) \
		tests/integration/test_hostile.sh
