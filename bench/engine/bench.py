#!/usr/bin/env python3
"""bench/engine/bench.py: our ONNX engine against ONNX Runtime, same tensors.

For each case (model, input shape) and thread count (1 and 2) it writes the
input tensors as raw files, times ONNX Runtime in this process
(intra_op_num_threads=n, inter_op_num_threads=1, sequential execution) and
our engine with engine-bench-run (bench_run.c, a C program over
libinferengine.a that calls ie_set_threads(n)), each the median of --runs
runs after two warm-up runs, the better of --rounds interleaved rounds
(ours, ORT, ours, ORT) against bursts of load on a shared machine.  Prints
a table, our cls ms/row at N=1,4,16,64 (1 thread), the OpenBLAS kernel
family our runs used, and one final line:
  RESULT: max_ratio_vs_ort=X.XX worst=<case>@<n>t <case>@<n>t=<ratio> ...

Cases marked for checking (the dynamically quantized MiniLM and detection
model, quantized here at run time into a temporary folder) first print the
rel-L2 error of our first output against ONNX Runtime's on the same model
and inputs.

Options: --only a,b (case names), --runs N, --rounds N, --threads 1,2.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))
BLAS_CORE = set()   # OpenBLAS kernel families our runs reported


def det_photo_input(path):
    """A photo resized as RapidOCR 1.4.4 does for detection: the short side
    to limit_side_len 736 (limit_type min), both sides rounded to a multiple
    of 32, BGR, (x/255 - 0.5)/0.5, NCHW."""
    import cv2
    img = cv2.imread(path, cv2.IMREAD_COLOR)
    h, w = img.shape[:2]
    ratio = 736.0 / min(h, w) if min(h, w) < 736 else 1.0
    rh = max(int(round(h * ratio / 32) * 32), 32)
    rw = max(int(round(w * ratio / 32) * 32), 32)
    img = cv2.resize(img, (rw, rh)).astype(np.float32)
    img = (img / 255.0 - 0.5) / 0.5
    return img.transpose(2, 0, 1)[None].copy()


def cases(args):
    """(name, model path, {input name: array}) per case; a string instead of
    the dict means the case is skipped, for that reason."""
    rng = np.random.default_rng(1234)
    md = args.models
    out = []
    det = os.path.join(md, "ch_PP-OCRv4_det_infer.onnx")
    out.append(("det960", det, {"x": rng.uniform(-1, 1, (1, 3, 960, 960)).astype(np.float32)}))
    photo = os.path.join(args.shared, "data/ocr-real/scenetext01.jpg")
    x = det_photo_input(photo)
    out.append(("det_photo%dx%d" % (x.shape[2], x.shape[3]), det, {"x": x}))
    # its own generator, so the later cases keep their inputs
    x640 = np.random.default_rng(640).uniform(-1, 1, (1, 3, 640, 640)).astype(np.float32)
    out.append(quant_det_case(det, {"x": x640}))
    out.append(("rec8", os.path.join(md, "ch_PP-OCRv4_rec_infer.onnx"),
                {"x": rng.uniform(-1, 1, (8, 3, 48, 320)).astype(np.float32)}))
    out.append(("cls8", os.path.join(md, "ch_ppocr_mobile_v2.0_cls_infer.onnx"),
                {"x": rng.uniform(-1, 1, (8, 3, 48, 192)).astype(np.float32)}))
    mini = os.path.join(md, "minilm/model.onnx")
    if not os.path.exists(mini):
        out.append(("minilm32x128", mini, "skipped: %s does not exist" % mini))
    else:
        sess = ort.InferenceSession(mini, providers=["CPUExecutionProvider"])
        feeds = {}
        for i in sess.get_inputs():
            if "mask" in i.name:
                v = np.ones((32, 128), np.int64)
                v[:, 100:] = 0
            elif "type" in i.name:
                v = np.zeros((32, 128), np.int64)
            else:
                v = rng.integers(1000, 20000, (32, 128)).astype(np.int64)
                v[:, 0] = 101
            feeds[i.name] = v
        out.append(("minilm32x128", mini, feeds))
        out.append(quant_minilm_case(mini, feeds))
    out += attention_cases(rng)
    out += recurrent_cases(rng)
    return out


ATTN_DIR = None
CHECK = set()       # case names whose output is compared with ONNX Runtime's


def tmp_dir():
    """A temporary folder for models written at run time, removed at exit."""
    import atexit
    import shutil
    global ATTN_DIR
    if ATTN_DIR is None:
        ATTN_DIR = tempfile.mkdtemp(prefix="bench-attn-")
        atexit.register(shutil.rmtree, ATTN_DIR, True)
    return ATTN_DIR


def quantized_case(name, src, feeds, op_types, prepare=None):
    """src quantized by onnxruntime.quantization.quantize_dynamic (int8
    weights, QInt8) for op_types, written to the temporary folder as
    NAME.onnx, after prepare(src) -> the path to quantize, if given; a
    skipped case (src itself, with the reason) when that fails."""
    try:
        from onnxruntime.quantization import QuantType, quantize_dynamic
        path = os.path.join(tmp_dir(), name + ".onnx")
        quantize_dynamic(prepare(src) if prepare else src, path,
                         weight_type=QuantType.QInt8, op_types_to_quantize=op_types)
    except Exception as e:  # noqa: BLE001 - reported as a skipped case
        return (name, src, "skipped: quantize_dynamic failed: %s" % e)
    CHECK.add(name)
    return (name, path, feeds)


def quant_minilm_case(mini, feeds):
    """MiniLM with its MatMuls quantized (quantized_case): DynamicQuantizeLinear's
    uint8 activations times int8 weights through MatMulInteger; same inputs
    as minilm32x128."""
    return quantized_case("minilm_qdyn32x128", mini, feeds, ["MatMul"])


def constants_as_initializers(det):
    """A copy of model det, in the temporary folder, whose Constant nodes'
    values are initializers of their outputs' names: quantize_dynamic refuses
    weights held in Constant nodes ("Expected conv2d_394.w_0 to be an
    initializer"), as the OCR detector's export holds them."""
    import onnx
    m = onnx.load(det)
    keep = []
    for n in m.graph.node:
        if n.op_type == "Constant" and [a.name for a in n.attribute] == ["value"]:
            t = onnx.TensorProto()
            t.CopyFrom(n.attribute[0].t)
            t.name = n.output[0]
            m.graph.initializer.append(t)
        else:
            keep.append(n)
    del m.graph.node[:]
    m.graph.node.extend(keep)
    src = os.path.join(tmp_dir(), "det_qdyn640_float.onnx")
    onnx.save(m, src)
    return src


def quant_det_case(det, feeds):
    """The detection model with its 62 Convs quantized (quantized_case):
    DynamicQuantizeLinear's uint8 activations convolved with int8 weights
    through ConvInteger, depthwise and grouped ones included; a 640x640
    input (our old plain ConvInteger loop took seconds at 960)."""
    return quantized_case("det_qdyn640", det, feeds, ["Conv"], constants_as_initializers)


def attention_cases(rng):
    """Single-node Attention models (opset 23), written to a temporary
    folder: BERT-base's shapes with a padding mask (an initializer, bool
    [8, 1, 128, 128], the last 28 keys of odd rows masked: ONNX Runtime
    does not broadcast the query axis of a mask), and a decoder's
    grouped-query causal attention in the 3-D layout (8 query heads over 2
    key/value heads, 512 tokens)."""
    import onnx
    from onnx import helper, numpy_helper
    tmp_dir()
    out = []
    mask = np.ones((8, 1, 128, 128), bool)
    mask[1::2, :, :, 100:] = False
    specs = [
        ("attn_bert8x128", [8, 12, 128, 64], [8, 12, 128, 64], {}, mask),
        ("attn_gqa_causal512", [1, 512, 8 * 64], [1, 512, 2 * 64],
         {"q_num_heads": 8, "kv_num_heads": 2, "is_causal": 1}, None),
    ]
    for name, qs, ks, attrs, m in specs:
        ins = ["Q", "K", "V"] + (["mask"] if m is not None else [])
        node = helper.make_node("Attention", ins, ["Y"], **attrs)
        graph = helper.make_graph(
            [node], name,
            [helper.make_tensor_value_info("Q", onnx.TensorProto.FLOAT, qs),
             helper.make_tensor_value_info("K", onnx.TensorProto.FLOAT, ks),
             helper.make_tensor_value_info("V", onnx.TensorProto.FLOAT, ks)],
            [helper.make_tensor_value_info("Y", onnx.TensorProto.FLOAT, None)],
            [numpy_helper.from_array(m, "mask")] if m is not None else [])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
        model.ir_version = 10
        path = os.path.join(ATTN_DIR, name + ".onnx")
        onnx.save(model, path)
        out.append((name, path, {"Q": rng.standard_normal(qs).astype(np.float32),
                                 "K": rng.standard_normal(ks).astype(np.float32),
                                 "V": rng.standard_normal(ks).astype(np.float32)}))
    return out


def recurrent_cases(rng):
    """Single-node bidirectional LSTM and GRU models (opset 14), written to
    a temporary folder: seq 128, batch 8, input 256, hidden 256, layout 0,
    W, R and B initializers uniform in +-1/sqrt(hidden) (PyTorch's init),
    X the only graph input, all three (two) outputs."""
    import atexit
    import shutil
    import onnx
    from onnx import helper, numpy_helper
    global ATTN_DIR
    if ATTN_DIR is None:
        ATTN_DIR = tempfile.mkdtemp(prefix="bench-attn-")
        atexit.register(shutil.rmtree, ATTN_DIR, True)
    out = []
    S, N, I, H = 128, 8, 256, 256
    for name, op, g, outs in [("lstm_bidi128", "LSTM", 4, ["Y", "Y_h", "Y_c"]),
                              ("gru_bidi128", "GRU", 3, ["Y", "Y_h"])]:
        k = 1.0 / np.sqrt(H)
        inits = [numpy_helper.from_array(rng.uniform(-k, k, shape).astype(np.float32), n)
                 for n, shape in [("W", (2, g * H, I)), ("R", (2, g * H, H)),
                                  ("B", (2, 2 * g * H))]]
        node = helper.make_node(op, ["X", "W", "R", "B"], outs, hidden_size=H,
                                direction="bidirectional")
        graph = helper.make_graph(
            [node], name,
            [helper.make_tensor_value_info("X", onnx.TensorProto.FLOAT, [S, N, I])],
            [helper.make_tensor_value_info(o, onnx.TensorProto.FLOAT, None) for o in outs],
            inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
        model.ir_version = 8
        path = os.path.join(ATTN_DIR, name + ".onnx")
        onnx.save(model, path)
        out.append((name, path, {"X": rng.standard_normal((S, N, I)).astype(np.float32)}))
    return out


def ort_ms(model, feeds, threads, runs):
    """Median ms of ONNX Runtime on feeds, after two warm-up runs."""
    import time
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    feeds = {n: feeds[n] for n in names}
    for _ in range(2):
        sess.run(None, feeds)
    ts = []
    for _ in range(runs):
        t0 = time.perf_counter()
        sess.run(None, feeds)
        ts.append((time.perf_counter() - t0) * 1000.0)
    return float(np.median(ts))


def write_inputs(tmp, name, model, feeds):
    """Writes feeds as raw files in the model's input order; returns the
    FILE:DTYPE:SHAPE specs for engine-bench-run."""
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    specs = []
    for i in sess.get_inputs():
        a = np.ascontiguousarray(feeds[i.name])
        path = os.path.join(tmp, "%s_%s.raw" % (name, i.name.replace("/", "_")))
        a.tofile(path)
        dt = {np.dtype(np.float32): "float", np.dtype(np.int64): "int64"}[a.dtype]
        specs.append("%s:%s:%s" % (path, dt, "x".join(str(d) for d in a.shape)))
    return specs


def rel_l2(runner, model, specs, feeds, tmp):
    """rel-L2 error of our first output against ONNX Runtime's, or a string
    saying why it could not be computed."""
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    ref = sess.run(None, {i.name: feeds[i.name] for i in sess.get_inputs()})[0]
    path = os.path.join(tmp, "out0.raw")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", BENCH_OUT0=path)
    p = subprocess.run([runner, model, "1", "1"] + specs,
                       capture_output=True, text=True, env=env)
    if p.returncode != 0:
        return "failed: " + (p.stderr.strip().splitlines() or ["rc %d" % p.returncode])[-1]
    got = np.fromfile(path, dtype=ref.dtype)
    if got.size != ref.size:
        return "failed: %d values, ONNX Runtime %d" % (got.size, ref.size)
    ref = ref.reshape(-1).astype(np.float64)
    return float(np.linalg.norm(got.astype(np.float64) - ref) / np.linalg.norm(ref))


def ours_ms(runner, model, specs, threads, runs):
    """Median ms of our engine, or a string saying why it failed."""
    # Our engine keeps OpenBLAS serial and runs its own thread pool, but
    # OpenBLAS starts its threads at load and they poll for work for a while:
    # in a short-lived benchmark that polling would take a core from ours.
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    p = subprocess.run([runner, model, str(threads), str(runs)] + specs,
                       capture_output=True, text=True, env=env)
    if p.returncode != 0:
        return "failed: " + (p.stderr.strip().splitlines() or ["rc %d" % p.returncode])[-1]
    for tok in p.stdout.split():
        if tok.startswith("blas_core="):
            BLAS_CORE.add(tok.split("=")[1])
        if tok.startswith("median_ms="):
            return float(tok.split("=")[1])
    return "failed: no median in output"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runner", required=True)
    ap.add_argument("--models", default="build/models")
    ap.add_argument("--shared", default="../shared")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--only", default="")
    ap.add_argument("--no-rows", action="store_true")
    args = ap.parse_args()
    threads = [int(t) for t in args.threads.split(",")]
    only = [o for o in args.only.split(",") if o]

    rows = []
    ratios = []
    with tempfile.TemporaryDirectory(prefix="bench-engine-") as tmp:
        print("%-20s %7s %10s %10s %8s" % ("model", "threads", "ours_ms", "ort_ms", "ratio"))
        for name, model, feeds in cases(args):
            if only and not any(name.startswith(o) for o in only):
                continue
            if isinstance(feeds, str):
                print("%-20s %s" % (name, feeds))
                continue
            specs = write_inputs(tmp, name, model, feeds)
            if name in CHECK:
                e = rel_l2(args.runner, model, specs, feeds, tmp)
                print("%-20s rel-L2 vs ONNX Runtime: %s" % (
                    name, e if isinstance(e, str) else "%.3g" % e), flush=True)
            for n in threads:
                # --rounds interleaved rounds (ours, ORT, ours, ORT, ...);
                # each side keeps its best median, so a burst of load from
                # other processes on a shared machine hits both alike
                ours, theirs = None, None
                for _ in range(args.rounds):
                    o = ours_ms(args.runner, model, specs, n, args.runs)
                    if isinstance(o, str):
                        ours = o
                        break
                    ours = o if ours is None else min(ours, o)
                    t = ort_ms(model, feeds, n, args.runs)
                    theirs = t if theirs is None else min(theirs, t)
                if isinstance(ours, str):
                    print("%-20s %7d skipped: our engine %s" % (name, n, ours))
                    break
                r = ours / theirs
                ratios.append((r, "%s@%dt" % (name, n)))
                print("%-20s %7d %10.2f %10.2f %8.2f" % (name, n, ours, theirs, r), flush=True)

        if not args.no_rows and (not only or "cls" in only):
            cls = os.path.join(args.models, "ch_ppocr_mobile_v2.0_cls_infer.onnx")
            x = np.random.default_rng(99).uniform(-1, 1, (64, 3, 48, 192)).astype(np.float32)
            path = os.path.join(tmp, "cls64.raw")
            x.tofile(path)
            line = []
            for n in (1, 4, 16, 64):
                got = [ours_ms(args.runner, cls, ["%s:float:%dx3x48x192" % (path, n)], 1,
                               max(args.runs, 10)) for _ in range(args.rounds)]
                nums = [v for v in got if not isinstance(v, str)]
                ms = min(nums) if nums else got[0]
                line.append("N=%d %s" % (n, "%.3f" % (ms / n) if not isinstance(ms, str) else ms))
            print("cls ms/row (ours, 1 thread): " + "  ".join(line))

    print("OpenBLAS kernels: %s (OPENBLAS_CORETYPE=%s)" % (
        ",".join(sorted(BLAS_CORE)) or "?", os.environ.get("OPENBLAS_CORETYPE", "<unset>")))
    if ratios:
        worst = max(ratios)
        print("RESULT: max_ratio_vs_ort=%.2f worst=%s %s" % (
            worst[0], worst[1], " ".join("%s=%.2f" % (c, r) for r, c in ratios)))
    else:
        print("RESULT: max_ratio_vs_ort=nan worst=none (nothing ran)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
