# tests/asan/asan.mk: `make check-asan` runs the suites of `make check`
# (CHECK_TARGETS) against programs and an extension built with gcc's
# AddressSanitizer and UndefinedBehaviorSanitizer (docs/reliability.md,
# "AddressSanitizer").
#
# tests/asan/run.sh does the work: it builds every program of ALL_TARGETS
# in $(ASAN_BUILD) (make BUILD=$(ASAN_BUILD) OPT="$(ASAN_OPT)" asan-programs),
# builds pg_infer.so there too, lays out a private PostgreSQL tree under
# $(ASAN_BUILD)/pg whose server loads that pg_infer.so with the sanitizer
# runtimes preloaded (nothing is installed system-wide, build/ is not
# touched), runs each suite with make BUILD=$(ASAN_BUILD) -o install-extension,
# and fails when a suite fails or any sanitizer wrote a report (the reports
# go to files under $(ASAN_BUILD)/sanitizer-logs, printed at the end).
# Not part of `make check`.
ASAN_BUILD ?= build-asan
ASAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined \
              -fno-omit-frame-pointer
ASAN_OPT   := -O1 -g $(ASAN_FLAGS)

.PHONY: check-asan asan-programs

check-asan:
	ASAN_BUILD=$(ASAN_BUILD) ASAN_OPT="$(ASAN_OPT)" PG_CONFIG=$(PG_CONFIG) \
		MODEL_DIR=$(abspath $(MODEL_DIR)) PYTHON=$(abspath $(PYTHON)) \
		SHARED=$(SHARED) tests/asan/run.sh $(filter-out check-asan,$(CHECK_TARGETS))

# every program and library of the fragments (not the extension), in
# $(BUILD); run.sh calls it with BUILD=$(ASAN_BUILD) and OPT=$(ASAN_OPT).
# A recipe, not prerequisites: ALL_TARGETS is complete only once every
# fragment has been read.
asan-programs:
	$(MAKE) $(ALL_TARGETS)
