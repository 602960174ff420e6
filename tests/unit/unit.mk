# tests/unit/: one C test program per worker module, tests/unit/test_<module>.c.
# Each prints "test_<module>: N passed, M failed" and exits non-zero on failure.
UNIT_SRCS  := $(wildcard tests/unit/test_*.c)
UNIT_BINS  := $(patsubst tests/unit/%.c,$(BUILD)/bin/tests/%,$(UNIT_SRCS))

$(BUILD)/bin/tests/%: $(BUILD)/obj/tests/unit/%.o $(BUILD)/lib/libinferworker.a $(BUILD)/lib/libinferengine.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_OUR) -o $@ $< $(WORKER_LDLIBS)

ALL_TARGETS += $(UNIT_BINS)
CHECK_TARGETS += check-unit

.PHONY: check-unit
check-unit: $(UNIT_BINS)
	@rc=0; for t in $(UNIT_BINS); do $$t || rc=1; done; exit $$rc
