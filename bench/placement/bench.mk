# bench/placement/bench.mk: `make bench-placement` compares the placement
# policies (infer.placement) on the same open-loop jobs over simulated
# workers (bench/placement/bench.sh; docs/placement.md, "Scheduler
# benchmark"); not part of `make check`.  placement-driver
# (bench/placement/driver.c) is the libpq load generator.  It uses the
# installed extension, so it installs it first.
BENCH_PLACEMENT_DRIVER := $(BUILD)/bin/bench/placement-driver

$(BUILD)/obj/bench/placement/driver.o: CFLAGS_OUR += -I$(shell $(PG_CONFIG) --includedir)

$(BENCH_PLACEMENT_DRIVER): $(BUILD)/obj/bench/placement/driver.o
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_OUR) -o $@ $^ -L$(shell $(PG_CONFIG) --libdir) -lpq

.PHONY: bench-placement
bench-placement: install-extension $(BUILD)/bin/infer-worker \
		$(BUILD)/bin/tests/worker-client $(BENCH_PLACEMENT_DRIVER)
	BUILD=$(BUILD) SHARED=$(SHARED) bench/placement/bench.sh
