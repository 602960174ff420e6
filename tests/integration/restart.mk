# tests/integration/restart.mk: the server-restart test (issue 7 "The pool
# monitor background worker dies or the server restarts").  test_restart.sh
# starts a real PostgreSQL with pg_infer in shared_preload_libraries
# (installed: `make install` first, as for check-regress) and two real
# infer-workers on 127.0.0.1, restarts the server with `pg_ctl restart -m
# fast`, and checks that the pool state comes back from the workers'
# heartbeats and that batched queries use both workers again.
CHECK_TARGETS += check-restart

.PHONY: check-restart
check-restart: install-extension $(BUILD)/bin/infer-worker
	BUILD=$(BUILD) PG_CONFIG=$(PG_CONFIG) MODEL_DIR=$(MODEL_DIR) \
		tests/integration/test_restart.sh
