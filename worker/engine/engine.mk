# worker/engine/: the ONNX executor, as a static library.
ONNX_PROTO  ?= /usr/include/onnx/onnx.proto
ENGINE_SRCS := $(wildcard worker/engine/*.c)
ENGINE_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(ENGINE_SRCS)) \
               $(BUILD)/obj/onnx/onnx.pb-c.o
ENGINE_LIB  := $(BUILD)/lib/libinferengine.a
ENGINE_LDLIBS := -lopenblas -lprotobuf-c -lm -lpthread

# onnx.proto from Debian's libonnx-dev, compiled by protoc-c.
$(BUILD)/gen/onnx/onnx.pb-c.c $(BUILD)/gen/onnx/onnx.pb-c.h: $(ONNX_PROTO)
	mkdir -p $(BUILD)/gen/onnx
	cp $(ONNX_PROTO) $(BUILD)/gen/onnx/onnx.proto
	protoc-c --proto_path=$(BUILD)/gen --c_out=$(BUILD)/gen onnx/onnx.proto

$(BUILD)/obj/onnx/onnx.pb-c.o: $(BUILD)/gen/onnx/onnx.pb-c.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_GEN) -c $< -o $@

$(ENGINE_LIB): $(ENGINE_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@
	ar rcs $@ $^

ALL_TARGETS += $(ENGINE_LIB)
