#!/usr/bin/env python3
"""bench/placement/make_profile.py: the scheduler benchmark's inputs from
../shared/data/placement/workflows.json (the Compass/Navigator workflows,
arXiv 2402.17652): an infer-worker --simulate profile, the SQL that
registers the models, and the job table the driver reads.

    make_profile.py WORKFLOWS.json OUTDIR [--time-scale S]

Writes into OUTDIR:
  profile.json   the simulated device: one model file per model name
                 ("<name>.onnx"; the same name is the same weights), bytes
                 from model_gb, load_bandwidth from host_to_gpu, and
                 compute_ms at batch sizes 1, 2, 4, 8, 16 and 32;
  models.sql     infer.create_model() for every stage, by stage id (two
                 stages of one model, mt5_a and mt5_b, name the same file);
  workflows.tsv  one line per workflow: name, kind (text or image),
                 input bytes, the job's SQL (over $1, the input's id), the
                 sum of its stages' scaled batch-1 times (ms), the stage
                 whose answer the columns' calls take as input ("-": they
                 take the input), the stages of the columns.

Assumptions (also in docs/placement.md, "Scheduler benchmark"):
  - Only batch 1 is published.  The batching curve assumed is
    t(b) = t(1) * (1 + BATCH_SLOPE * (b - 1)), BATCH_SLOPE = 0.1: a row
    added to a batch costs a tenth of a lone row (GPU kernels of these
    model sizes are far from saturated at batch 1).
  - TIME_SCALE multiplies every time (compute, load) and the arrival gaps
    (the driver scales those), so that a run fits in minutes; load time is
    bytes over host_to_gpu, so the scale divides the bandwidth.
  - The model stages become the query's ML calls: a first stage whose
    output feeds several branches is an inner call in a subquery
    (OFFSET 0 keeps it there) and the branches are calls of the outer
    query over its column (one request: the input is shipped once); a
    chain of two is a nested call (two requests: the planner batches
    infer.classify over infer.classify in two InferBatch nodes).  The worker runs a
    request's calls one after the other, so the best time of a job is the
    sum of its stages' scaled batch-1 times (every model resident, no
    queue), not the DAG's critical path.
  - Stages without a model (entry, aggregate) are cheap CPU steps and are
    left out (object_detection's 104 ms aggregate included: it costs the
    same under every policy).
"""
import json
import os
import sys

BATCH_SIZES = [1, 2, 4, 8, 16, 32]
BATCH_SLOPE = 0.1


def batch_ms(ms1, b):
    """The assumed time of a batch of b rows from the batch-1 time."""
    return ms1 * (1 + BATCH_SLOPE * (b - 1))


def sql_text(s):
    return "'" + s.replace("'", "''") + "'"


def job_sql(wf):
    """The one SQL query that runs workflow wf over input $1; the model
    (stage id) whose answer the others take as input, or None; and the
    models of the query's columns."""
    stages = [s for s in wf["stages"] if s["model"] is not None]
    ids = {s["id"]: s["_sid"] for s in stages}
    # a model stage's predecessors among the model stages
    deps = {s["_sid"]: [ids[a] for a in s["after"] if a in ids] for s in stages}
    roots = [s["_sid"] for s in stages if not deps[s["_sid"]]]
    image = wf["input_kb"] >= 100
    table, col = ("bench_images", "img") if image else ("bench_texts", "body")

    def call(sid, arg):
        return "infer.classify(%s, %s)" % (sql_text(sid), arg)

    if len(roots) > 1:
        # independent stages over the input: calls sharing it, one request
        cols = ", ".join("%s AS %s" % (call(r, col), r) for r in roots)
        return "SELECT %s FROM %s WHERE id = $1" % (cols, table), None, roots
    root = roots[0]
    children = [s for s in deps if deps[s] == [root]]
    if len(children) == 1:
        # a chain: one nested call (two InferBatch nodes, two requests)
        return ("SELECT %s AS %s FROM %s WHERE id = $1" %
                (call(children[0], call(root, col)), children[0], table),
                root, children)
    # a first stage feeding branches: its request, then one for the branches
    inner = "SELECT %s AS g FROM %s WHERE id = $1 OFFSET 0" % (call(root, col), table)
    cols = ", ".join("%s AS %s" % (call(c, "g"), c) for c in children)
    return "SELECT %s FROM (%s) s" % (cols, inner), root, children


def main():
    args = sys.argv[1:]
    scale = 1.0
    if "--time-scale" in args:
        i = args.index("--time-scale")
        scale = float(args[i + 1])
        del args[i:i + 2]
    if len(args) != 2 or scale <= 0:
        sys.exit("usage: make_profile.py WORKFLOWS.json OUTDIR [--time-scale S]")
    with open(args[0]) as f:
        wfs = json.load(f)
    out = args[1]
    os.makedirs(out, exist_ok=True)
    bw = wfs["bandwidth_gb_per_s"]["host_to_gpu"] * 1e9 / scale

    files = {}      # model name -> {bytes, ms1 list}
    models = {}     # stage id -> {file, task}
    for wf in wfs["workflows"]:
        image = wf["input_kb"] >= 100
        stages = {s["id"]: s for s in wf["stages"]}
        for s in wf["stages"]:
            if s["model"] is None:
                continue
            f = files.setdefault(s["model"], {"bytes": int(s["model_gb"] * 1e9), "ms": []})
            f["ms"].append(s["exec_ms"])
            # a stage over the input image is an image model, else a text one
            over_image = image and all(stages[a]["model"] is None for a in s["after"])
            sid = s["id"]
            if sid in models and models[sid]["file"] != s["model"] + ".onnx":
                sid = wf["name"] + "_" + sid
            models[sid] = {"file": s["model"] + ".onnx",
                           "task": "classify" if over_image else "classify_text"}
            s["_sid"] = sid

    profile = {
        "about": "bench/placement: workflows of arXiv 2402.17652 (../shared/data/"
                 "placement/workflows.json), times x %g; batch b takes "
                 "t1 * (1 + %g * (b - 1))" % (scale, BATCH_SLOPE),
        "time_scale": scale,
        "load_bandwidth": bw,
        "output_values": 4,
        "models": {},
    }
    for name, f in sorted(files.items()):
        # one model in several stages (nli 27/26 ms, opt 561/560): their mean
        ms1 = sum(f["ms"]) / len(f["ms"]) * scale
        profile["models"][name + ".onnx"] = {
            "bytes": f["bytes"],
            "compute_ms": [[b, round(batch_ms(ms1, b), 3)] for b in BATCH_SIZES],
        }
    with open(os.path.join(out, "profile.json"), "w") as f:
        # one model a line
        f.write(json.dumps(profile).replace('}, "', '},\n  "') + "\n")

    with open(os.path.join(out, "models.sql"), "w") as f:
        for sid, m in sorted(models.items()):
            f.write("SELECT infer.create_model(%s, %s, %s, labels => ARRAY['a','b']);\n" %
                    (sql_text(sid), sql_text(m["file"]), sql_text(m["task"])))

    with open(os.path.join(out, "workflows.tsv"), "w") as f:
        for wf in wfs["workflows"]:
            sql, root, outs = job_sql(wf)
            order = ([root] if root else []) + outs
            best = sum(profile["models"][models[sid]["file"]]["compute_ms"][0][1]
                       for sid in order)
            kind = "image" if wf["input_kb"] >= 100 else "text"
            f.write("%s\t%s\t%d\t%s\t%.3f\t%s\t%s\n" % (wf["name"], kind, wf["input_kb"] * 1000,
                                                       sql, best, root or "-", ",".join(outs)))


if __name__ == "__main__":
    main()
