# tests/text/: the BERT WordPiece tokenizer (worker/tokenizer.c) against the
# Hugging Face tokenizer of the MiniLM model (build/models/minilm, fetched by
# `make models`), and the worker's sentence embeddings against ONNX Runtime
# over every text of sentences.txt.  tools/tokenizer_reference.py writes the
# expected ids of tests/text/sentences.txt and of a code point sweep;
# tools/text_reference.py --sentences the reference embeddings (Hugging Face
# tokenizer + ONNX Runtime + mean pooling + L2 norm, once, cached in
# build/text); the C tests compare.  The text classifier prompt_task
# (build/models/prompt_task) is checked the same way: every text's label
# against the label of ONNX Runtime's largest score.  check-text-batch: a
# text's answer is the same batched and alone (test_textbatch.c) for MiniLM,
# a dynamically quantized MiniLM and an LSTM without attention_mask, the
# latter two written at test time (make_batch_models.py).
TEXT_MODEL := $(MODEL_DIR)/minilm
CLS_MODEL  := $(MODEL_DIR)/prompt_task
CLS_REF    := $(BUILD)/text/classify_reference.tsv
TEXT_TEST  := $(BUILD)/bin/tests/test_tokenizer
TEXT_REF   := $(BUILD)/text/expected.tsv
EMBED_TEST := $(BUILD)/bin/tests/test_embed
EMBED_REF  := $(BUILD)/text/embed_reference.tsv
BATCH_TEST := $(BUILD)/bin/tests/test_textbatch
BATCH_DIR  := $(BUILD)/text/batch

$(TEXT_TEST): $(BUILD)/obj/tests/text/test_tokenizer.o $(BUILD)/obj/worker/tokenizer.o
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_OUR) -o $@ $^

$(EMBED_TEST): $(BUILD)/obj/tests/text/test_embed.o $(WORKER_LIB) $(ENGINE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_OUR) -o $@ $< $(WORKER_LDLIBS)

$(BATCH_TEST): $(BUILD)/obj/tests/text/test_textbatch.o $(WORKER_LIB) $(ENGINE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_OUR) -o $@ $< $(WORKER_LDLIBS)

# the quantized MiniLM and the LSTM without attention_mask, at test time
$(BATCH_DIR)/nomask_reference.tsv: tests/text/make_batch_models.py $(TEXT_MODEL)/model.onnx \
		$(TEXT_MODEL)/tokenizer.json
	@mkdir -p $(dir $@)
	$(PYTHON) tests/text/make_batch_models.py $(TEXT_MODEL) $(BATCH_DIR)

$(TEXT_MODEL)/vocab.txt $(TEXT_MODEL)/tokenizer.json $(TEXT_MODEL)/model.onnx \
		$(CLS_MODEL)/model.onnx $(CLS_MODEL)/labels.txt:
	@echo "$@ is missing: run 'make models' (tools/fetch_models.sh)" >&2; exit 1

$(TEXT_REF): tests/text/sentences.txt tools/tokenizer_reference.py $(TEXT_MODEL)/tokenizer.json
	@mkdir -p $(dir $@)
	$(PYTHON) tools/tokenizer_reference.py $(TEXT_MODEL)/tokenizer.json tests/text/sentences.txt $@.tmp
	mv $@.tmp $@

$(EMBED_REF): tests/text/sentences.txt tools/text_reference.py tools/tokenizer_reference.py \
		$(TEXT_MODEL)/tokenizer.json $(TEXT_MODEL)/model.onnx
	@mkdir -p $(dir $@)
	$(PYTHON) tools/text_reference.py $(TEXT_MODEL) $@.tmp --sentences tests/text/sentences.txt
	mv $@.tmp $@

$(CLS_REF): tests/text/sentences.txt tools/text_reference.py tools/tokenizer_reference.py \
		$(CLS_MODEL)/model.onnx
	@mkdir -p $(dir $@)
	$(PYTHON) tools/text_reference.py $(CLS_MODEL) $@.tmp --sentences tests/text/sentences.txt
	mv $@.tmp $@

ALL_TARGETS += $(TEXT_TEST) $(EMBED_TEST) $(BATCH_TEST)
CHECK_TARGETS += check-text

.PHONY: check-text check-text-tokenizer check-text-embed check-text-classify check-text-batch
check-text: check-text-tokenizer check-text-embed check-text-classify check-text-batch

check-text-tokenizer: $(TEXT_TEST) $(TEXT_REF) $(TEXT_MODEL)/vocab.txt
	$(TEXT_TEST) $(TEXT_MODEL)/vocab.txt $(TEXT_REF)

check-text-embed: $(EMBED_TEST) $(EMBED_REF)
	$(EMBED_TEST) $(MODEL_DIR) minilm/model.onnx $(EMBED_REF)

check-text-classify: $(EMBED_TEST) $(CLS_REF) $(CLS_MODEL)/labels.txt
	$(EMBED_TEST) --classify $(CLS_MODEL)/labels.txt $(MODEL_DIR) prompt_task/model.onnx $(CLS_REF)

check-text-batch: $(BATCH_TEST) $(BATCH_DIR)/nomask_reference.tsv
	$(BATCH_TEST) $(MODEL_DIR) $(BATCH_DIR)
