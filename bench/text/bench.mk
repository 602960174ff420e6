# bench/text/bench.mk: `make bench-text` measures the text-embedding model
# (minilm) batched against per-row, through SQL and directly, and against
# ONNX Runtime on the same CPU (bench/text/bench.sh); not part of `make
# check`.  It drives the worker with bench/batching's batching-client
# (--fragment embed_text), compares the vectors with tests/text's cached
# reference (build/text/embed_reference.tsv, its rule in tests/text/text.mk)
# and needs the extension installed (make install).
.PHONY: bench-text
bench-text: $(BUILD)/bin/infer-worker $(BENCH_BATCHING_CLIENT) \
		$(BUILD)/text/embed_reference.tsv
	BUILD=$(BUILD) PYTHON=$(PYTHON) bench/text/bench.sh
