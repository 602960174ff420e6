# tests/integration/metrics.mk: the operator surface test (issue 9):
# configuration file, Prometheus endpoint and pool dashboard.
# test_metrics.sh starts real infer-workers with the real models on
# 127.0.0.1, drives them with worker-client (built by worker.mk, named here
# in full because worker.mk is read after this file), reads /metrics and
# /state.json, and renders the dashboard in headless Chromium (its
# screenshot goes to $(BUILD)/dashboard.png; SCREENSHOT=docs/img/dashboard.png
# renews the one in the docs).
CHECK_TARGETS += check-metrics

.PHONY: check-metrics
check-metrics: $(BUILD)/bin/infer-worker $(BUILD)/bin/tests/worker-client
	BUILD=$(BUILD) MODEL_DIR=$(MODEL_DIR) SHARED=$(SHARED) \
		tests/integration/test_metrics.sh
