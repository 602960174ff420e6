# tests/integration/upload.mk: uploaded models and model-directory
# confinement (issue 7 "Security"; docs/security.md "Uploaded models").
# test_upload.sh starts real infer-workers on 127.0.0.1 over their own
# model directories (with real symbolic links) and a real PostgreSQL with
# pg_infer (installed: `make install` first, as for check-regress).
CHECK_TARGETS += check-upload

.PHONY: check-upload
check-upload: install-extension $(BUILD)/bin/infer-worker $(BUILD)/bin/tests/worker-client
	BUILD=$(BUILD) PG_CONFIG=$(PG_CONFIG) MODEL_DIR=$(MODEL_DIR) SHARED=$(SHARED) \
		tests/integration/test_upload.sh
