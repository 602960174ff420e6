# tests/upgrade/upgrade.mk: `make check-upgrade` runs ALTER EXTENSION
# pg_infer UPDATE from every released version script against a real
# server and compares the result with a fresh install
# (tests/upgrade/test_upgrade.sh).  It uses the installed extension.
CHECK_TARGETS += check-upgrade

.PHONY: check-upgrade
check-upgrade: install-extension
	BUILD=$(BUILD) PG_CONFIG=$(PG_CONFIG) tests/upgrade/test_upgrade.sh
