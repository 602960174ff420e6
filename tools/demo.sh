#!/usr/bin/env bash
# demo.sh DIR...: OCR from SQL on real images.  Starts a throwaway
# PostgreSQL cluster and one infer-worker on loopback, loads the JPEG and PNG
# files of each DIR into a table, runs
#     SELECT name, infer.ocr(img) FROM demo_images
# and prints name, character error rate against the folder's manifest.tsv
# (where there is one) and the recognised text, then the mean CER.  Before
# that report, tools/demo_search.sh runs semantic search in SQL (infer.embed,
# infer.similarity) over paragraphs of the PostgreSQL manual and over the
# OCR output, and prints the top hits; the mean CER stays the last line.
# Stops what it started, also on failure.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
[ "$#" -gt 0 ] || set -- "$top/../shared/data/ocr" "$top/build/real-images"
for d in "$@"; do
	[ -d "$d" ] || { echo "demo: $d is not a folder" >&2; exit 1; }
done
# shellcheck source=tools/testenv.sh
. "$top/tools/testenv.sh"
trap testenv_stop EXIT
tmp=$top/build/demo-tmp
testenv_start_cluster "$tmp"
testenv_start_worker "$tmp/worker.log"
echo "demo: PostgreSQL on 127.0.0.1:$PGPORT, infer-worker at $TESTENV_ENDPOINT (logs in $tmp)" >&2

psql -X -q -v ON_ERROR_STOP=1 >/dev/null <<SQL
CREATE EXTENSION pg_infer;
SELECT infer.add_worker('demo', '$TESTENV_ENDPOINT');
$(python3 "$top/tools/demo_load.py" "$@")
SQL
SECONDS=0
psql -X -q -v ON_ERROR_STOP=1 -c "\\copy (SELECT name, infer.ocr(img), truth, has_truth FROM demo_images ORDER BY name) TO '$tmp/ocr.csv' WITH (FORMAT csv)"
echo "demo: $(psql -X -At -c 'SELECT count(*) FROM demo_images') images read in $SECONDS s" >&2
"$top/tools/demo_search.sh" "$tmp/ocr.csv"
python3 "$top/tools/demo_report.py" <"$tmp/ocr.csv"
