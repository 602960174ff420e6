# tests/text/: the BERT WordPiece tokenizer (worker/tokenizer.c) against the
# Hugging Face tokenizer of the MiniLM model (build/models/minilm, fetched by
# `make models`).  tools/tokenizer_reference.py writes the expected ids of
# tests/text/sentences.txt and of a code point sweep; the C test compares.
TEXT_MODEL := $(MODEL_DIR)/minilm
TEXT_TEST  := $(BUILD)/bin/tests/test_tokenizer
TEXT_REF   := $(BUILD)/text/expected.tsv

$(TEXT_TEST): $(BUILD)/obj/tests/text/test_tokenizer.o $(BUILD)/obj/worker/tokenizer.o
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_OUR) -o $@ $^

$(TEXT_MODEL)/vocab.txt $(TEXT_MODEL)/tokenizer.json:
	@echo "$@ is missing: run 'make models' (tools/fetch_models.sh)" >&2; exit 1

$(TEXT_REF): tests/text/sentences.txt tools/tokenizer_reference.py $(TEXT_MODEL)/tokenizer.json
	@mkdir -p $(dir $@)
	$(PYTHON) tools/tokenizer_reference.py $(TEXT_MODEL)/tokenizer.json tests/text/sentences.txt $@.tmp
	mv $@.tmp $@

ALL_TARGETS += $(TEXT_TEST)
CHECK_TARGETS += check-text

.PHONY: check-text
check-text: $(TEXT_TEST) $(TEXT_REF) $(TEXT_MODEL)/vocab.txt
	$(TEXT_TEST) $(TEXT_MODEL)/vocab.txt $(TEXT_REF)
