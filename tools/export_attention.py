#!/usr/bin/env python3
"""export_attention.py [OUT_DIR] [--opset N] [NAME ...]

Small models around torch.nn.functional.scaled_dot_product_attention,
exported with PyTorch's dynamo exporter (which writes one ONNX Attention
node for each call from opset 23 on), each written as
OUT_DIR/<name>/model.onnx and test_data_set_0/{input,output}_J.pb with ONNX
Runtime's outputs on the same file, as tools/check_exports.py writes its
folders; onnx-conformance --dir reads them.  Prints, per model, the largest
|ONNX Runtime - PyTorch eager| difference and exits 1 when one is above
1e-4 or a model does not export.

tests/onnx/exports/ holds this script's output at opset 23 (seeded, so the
same on every run of the same PyTorch), which `make check-models` runs.  It
needs torch, onnxscript and the pinned onnx and onnxruntime: a virtual
environment of its own, as tools/check_exports.py needs (docs/models.md).
"""
import argparse
import os
import shutil
import sys
import warnings

import numpy as np
import onnx
import onnxruntime as ort
import torch
import torch.nn.functional as F

from check_exports import write_test_data

B, H, S, D = 2, 4, 8, 16


class Sdpa(torch.nn.Module):
    def __init__(self, **kw):
        super().__init__()
        self.kw = kw

    def forward(self, q, k, v, mask=None):
        if mask is None:
            return F.scaled_dot_product_attention(q, k, v, **self.kw)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, **self.kw)


class TinyDecoder(torch.nn.Module):
    """One pre-norm causal self-attention block + MLP, from hidden states."""
    def __init__(self, dim=32, heads=4, kv_heads=4):
        super().__init__()
        self.h, self.kvh, self.hd = heads, kv_heads, dim // heads
        self.norm1 = torch.nn.LayerNorm(dim)
        self.q = torch.nn.Linear(dim, heads * self.hd)
        self.k = torch.nn.Linear(dim, kv_heads * self.hd)
        self.v = torch.nn.Linear(dim, kv_heads * self.hd)
        self.o = torch.nn.Linear(dim, dim)
        self.norm2 = torch.nn.LayerNorm(dim)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(dim, 4 * dim), torch.nn.GELU(), torch.nn.Linear(4 * dim, dim))

    def forward(self, x):
        b, s, _ = x.shape
        y = self.norm1(x)
        q = self.q(y).view(b, s, self.h, self.hd).transpose(1, 2)
        k = self.k(y).view(b, s, self.kvh, self.hd).transpose(1, 2)
        v = self.v(y).view(b, s, self.kvh, self.hd).transpose(1, 2)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=self.kvh != self.h)
        x = x + self.o(a.transpose(1, 2).reshape(b, s, -1))
        return x + self.mlp(self.norm2(x))


def qkv(hq=H, hkv=H, sq=S, skv=S):
    return (torch.randn(B, hq, sq, D), torch.randn(B, hkv, skv, D), torch.randn(B, hkv, skv, D))


def bool_mask(sq=S, skv=S):
    m = torch.rand(B, 1, sq, skv) > 0.3
    m[..., torch.arange(sq), torch.arange(sq) % skv] = True  # no fully masked row
    return m


def float_mask(sq=S, skv=S):
    m = torch.randn(B, 1, sq, skv)
    m = m.masked_fill(~bool_mask(sq, skv), float("-inf"))
    return m


def cases():
    torch.manual_seed(0)
    yield "sdpa_causal", Sdpa(is_causal=True), qkv(), ["q", "k", "v"]
    yield "sdpa_float_mask", Sdpa(), qkv() + (float_mask(),), ["q", "k", "v", "mask"]
    yield "sdpa_bool_mask", Sdpa(), qkv() + (bool_mask(),), ["q", "k", "v", "mask"]
    yield "sdpa_causal_scale", Sdpa(is_causal=True, scale=0.3), qkv(), ["q", "k", "v"]
    yield "sdpa_gqa_causal", Sdpa(is_causal=True, enable_gqa=True), qkv(hq=8, hkv=2), ["q", "k", "v"]
    yield "sdpa_gqa_bool_mask", Sdpa(enable_gqa=True), qkv(hq=8, hkv=2) + (bool_mask(),), ["q", "k", "v", "mask"]
    yield "sdpa_cross_float_mask", Sdpa(), qkv(sq=5, skv=11) + (float_mask(5, 11),), ["q", "k", "v", "mask"]
    yield "sdpa_causal_sq_ne_skv", Sdpa(is_causal=True), qkv(sq=5, skv=11), ["q", "k", "v"]
    yield "tiny_decoder", TinyDecoder(), (torch.randn(B, S, 32),), ["x"]
    yield "tiny_decoder_gqa", TinyDecoder(heads=4, kv_heads=2), (torch.randn(B, S, 32),), ["x"]


def export(name, model, args, names, out, opset):
    model.eval()
    folder = os.path.join(out, name)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(os.path.join(folder, "test_data_set_0"))
    path = os.path.join(folder, "model.onnx")
    with torch.no_grad():
        want = model(*args).numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, args, path, dynamo=True, external_data=False, opset_version=opset,
                          input_names=names, output_names=["out"], verbose=False)
    onnx.checker.check_model(onnx.load(path), full_check=True)
    m, ref, ops = write_test_data(folder, path, args)
    err = float(np.max(np.abs(ref[0] - want)))
    print("%s: opset %s, %d nodes, max|ort-torch| %.3g, operators %s" % (
        name, [o.version for o in m.opset_import], len(m.graph.node), err, " ".join(ops)), flush=True)
    return err


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out", nargs="?", default="tests/onnx/exports")
    ap.add_argument("--opset", type=int, default=23)
    ap.add_argument("only", nargs="*")
    a = ap.parse_intermixed_args()
    print("torch %s, onnx %s, onnxruntime %s" % (torch.__version__, onnx.__version__, ort.__version__))
    failed = 0
    for name, model, args, names in cases():
        if a.only and name not in a.only:
            continue
        try:
            if export(name, model, args, names, a.out, a.opset) > 1e-4:
                print("%s: ORT differs from torch" % name)
                failed += 1
        except Exception as e:
            failed += 1
            shutil.rmtree(os.path.join(a.out, name), ignore_errors=True)
            print("%s: not exported: %s" % (name, str(e).splitlines()[0][:400]))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
