# tests/integration/pool.mk: the worker-pool test (issue 5 "Tests", issue 7
# "Faults").  test_pool.sh starts a real PostgreSQL with pg_infer (installed:
# `make install` first, as for check-regress) and three real infer-workers on
# 127.0.0.1, then three simulated ones, and checks placement, re-sends after
# a worker is killed or hung, and a worker that comes back.
CHECK_TARGETS += check-pool

.PHONY: check-pool
check-pool: install-extension $(BUILD)/bin/infer-worker
	BUILD=$(BUILD) PG_CONFIG=$(PG_CONFIG) MODEL_DIR=$(MODEL_DIR) SHARED=$(SHARED) \
		tests/integration/test_pool.sh
