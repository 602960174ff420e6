# tests/integration/faults.mk: the fault test (issue 7 "Faults").
# test_faults.sh starts a real PostgreSQL with pg_infer (installed: `make
# install` first, as for check-regress) and two simulated infer-workers
# (--simulate: real processes, real protocol, sleeping compute) on
# 127.0.0.1, and checks a backend terminated or cancelled while its
# batches run, a poison row (bounded by infer.retries), more requests
# outstanding at one worker than ZeroMQ's high-water mark, and a worker
# killed, hung or stopped (SIGTERM: 57P01) during per-row and batched
# queries, its requests sent to the other worker.  worker-client reads
# the worker's memory figures (request_bytes, heap_bytes) from a ping.
CHECK_TARGETS += check-faults

.PHONY: check-faults
check-faults: install-extension $(BUILD)/bin/infer-worker $(BUILD)/bin/tests/worker-client
	BUILD=$(BUILD) PG_CONFIG=$(PG_CONFIG) tests/integration/test_faults.sh
