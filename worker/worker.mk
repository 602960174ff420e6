# worker/: the infer-worker daemon and the infer-ocr command.
# Every worker/*.c except the *main.c files goes into libinferworker.a.
WORKER_SRCS := $(filter-out %main.c,$(wildcard worker/*.c))
WORKER_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(WORKER_SRCS)) $(COMMON_OBJS)
WORKER_LIB  := $(BUILD)/lib/libinferworker.a
WORKER_LDLIBS := $(WORKER_LIB) $(ENGINE_LIB) -lzmq -ljpeg -lpng -lexif -lcrypto \
                 -linih -lmicrohttpd $(ENGINE_LDLIBS)

$(WORKER_LIB): $(WORKER_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@
	ar rcs $@ $^

$(BUILD)/bin/infer-worker: $(BUILD)/obj/worker/main.o $(WORKER_LIB) $(ENGINE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_OUR) -o $@ $< $(WORKER_LDLIBS)

$(BUILD)/bin/infer-ocr: $(BUILD)/obj/worker/ocr_main.o $(WORKER_LIB) $(ENGINE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_OUR) -o $@ $< $(WORKER_LDLIBS)

ALL_TARGETS += $(WORKER_LIB) $(BUILD)/bin/infer-worker $(BUILD)/bin/infer-ocr
