#!/usr/bin/env python3
"""check_exports.py OUT_DIR [--exporter dynamo|torchscript] [--opset N] [MODEL ...]

Exports models with PyTorch's ONNX exporter and writes, for each, a test
folder that onnx-conformance --dir reads (OUT_DIR/<model>/model.onnx and
test_data_set_0/{input,output}_J.pb), the outputs being ONNX Runtime's on
the same file and inputs.  Then:

    build/bin/onnx-conformance --dir OUT_DIR --metric rel-l2 --tol 1e-4

says which ones the engine loads and how far its outputs are from ONNX
Runtime's.  It records what docs/models.md ("Models exported by other
tools") reports.  It needs torch, torchvision, onnxscript and transformers,
which the test environment (build/venv) does not hold: run it from a
virtual environment of its own, with onnx and onnxruntime at the versions
tools/requirements.txt pins.

Weights are random (seeded); batch-norm statistics are set from the export
input so that activations stay in range, and each model's input is two
random images (299x299 for inception_v3, 224x224 for the others), a
classifier head that starts at zero drawn at random, or, for
BERT, token ids with an attention mask that pads the second sequence.
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
import torchvision
from onnx import numpy_helper

VISION = [
    "resnet18", "mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0",
    "efficientnet_v2_s", "squeezenet1_1", "shufflenet_v2_x0_5", "densenet121",
    "regnet_y_400mf", "convnext_tiny", "mnasnet0_5", "alexnet", "googlenet",
    "inception_v3", "vit_b_16", "swin_t", "maxvit_t",
    "lraspp_mobilenet_v3_large", "deeplabv3_mobilenet_v3_large",
]
TEXT = ["bert_tiny"]


def vision_model(name):
    if name.startswith(("lraspp", "deeplabv3")):
        ctor = getattr(torchvision.models.segmentation, name)
        kw = {"weights": None, "weights_backbone": None}
    else:
        ctor = getattr(torchvision.models, name)
        kw = {"weights": None}
        if name in ("googlenet", "inception_v3"):
            kw["aux_logits"] = False
            kw["init_weights"] = True
    model = ctor(**kw).eval()
    with torch.no_grad():
        for m in model.modules():  # vit's head starts at zero: outputs all 0
            if isinstance(m, torch.nn.Linear) and not m.weight.any():
                m.weight.normal_(0, 0.02)
    size = 299 if name == "inception_v3" else 224
    x = torch.rand(2, 3, size, size)
    calibrate_batchnorm(model, x)
    return model, (x,), ["images"]


def calibrate_batchnorm(model, x):
    """Running statistics from x, so that random weights keep activations
    in range through deep stacks of batch norms."""
    bns = [m for m in model.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    if not bns:
        return
    for m in bns:
        m.reset_running_stats()
        m.momentum = None
        m.train()
    with torch.no_grad():
        model(x)
    model.eval()


def text_model():
    from transformers import BertConfig, BertModel
    cfg = BertConfig(vocab_size=1000, hidden_size=64, num_hidden_layers=2,
                     num_attention_heads=4, intermediate_size=128,
                     max_position_embeddings=64)
    model = BertModel(cfg).eval()
    ids = torch.randint(0, 1000, (2, 16))
    mask = torch.ones(2, 16, dtype=torch.int64)
    mask[1, 10:] = 0
    return model, (ids, mask), ["input_ids", "attention_mask"]


def first_output(model):
    """Wraps model so that it returns one tensor (the logits, the
    segmentation map, BERT's last hidden state)."""
    class First(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, *args):
            y = self.m(*args)
            if hasattr(y, "last_hidden_state"):
                return y.last_hidden_state
            if isinstance(y, dict):
                return y["out"]
            return y
    return First(model).eval()


def export(name, out, exporter, opset):
    if name in TEXT:
        model, args, names = text_model()
    else:
        model, args, names = vision_model(name)
    model = first_output(model)
    folder = os.path.join(out, name)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(os.path.join(folder, "test_data_set_0"))
    path = os.path.join(folder, "model.onnx")
    kw = {"input_names": names, "output_names": ["out"]}
    if opset:
        kw["opset_version"] = opset
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if exporter == "dynamo":
            torch.onnx.export(model, args, path, dynamo=True, external_data=False, **kw)
        else:
            torch.onnx.export(model, args, path, dynamo=False, **kw)
    m, _, ops = write_test_data(folder, path, args)
    written = [o.version for o in m.opset_import if o.domain in ("", "ai.onnx")]
    print("%s: opset %s, %d nodes, operators %s" % (name, written, len(m.graph.node), " ".join(ops)))


def write_test_data(folder, path, args):
    """Runs ONNX Runtime on the model at path with the tensors args and
    writes them and its outputs as folder/test_data_set_0/{input,output}_J.pb;
    returns the loaded model, the outputs and its sorted operator names."""
    m = onnx.load(path)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feeds = {i.name: a.numpy() for i, a in zip(sess.get_inputs(), args)}
    ref = sess.run(None, feeds)
    for j, (k, v) in enumerate(feeds.items()):
        with open(os.path.join(folder, "test_data_set_0", "input_%d.pb" % j), "wb") as f:
            f.write(numpy_helper.from_array(v, k).SerializeToString())
    for j, v in enumerate(ref):
        with open(os.path.join(folder, "test_data_set_0", "output_%d.pb" % j), "wb") as f:
            f.write(numpy_helper.from_array(v, sess.get_outputs()[j].name).SerializeToString())
    ops = sorted({(n.domain or "ai.onnx") + ":" + n.op_type for n in m.graph.node})
    return m, ref, ops


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("models", nargs="*")
    ap.add_argument("--exporter", default="dynamo", choices=["dynamo", "torchscript"])
    ap.add_argument("--opset", type=int, default=0, help="0: the exporter's default")
    a = ap.parse_intermixed_args()
    torch.manual_seed(0)
    print("torch %s, torchvision %s, onnx %s, onnxruntime %s" %
          (torch.__version__, torchvision.__version__, onnx.__version__, ort.__version__))
    failed = 0
    for name in a.models or VISION + TEXT:
        try:
            export(name, a.out, a.exporter, a.opset)
        except Exception as e:  # an export or ONNX Runtime failure: report, go on
            failed += 1
            shutil.rmtree(os.path.join(a.out, name), ignore_errors=True)
            print("%s: not exported: %s" % (name, str(e).splitlines()[0][:300]))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
