# tests/docs/: every ```sql example of README.md and docs/*.md, run by
# tests/docs/run.sh against a throwaway cluster and two real infer-workers
# with the real models (fixture: tests/docs/fixture.sql).  `make check` has
# installed the extension already; `check-docs` alone installs it too.
CHECK_TARGETS += check-docs

.PHONY: check-docs
check-docs: install-extension $(BUILD)/bin/infer-worker
	BUILD=$(BUILD) PG_CONFIG=$(PG_CONFIG) MODEL_DIR=$(MODEL_DIR) tests/docs/run.sh
