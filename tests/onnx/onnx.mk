# tests/onnx/: the ONNX conformance runner and the real-model checks.
#
# check-onnx checks that worker/engine/op_schemas.h is what
# tools/gen_op_schemas.py makes of the pinned onnx package, then runs ONNX's
# node tests (those whose operators the engine implements) against
# tests/onnx/known_failures.txt: Debian's (onnx 1.12, opsets up to 17) and
# those tests/onnx/gen_node_tests.py writes from the pinned onnx package
# (every opset the engine accepts), and the exports in
# tests/onnx/exports (opset 23: Attention from scaled_dot_product_attention
# and a BERT; opset 22: RNN, GRU and LSTM models from tools/export_rnn.py;
# with ONNX Runtime's outputs; relative L2 <= 1e-4); check-models builds
# test folders for the OCR models (tools/make_model_tests.py, reference
# outputs from ONNX Runtime) and requires a relative L2 error <= 1e-4; it
# does the same for the text encoder build/models/minilm/model.onnx
# (tests/onnx/make_text_tests.py: token ids with padding) once it exists.
#
# The engine library is named by path: this fragment is included before
# worker/engine/engine.mk, so $(ENGINE_LIB) is not set yet here.
ONNX_CONFORMANCE := $(BUILD)/bin/onnx-conformance
ONNX_NODE_DIR    ?= /usr/include/onnx/backend/test/data/node
ONNX_GEN_NODE_DIR := $(BUILD)/onnx-node-tests
ONNX_MODEL_TESTS ?= $(BUILD)/model-tests
TEXT_MODEL_TESTS ?= $(BUILD)/text-model-tests
# exports with ONNX Runtime's outputs (tools/export_attention.py, tools/export_rnn.py)
ONNX_EXPORTS := tests/onnx/exports

$(ONNX_CONFORMANCE): $(BUILD)/obj/tests/onnx/conformance.o $(BUILD)/lib/libinferengine.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_OUR) -o $@ $< $(BUILD)/lib/libinferengine.a $(ENGINE_LDLIBS)

ALL_TARGETS   += $(ONNX_CONFORMANCE)
CHECK_TARGETS += check-onnx check-models

.PHONY: check-onnx check-models
check-onnx: $(ONNX_CONFORMANCE) $(ONNX_GEN_NODE_DIR).stamp
	$(PYTHON) tools/gen_op_schemas.py --check
	$(ONNX_CONFORMANCE) --node-dir $(ONNX_NODE_DIR) --known tests/onnx/known_failures.txt
	$(ONNX_CONFORMANCE) --node-dir $(ONNX_GEN_NODE_DIR) --known tests/onnx/known_failures.txt \
		--name onnx-conformance-$$($(PYTHON) -c 'import onnx; print(onnx.__version__)')
	$(ONNX_CONFORMANCE) --dir $(ONNX_EXPORTS) --metric rel-l2 --tol 1e-4 --name onnx-exports

# The pinned onnx's node tests, written again when the script or the pins change.
$(ONNX_GEN_NODE_DIR).stamp: tests/onnx/gen_node_tests.py tools/requirements.txt
	$(PYTHON) tests/onnx/gen_node_tests.py $(ONNX_GEN_NODE_DIR)
	touch $@

check-models: $(ONNX_CONFORMANCE)
	$(PYTHON) tools/make_model_tests.py --models $(MODEL_DIR) \
		--images $(SHARED)/data/ocr --also $(SHARED)/models --out $(ONNX_MODEL_TESTS)
	$(ONNX_CONFORMANCE) --dir $(ONNX_MODEL_TESTS) --metric rel-l2 --tol 1e-4 \
		--name onnx-models --threads 2
	rm -rf $(TEXT_MODEL_TESTS)
	$(PYTHON) tests/onnx/make_text_tests.py --out $(TEXT_MODEL_TESTS) \
		$(MODEL_DIR)/minilm/model.onnx:minilm
	@if [ -n "$$(ls -A $(TEXT_MODEL_TESTS))" ]; then \
		echo "$(ONNX_CONFORMANCE) --dir $(TEXT_MODEL_TESTS) --metric rel-l2 --tol 1e-4 --name text-models --threads 2"; \
		$(ONNX_CONFORMANCE) --dir $(TEXT_MODEL_TESTS) --metric rel-l2 --tol 1e-4 \
			--name text-models --threads 2; \
	else \
		echo "text-models: no $(MODEL_DIR)/minilm/model.onnx yet, skipped"; \
	fi
