#!/usr/bin/env bash
# demo_search.sh [OCR_CSV]: semantic search in plain SQL, the text part of
# `make demo`.  Runs against the cluster and worker that tools/demo.sh
# started (PGHOST, PGPORT, ... in the environment, pg_infer created, a
# worker registered):
#   - loads the paragraphs of the PostgreSQL manual that Debian's
#     postgresql-doc-15 ships (tools/demo_search.py; skipped with a message
#     when the package is missing) into demo_docs and
#     embeds them:  INSERT ... SELECT id, infer.embed('minilm', body), which
#     the planner batches (InferBatch; the plan is checked and printed);
#   - runs a few questions as
#       ORDER BY infer.similarity((SELECT infer.embed('minilm', q)), emb) DESC NULLS LAST LIMIT 5
#     (the scalar subquery embeds the question once, not once a row);
#   - labels the questions with the text classifier prompt_task
#     (infer.classify(model, text));
#   - with OCR_CSV (tools/demo.sh's name,text,truth,has_truth rows), does the
#     same over the text the OCR part read from the demo images.
# Prints the top hits with their scores, and timings (rows/s) on stderr.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
docdir=${PG_DOC_DIR:-/usr/share/doc/postgresql-doc-15/html}
ocr_csv=${1:-}

psql_q() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }

# now_ms: milliseconds since the epoch.
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

# embed_into TABLE KEY SOURCE WHAT: fills TABLE (KEY, emb) from SOURCE (a
# query giving KEY and body) with one INSERT ... SELECT, checks that the
# planner batches it, and prints the rows, the time and rows/s on stderr.
embed_into() {
	local table=$1 key=$2 src=$3 what=$4 ins plan t0 t1 n ms
	ins="INSERT INTO $table ($key, emb) SELECT $key, infer.embed('minilm', body) FROM ($src) AS s"
	plan=$(psql -X -At -v ON_ERROR_STOP=1 -c "EXPLAIN (COSTS OFF) $ins")
	if ! grep -q 'InferBatch' <<<"$plan"; then
		echo "demo: $ins is not batched:" >&2
		echo "$plan" >&2
		return 1
	fi
	t0=$(now_ms)
	psql_q -c "$ins"
	t1=$(now_ms)
	n=$(psql -X -At -c "SELECT count(*) FROM $table")
	ms=$(( t1 - t0 > 0 ? t1 - t0 : 1 ))
	echo "demo: $n $what embedded in $ms ms, $(( n * 1000 / ms )) rows/s (one INSERT ... SELECT, batched by InferBatch)" >&2
}

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
 ORDER BY s.score DESC NULLS LAST
 LIMIT 5;
SQL
	t1=$(date +%s%N)
	echo "demo: search \"$q\" in $(( (t1 - t0) / 1000000 )) ms" >&2
}

if [ -d "$docdir" ]; then
	python3 "$top/tools/demo_search.py" "$docdir" 1000 | psql_q >/dev/null
	psql_q -c "CREATE TABLE demo_doc_emb (id int PRIMARY KEY, emb real[])"
	embed_into demo_doc_emb id "SELECT id, body FROM demo_docs" \
		"paragraphs of the PostgreSQL manual"

	docs="SELECT d.page AS label, d.body, e.emb FROM demo_docs d JOIN demo_doc_emb e USING (id)"
	search "How can I make queries on a large table faster?" "$docs"
	search "restore a database from a backup file" "$docs"
	search "What happens when two transactions update the same row at once?" "$docs"
	search "split a big table into smaller pieces by date" "$docs"

	# the questions' kind, by the text classifier (one batched query)
	t0=$(now_ms)
	echo "classify: infer.classify('prompt_task', question)"
	psql -X -At -F '  ' -v ON_ERROR_STOP=1 <<'SQL' | sed 's/^/  /'
SELECT infer.classify('prompt_task', q), q
  FROM (VALUES (1, 'How can I make queries on a large table faster?'),
               (2, 'Write a SQL function that returns the n-th Fibonacci number.'),
               (3, 'Is a verbal agreement to sell a house legally binding?'),
               (4, 'Solve for x: 3x + 7 = 22.')) AS v(n, q)
 ORDER BY n;
SQL
	echo "demo: 4 questions classified in $(( $(now_ms) - t0 )) ms" >&2
else
	echo "demo: no PostgreSQL manual in $docdir (Debian package postgresql-doc-15); skipping its search" >&2
fi

if [ -n "$ocr_csv" ] && [ -f "$ocr_csv" ]; then
	psql_q <<SQL
CREATE TABLE demo_ocr (name text, body text, truth text, has_truth bool);
\\copy demo_ocr FROM '$ocr_csv' WITH (FORMAT csv)
CREATE TABLE demo_ocr_emb (name text, emb real[]);
SQL
	embed_into demo_ocr_emb name \
		"SELECT name, replace(body, E'\\n', ' ') AS body FROM demo_ocr WHERE coalesce(body, '') <> ''" \
		"OCR texts"
	ocr="SELECT o.name AS label, replace(o.body, E'\\n', ' / ') AS body, e.emb
	       FROM demo_ocr o JOIN demo_ocr_emb e USING (name)"
	search "keep food cold" "$ocr"
	search "directions to the train station" "$ocr"
fi
