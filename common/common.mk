# common/: the wire protocol, compiled by protoc-c into $(BUILD)/gen/common/.
PROTO_GEN_C := $(BUILD)/gen/common/pg_infer.pb-c.c
COMMON_OBJS := $(BUILD)/obj/common/pg_infer.pb-c.o

$(BUILD)/gen/common/pg_infer.pb-c.c $(BUILD)/gen/common/pg_infer.pb-c.h: common/pg_infer.proto
	mkdir -p $(BUILD)/gen
	protoc-c --proto_path=. --c_out=$(BUILD)/gen common/pg_infer.proto

$(BUILD)/obj/common/pg_infer.pb-c.o: $(BUILD)/gen/common/pg_infer.pb-c.c
	mkdir -p $(dir $@)
	$(CC) $(CFLAGS_GEN) -c $< -o $@
