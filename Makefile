# pg_infer top-level build.
#
# `make` builds the engine, the worker, the tools and the extension;
# `make install` installs the extension into PostgreSQL and infer-worker into
# $(PREFIX)/bin; `make check` sets up what the tests need and runs every test;
# `make demo` runs OCR from SQL on real images; `make models` fetches the models.
# `make check-asan` runs the tests of `make check` against a build with
# AddressSanitizer and UndefinedBehaviorSanitizer in build-asan/, installing
# nothing (tests/asan/asan.mk).
#
# Each module keeps its own rules in a fragment beside its code (*.mk); this
# file holds the shared settings and the user-facing targets.  A fragment adds
# its programs to ALL_TARGETS and its test targets to CHECK_TARGETS.

BUILD       ?= build
PREFIX      ?= /usr/local
PG_CONFIG   ?= pg_config
PG_BINDIR   := $(shell $(PG_CONFIG) --bindir 2>/dev/null)
VENV        := $(BUILD)/venv
PYTHON      := $(VENV)/bin/python
MODEL_DIR   ?= $(BUILD)/models
SHARED      ?= ../shared

CC          ?= cc
NVCC        ?= nvcc
WARN        := -Wall -Wextra -Werror -Winit-self
CSTD        := -std=c11 -D_GNU_SOURCE
OPT         ?= -O2 -g
CFLAGS_OUR  := $(CSTD) $(OPT) $(WARN) -fPIC -pthread -I. -I$(BUILD)/gen
# protoc-c output is not ours: build it without -Werror.
CFLAGS_GEN  := $(CSTD) $(OPT) -fPIC -I. -I$(BUILD)/gen

ALL_TARGETS   :=
CHECK_TARGETS :=

.PHONY: all install check demo models setup clean extension install-extension \
        install-worker

all:

# Order matters: a fragment may use the variables of those before it.
include $(wildcard common/*.mk) $(wildcard worker/engine/*.mk) \
        $(wildcard worker/*.mk) $(wildcard tools/*.mk) \
        $(sort $(wildcard tests/*/*.mk)) $(wildcard examples/*.mk) \
        $(sort $(wildcard bench/*/*.mk))

all: $(ALL_TARGETS) extension

$(BUILD)/gen $(BUILD)/obj $(BUILD)/bin $(BUILD)/lib:
	mkdir -p $@

# Our C sources: $(BUILD)/obj/<path>.o, with header dependencies.  Every
# object waits for the generated protocol headers.
GEN_HEADERS := $(BUILD)/gen/common/pg_infer.pb-c.h $(BUILD)/gen/onnx/onnx.pb-c.h

$(BUILD)/obj/%.o: %.c | $(GEN_HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_OUR) -MMD -MP -c $< -o $@

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

# The extension builds with PGXS in its own folder.
extension: $(BUILD)/gen/common/pg_infer.pb-c.c
	$(MAKE) -C extension PG_CONFIG=$(PG_CONFIG)

install-extension: extension
	$(MAKE) -C extension PG_CONFIG=$(PG_CONFIG) install

install-worker: $(BUILD)/bin/infer-worker
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 $(BUILD)/bin/infer-worker $(DESTDIR)$(PREFIX)/bin/infer-worker

install: all install-extension install-worker

# Everything a fresh machine needs (Debian packages, Python tools, models).
setup:
	tools/setup.sh

# The models come with the rest of the set-up (they need its Python tools).
models: setup

check: setup
	$(MAKE) all
	$(MAKE) install
	tests/run_all.sh $(CHECK_TARGETS)

# the same suites under the sanitizers; its recipe is in tests/asan/asan.mk
check-asan: setup

IMAGES ?= $(SHARED)/data/ocr $(BUILD)/real-images
demo: setup
	$(MAKE) all
	$(MAKE) install
	tools/demo.sh $(IMAGES)

clean:
	rm -rf $(BUILD)/obj $(BUILD)/bin $(BUILD)/lib $(BUILD)/gen
	$(MAKE) -C extension clean
