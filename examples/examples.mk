# examples/examples.mk: the example applications (examples/README.md).
# ocr_search (examples/ocr_search.c) is a libpq client: it loads images,
# reads their text with infer.ocr, embeds it with infer.embed and searches
# it.  check-examples (tests/examples/test_examples.sh) runs it against a
# real PostgreSQL with pg_infer (installed first, as for check-regress)
# and a real infer-worker with the models of $(MODEL_DIR).
EXAMPLE_OCR_SEARCH := $(BUILD)/bin/examples/ocr_search

$(BUILD)/obj/examples/ocr_search.o: CFLAGS_OUR += -I$(shell $(PG_CONFIG) --includedir)

$(EXAMPLE_OCR_SEARCH): $(BUILD)/obj/examples/ocr_search.o
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_OUR) -o $@ $^ -L$(shell $(PG_CONFIG) --libdir) -lpq

ALL_TARGETS += $(EXAMPLE_OCR_SEARCH)
CHECK_TARGETS += check-examples

.PHONY: check-examples
check-examples: install-extension $(BUILD)/bin/infer-worker $(EXAMPLE_OCR_SEARCH)
	BUILD=$(BUILD) PG_CONFIG=$(PG_CONFIG) MODEL_DIR=$(MODEL_DIR) SHARED=$(SHARED) \
		tests/examples/test_examples.sh
