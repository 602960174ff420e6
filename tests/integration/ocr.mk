# tests/integration/ocr.mk: check-ocr compares infer-ocr with RapidOCR 1.4.4
# (tools/rapidocr_reference.py) on the shared OCR images, and on images
# made at test time (tests/integration/make_ocr_cases.py, in
# $(BUILD)/ocr-generated: thin one-line strips, an EXIF orientation stored
# as a LONG, a tRNS colour key, a PNG eXIf chunk); RapidOCR's answers are
# cached in $(BUILD)/ocr-reference/.
OCR_IMAGE_DIRS ?= $(SHARED)/data/ocr $(SHARED)/data/ocr-real $(BUILD)/ocr-generated

CHECK_TARGETS += check-ocr

.PHONY: check-ocr
check-ocr: $(BUILD)/bin/infer-ocr
	$(PYTHON) tests/integration/make_ocr_cases.py $(SHARED)/data/ocr $(BUILD)/ocr-generated
	$(PYTHON) tools/rapidocr_reference.py --models $(MODEL_DIR) \
		--bin $(BUILD)/bin/infer-ocr --cache $(BUILD)/ocr-reference/rapidocr.json \
		--verbose $(OCR_IMAGE_DIRS)
