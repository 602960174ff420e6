# tests/integration/curve.mk: the CURVE test (issue 7 "Security").
# test_curve.sh makes key pairs with infer-worker --curve-keygen, starts
# real infer-workers on 127.0.0.1 (one on 0.0.0.0 for a moment, to see its
# WARNING) and a real PostgreSQL with pg_infer (installed: `make install`
# first, as for check-regress), and checks who gets answers.  worker-client
# is built by worker.mk, named here in full as that file is read after this.
CHECK_TARGETS += check-curve

.PHONY: check-curve
check-curve: install-extension $(BUILD)/bin/infer-worker $(BUILD)/bin/tests/worker-client
	BUILD=$(BUILD) PG_CONFIG=$(PG_CONFIG) MODEL_DIR=$(MODEL_DIR) SHARED=$(SHARED) \
		tests/integration/test_curve.sh
