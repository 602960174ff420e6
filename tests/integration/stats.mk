# tests/integration/stats.mk: infer.progress and infer.stats seen from a
# second session (issue 9).  test_stats.sh starts a real PostgreSQL with
# pg_infer (installed: `make install` first, as for check-regress) and one
# real infer-worker with the PP-OCR models on 127.0.0.1, runs OCR over real
# scanned pages in a background session and polls the views; then cancels
# and terminates such a session mid-scan.
CHECK_TARGETS += check-stats

.PHONY: check-stats
check-stats: install-extension $(BUILD)/bin/infer-worker
	BUILD=$(BUILD) PG_CONFIG=$(PG_CONFIG) MODEL_DIR=$(MODEL_DIR) tests/integration/test_stats.sh
