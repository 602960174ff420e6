#!/usr/bin/env python3
"""gen_node_tests.py OUT_DIR

Writes ONNX's node tests, as the pinned `onnx` package (tools/requirements.txt)
defines them, into OUT_DIR in the layout of onnx/backend/test/data/node:
OUT_DIR/test_NAME/model.onnx and test_data_set_K/{input,output}_J.pb.

Debian's libonnx-testdata holds the node tests of onnx 1.12 (opsets up to 17);
the package's wheel holds no test data, but it holds the cases themselves
(onnx.backend.test.case.node: each operator's examples, with the expected
outputs computed by its reference implementation), and these cover the opsets
after 17 as well.  This writes them as onnx's own `backend-test-tools
generate-data` does for its model cases.

numpy's global random state is seeded first: the cases draw their inputs
from it, so the same onnx and numpy write the same files every time.
"""
import os
import shutil
import sys

import numpy as np
from onnx import TensorProto, numpy_helper
from onnx.backend.test.case import node as node_cases


def serialize(value, value_info):
    """value (an array, a TensorProto, a list, a dict or an optional) as the
    .pb the graph input or output value_info declares."""
    t = value_info.type
    if isinstance(value, TensorProto):
        return value.SerializeToString()
    if t.HasField("sequence_type"):
        return numpy_helper.from_list(value, value_info.name).SerializeToString()
    if t.HasField("optional_type"):
        return numpy_helper.from_optional(value, value_info.name).SerializeToString()
    if t.HasField("map_type"):
        return numpy_helper.from_dict(value, value_info.name).SerializeToString()
    return numpy_helper.from_array(value, value_info.name).SerializeToString()


def write_case(out, case):
    folder = os.path.join(out, case.name)
    os.makedirs(folder)
    with open(os.path.join(folder, "model.onnx"), "wb") as f:
        f.write(case.model.SerializeToString())
    graph = case.model.graph
    for k, (inputs, outputs) in enumerate(case.data_sets):
        data = os.path.join(folder, "test_data_set_%d" % k)
        os.makedirs(data)
        for j, value in enumerate(inputs):
            with open(os.path.join(data, "input_%d.pb" % j), "wb") as f:
                f.write(serialize(value, graph.input[j]))
        for j, value in enumerate(outputs):
            with open(os.path.join(data, "output_%d.pb" % j), "wb") as f:
                f.write(serialize(value, graph.output[j]))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen_node_tests.py OUT_DIR")
    out = sys.argv[1]
    np.random.seed(0)
    cases = node_cases.collect_testcases(None)
    tmp = out + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    for case in cases:
        write_case(tmp, case)
    shutil.rmtree(out, ignore_errors=True)
    os.rename(tmp, out)
    print("gen_node_tests: %d node tests in %s" % (len(cases), out))


if __name__ == "__main__":
    import warnings
    # the cases' reference code divides by zero on purpose (inf, nan)
    warnings.simplefilter("ignore", RuntimeWarning)
    main()
