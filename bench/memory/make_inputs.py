"""bench/memory/make_inputs.py OUTDIR: the bench's tiny model and image.

Writes OUTDIR/tiny_gap.onnx, a real ONNX model that is as cheap as a model
can be (input x: N x 3 x 8 x 8 float, output y = GlobalAveragePool(x):
N x 3 x 1 x 1, the mean of each channel), and OUTDIR/tiny.png, an 8x8 RGB
PNG (a colour gradient), so that a million rows cost the worker little
and the bench measures the backend.  Needs the onnx package
(build/venv).
"""
import struct
import sys
import zlib
from pathlib import Path

import onnx
from onnx import TensorProto, helper


def write_model(path: Path) -> None:
    """Writes the GlobalAveragePool model (opset 13, batch dimension N)."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3, 1, 1])
    node = helper.make_node("GlobalAveragePool", ["x"], ["y"])
    graph = helper.make_graph([node], "tiny_gap", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="pg_infer bench/memory")
    model.ir_version = 8  # what opset 13 needs; older runtimes refuse newer IRs
    onnx.checker.check_model(model)
    onnx.save(model, str(path))


def png_chunk(kind: bytes, data: bytes) -> bytes:
    """One PNG chunk: length, type, data, CRC of type and data."""
    return (struct.pack(">I", len(data)) + kind + data +
            struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))


def write_png(path: Path, width: int = 8, height: int = 8) -> None:
    """Writes an 8-bit RGB PNG: red grows left to right, green top to
    bottom, blue is constant (filter type 0 on every scanline)."""
    rows = b""
    for yy in range(height):
        rows += b"\x00" + b"".join(bytes((32 * xx, 32 * yy, 128))
                                   for xx in range(width))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    data = (b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr) +
            png_chunk(b"IDAT", zlib.compress(rows, 9)) + png_chunk(b"IEND", b""))
    path.write_bytes(data)


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    write_model(out / "tiny_gap.onnx")
    write_png(out / "tiny.png")


if __name__ == "__main__":
    main()
