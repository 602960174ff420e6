# bench/memory/bench.mk: `make bench-memory` samples a backend's memory
# over a 1,000,000-row batched query (bench/memory/bench.sh; ROWS=N for
# another count); not part of `make check`.  It uses the installed
# extension, so it installs it first.
.PHONY: bench-memory
bench-memory: install-extension $(BUILD)/bin/infer-worker
	BUILD=$(BUILD) bench/memory/bench.sh
