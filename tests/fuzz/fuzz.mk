# tests/fuzz/fuzz.mk: libFuzzer targets with AddressSanitizer and
# UndefinedBehaviorSanitizer, built by clang from the sources (not from the
# gcc objects):
#
#   fuzz_image      worker/image.c        (JPEG/PNG decoding)
#   fuzz_model      worker/engine         (ONNX loading, planning, one run)
#   fuzz_tokenizer  worker/tokenizer.c    (WordPiece over any bytes)
#   fuzz_protocol   worker/request.c      (a request's frames as they arrive)
#
# `make fuzz` runs each for FUZZ_TIME seconds (default 600) from its
# committed corpus (tests/fuzz/corpus/NAME) plus seeds (the shared test
# images, ONNX's node-test models, the text test sentences, protocol
# requests fuzz_protocol writes itself with FUZZ_WRITE_SEEDS), prints each target's
# executions, coverage and findings, and with FUZZ_MERGE=1 merges what it
# found into the committed corpus (-merge=1 keeps only inputs that add
# coverage).  `make check-fuzz` (part of `make check`) replays every
# committed corpus file once: a crash, a leak or undefined behaviour fails.
FUZZ_CC      ?= clang
FUZZ_TIME    ?= 600
FUZZ_DIR     := $(BUILD)/fuzz
FUZZ_CFLAGS  := -g -O1 -std=c11 -D_GNU_SOURCE -I. -I$(BUILD)/gen \
                -fsanitize=fuzzer,address,undefined \
                -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_TARGETS := image model tokenizer protocol

$(FUZZ_DIR)/fuzz_image: tests/fuzz/fuzz_image.c worker/image.c worker/image.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ tests/fuzz/fuzz_image.c worker/image.c \
		-ljpeg -lpng -lexif

$(FUZZ_DIR)/fuzz_tokenizer: tests/fuzz/fuzz_tokenizer.c worker/tokenizer.c \
		worker/tokenizer.h worker/tokenizer_unicode.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ tests/fuzz/fuzz_tokenizer.c worker/tokenizer.c

# The engine's C sources with the loader of its CUDA plugin (not loaded here).
FUZZ_ENGINE_SRCS = $(wildcard worker/engine/*.c) worker/engine/cuda/loader.c

$(FUZZ_DIR)/fuzz_model: tests/fuzz/fuzz_model.c $(FUZZ_ENGINE_SRCS) \
		$(wildcard worker/engine/*.h) $(BUILD)/gen/onnx/onnx.pb-c.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -pthread -o $@ tests/fuzz/fuzz_model.c \
		$(FUZZ_ENGINE_SRCS) $(BUILD)/gen/onnx/onnx.pb-c.c \
		-lopenblas -lprotobuf-c -lm -ldl

$(FUZZ_DIR)/fuzz_protocol: tests/fuzz/fuzz_protocol.c worker/request.c \
		worker/request.h common/protocol.h $(BUILD)/gen/common/pg_infer.pb-c.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ tests/fuzz/fuzz_protocol.c worker/request.c \
		$(BUILD)/gen/common/pg_infer.pb-c.c -lprotobuf-c
	rm -rf $(FUZZ_DIR)/seeds/protocol && mkdir -p $(FUZZ_DIR)/seeds/protocol
	FUZZ_WRITE_SEEDS=$(FUZZ_DIR)/seeds/protocol $@

FUZZ_BINS := $(addprefix $(FUZZ_DIR)/fuzz_,$(FUZZ_TARGETS))

.PHONY: fuzz fuzz-build check-fuzz
fuzz-build: $(FUZZ_BINS)

CHECK_TARGETS += check-fuzz
check-fuzz: $(FUZZ_BINS)
	BUILD=$(BUILD) FUZZ_MODE=replay tests/fuzz/run.sh $(FUZZ_TARGETS)

fuzz: $(FUZZ_BINS)
	BUILD=$(BUILD) SHARED=$(SHARED) FUZZ_MODE=run FUZZ_TIME=$(FUZZ_TIME) \
		FUZZ_MERGE=$(FUZZ_MERGE) tests/fuzz/run.sh $(FUZZ_TARGETS)
