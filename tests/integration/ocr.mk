# tests/integration/ocr.mk: check-ocr compares infer-ocr with RapidOCR 1.4.4
# (tools/rapidocr_reference.py) on the shared OCR images, and on thin
# one-line strips made at test time (tests/integration/make_thin_strips.py,
# in $(BUILD)/ocr-thin); RapidOCR's answers are cached in
# $(BUILD)/ocr-reference/.
OCR_IMAGE_DIRS ?= $(SHARED)/data/ocr $(SHARED)/data/ocr-real $(BUILD)/ocr-thin

CHECK_TARGETS += check-ocr

.PHONY: check-ocr
check-ocr: $(BUILD)/bin/infer-ocr
	$(PYTHON) tests/integration/make_thin_strips.py $(BUILD)/ocr-thin
	$(PYTHON) tools/rapidocr_reference.py --models $(MODEL_DIR) \
		--bin $(BUILD)/bin/infer-ocr --cache $(BUILD)/ocr-reference/rapidocr.json \
		--verbose $(OCR_IMAGE_DIRS)
