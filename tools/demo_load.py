"""Prints SQL that loads every JPEG/PNG of the given folders into the table
demo_images(name, img, truth, has_truth); truth comes from the folder's
manifest.tsv where there is one.  Paths are made absolute for the server."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cer import read_manifest  # noqa: E402


def quote(s):
    return "'" + s.replace("'", "''") + "'"


print("CREATE TABLE demo_images (name text, img bytea, truth text, has_truth bool);")
for folder in sys.argv[1:]:
    folder = os.path.abspath(folder)
    manifest = os.path.join(folder, "manifest.tsv")
    truth = read_manifest(manifest) if os.path.exists(manifest) else {}
    for name in sorted(os.listdir(folder)):
        if not name.lower().endswith((".jpg", ".jpeg", ".png")):
            continue
        text = truth.get(name)
        print("INSERT INTO demo_images VALUES (%s, pg_read_binary_file(%s), %s, %s);" % (
            quote(name), quote(os.path.join(folder, name)),
            quote(text) if text is not None else "NULL",
            "true" if text is not None else "false"))
