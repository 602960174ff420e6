# tests/integration/user_models.mk: a user's own ONNX image models
# (infer.create_model, task raw) answered in batches as one row at a time,
# and a model file replaced in the model directory read again.
# test_user_models.sh writes the models with onnx.helper
# (make_user_models.py, the reference tools' Python), starts a real
# PostgreSQL with pg_infer (installed: `make install` first, as for
# check-regress) and one real infer-worker on 127.0.0.1.
CHECK_TARGETS += check-user-models

.PHONY: check-user-models
check-user-models: install-extension $(BUILD)/bin/infer-worker
	BUILD=$(BUILD) PG_CONFIG=$(PG_CONFIG) PYTHON=$(PYTHON) tests/integration/test_user_models.sh
