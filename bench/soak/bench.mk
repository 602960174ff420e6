# bench/soak/bench.mk: `make bench-soak` runs 8 libpq clients for
# DURATION seconds (default 600) against 2 real infer-workers, one of them
# killed and started again halfway, and checks every row and the resident
# memory of the backends and workers (bench/soak/bench.sh;
# docs/reliability.md, "Soak"); not part of `make check`.  soak-driver
# (bench/soak/driver.c) is the load generator.  It uses the installed
# extension, so it installs it first.
BENCH_SOAK_DRIVER := $(BUILD)/bin/bench/soak-driver

$(BUILD)/obj/bench/soak/driver.o: CFLAGS_OUR += -I$(shell $(PG_CONFIG) --includedir)

$(BENCH_SOAK_DRIVER): $(BUILD)/obj/bench/soak/driver.o
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_OUR) -o $@ $^ -L$(shell $(PG_CONFIG) --libdir) -lpq -lm

.PHONY: bench-soak
bench-soak: install-extension $(BUILD)/bin/infer-worker $(BENCH_SOAK_DRIVER)
	BUILD=$(BUILD) SHARED=$(SHARED) bench/soak/bench.sh
