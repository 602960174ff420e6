#!/usr/bin/env bash
# demo_search.sh [OCR_CSV]: semantic search in plain SQL, the text part of
# `make demo`.  Runs against the cluster and worker that tools/demo.sh
# started (PGHOST, PGPORT, ... in the environment, pg_infer created, a
# worker registered):
#   - loads the paragraphs of the PostgreSQL manual that Debian's
#     postgresql-doc-15 ships (tools/demo_search.py; skipped with a message
#     when the package is missing) into demo_docs and
#     embeds them:  INSERT ... SELECT id, infer.embed('minilm', body);
#   - runs a few questions as
#       ORDER BY infer.similarity((SELECT infer.embed('minilm', q)), emb) DESC LIMIT 5
#     (the scalar subquery embeds the question once, not once a row);
#   - with OCR_CSV (tools/demo.sh's name,text,truth,has_truth rows), does the
#     same over the text the OCR part read from the demo images.
# Prints the top hits with their scores, and timings on stderr.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
docdir=${PG_DOC_DIR:-/usr/share/doc/postgresql-doc-15/html}
ocr_csv=${1:-}

psql_q() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }

# search QUESTION TABLE: top 5 of TABLE (id/name, label, body, emb) for QUESTION.
search() {
	local q=$1 sql=$2 t0 t1
	t0=$(date +%s%N)
	echo "search: $q"
	psql -X -At -F '  ' -v ON_ERROR_STOP=1 -v q="$q" <<SQL | sed 's/^/  /'
SELECT to_char(s.score, '0.000'), s.label, left(s.body, 110)
  FROM (SELECT infer.similarity((SELECT infer.embed('minilm', :'q')), t.emb) AS score,
               t.label, t.body
          FROM ($sql) AS t) AS s
 ORDER BY s.score DESC
 LIMIT 5;
SQL
	t1=$(date +%s%N)
	echo "demo: search \"$q\" in $(( (t1 - t0) / 1000000 )) ms" >&2
}

if [ -d "$docdir" ]; then
	python3 "$top/tools/demo_search.py" "$docdir" 1000 | psql_q >/dev/null
	SECONDS=0
	psql_q -c "CREATE TABLE demo_doc_emb AS
		SELECT id, infer.embed('minilm', body) AS emb FROM demo_docs"
	n=$(psql -X -At -c 'SELECT count(*) FROM demo_doc_emb')
	secs=$SECONDS
	echo "demo: $n paragraphs of the PostgreSQL manual embedded in $secs s ($(( secs * 1000 / (n > 0 ? n : 1) )) ms each, one request a row)" >&2

	docs="SELECT d.page AS label, d.body, e.emb FROM demo_docs d JOIN demo_doc_emb e USING (id)"
	search "How can I make queries on a large table faster?" "$docs"
	search "restore a database from a backup file" "$docs"
	search "What happens when two transactions update the same row at once?" "$docs"
	search "split a big table into smaller pieces by date" "$docs"
else
	echo "demo: no PostgreSQL manual in $docdir (Debian package postgresql-doc-15); skipping its search" >&2
fi

if [ -n "$ocr_csv" ] && [ -f "$ocr_csv" ]; then
	psql_q <<SQL
CREATE TABLE demo_ocr (name text, body text, truth text, has_truth bool);
\\copy demo_ocr FROM '$ocr_csv' WITH (FORMAT csv)
CREATE TABLE demo_ocr_emb AS
	SELECT name, infer.embed('minilm', replace(body, E'\\n', ' ')) AS emb
	  FROM demo_ocr WHERE coalesce(body, '') <> '';
SQL
	echo "demo: $(psql -X -At -c 'SELECT count(*) FROM demo_ocr_emb') OCR texts embedded" >&2
	ocr="SELECT o.name AS label, replace(o.body, E'\\n', ' / ') AS body, e.emb
	       FROM demo_ocr o JOIN demo_ocr_emb e USING (name)"
	search "keep food cold" "$ocr"
	search "directions to the train station" "$ocr"
fi
