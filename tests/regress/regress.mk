# tests/regress/: the extension's pg_regress tests (sql/ + expected/), run by
# tests/regress/run.sh against a throwaway cluster and a real infer-worker.
# `make check` has installed the extension already; `check-regress` alone
# installs it too.
CHECK_TARGETS += check-regress

.PHONY: check-regress
check-regress: install-extension $(BUILD)/bin/infer-worker
	BUILD=$(BUILD) PG_CONFIG=$(PG_CONFIG) tests/regress/run.sh
