#!/usr/bin/env bash
# test_examples.sh: runs the example libpq application examples/ocr_search
# (examples/README.md) against a throwaway PostgreSQL with pg_infer
# (tools/testenv.sh; `make install` first, as for check-regress) and one
# real infer-worker on 127.0.0.1 with the real models of build/models, on
# real images with known text (../shared/data/ocr and build/real-images,
# ground truth in their manifest.tsv), and checks:
#   (a) loading: every file is stored byte for byte (the binary bytea
#       parameter); the text each image gets is the text infer.ocr gives
#       it one row at a time (infer.enable_batching = off) and the text
#       the program prints; its CER against the ground truth is at most
#       MAX_CER per image and MEAN_CER on average; each embedding is the
#       one infer.embed gives one row at a time; a blank page gets ''
#       and no embedding; a second run reads only the image it adds;
#   (b) search: for a phrase from one image's text, that image ranks
#       first, scores descending, LIMIT rows, the blank page never;
#   (c) errors: each bad image of ../shared/data/ocr/bad gives its
#       SQLSTATE (the one tests/regress/expected/errors_input.out shows)
#       and message on stderr, exit status 1 (no crash) and stores
#       nothing; a missing file, a directory, an unknown model (42704), a server that
#       is not there and wrong arguments (exit 2) too;
#   (d) a table name that needs quoting; the connection from -d CONNINFO
#       and from the PG* variables;
#   (e) memory: a load, a search and a failed load under valgrind (no
#       error, every block freed), unless the program was built with
#       AddressSanitizer (make check-asan), whose LeakSanitizer checks it.
#
# Prints "examples: N passed, M failed"; exits 1 on any failure.  The
# worker and the postmaster are stopped by pid on every exit path.
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$(pwd)

# shellcheck source=tests/integration/testlib.sh
. tests/integration/testlib.sh
EXAMPLE=${EXAMPLE:-$BUILD/bin/examples/ocr_search}
require_bins examples "$WORKER" "$EXAMPLE"
case $EXAMPLE in /*) ;; *) EXAMPLE=$ROOT/$EXAMPLE ;; esac
MODEL_DIR=$(cd "$MODEL_DIR" && pwd)
OCR_DATA=$(cd "${OCR_DATA:-${SHARED:-../shared}/data/ocr}" && pwd)
REAL_DATA=${REAL_IMAGES:-$ROOT/build/real-images}
MAX_CER=0.15
MEAN_CER=0.08

use_cluster_cleanup
if ! testenv_start_cluster "$tmp/pg" >"$tmp/cluster.log" 2>&1; then
	cat "$tmp/cluster.log"
	echo "examples: 0 passed, 1 failed"
	exit 1
fi
port=$(testenv_free_port)
while [ "$port" = "$PGPORT" ]; do port=$(testenv_free_port); done
EP=tcp://127.0.0.1:$port
if ! start_named_worker w1 "$port" --model-dir "$MODEL_DIR"; then
	echo "examples: 0 passed, 1 failed"
	exit 1
fi
if ! q -c "CREATE DATABASE examples" ||
	! q -d examples -c "CREATE EXTENSION pg_infer" \
		-c "SELECT infer.add_worker('w1', '$EP')" >/dev/null; then
	echo "examples: 0 passed, 1 failed"
	exit 1
fi
CONNINFO="host=$PGHOST port=$PGPORT user=postgres dbname=examples"

# qx ARGS...: psql on the database of the example
qx() {
	q -d examples "$@"
}

# run_example NAME ARGS...: runs the example with ARGS; stdout in
# $tmp/NAME.out, stderr in $tmp/NAME.err, exit status in RC.
run_example() {
	local name=$1
	shift
	"$EXAMPLE" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
	RC=$?
}

# the images, from the two folders whose manifest.tsv holds their text
IMAGES=(
	"$OCR_DATA/p02_receipt_bakery.png"
	"$OCR_DATA/p04_slide_results.png"
	"$OCR_DATA/p05_street_sign.jpg"
	"$OCR_DATA/p07_honey_label.jpg"
	"$OCR_DATA/p10_platform_sign.jpg"
	"$OCR_DATA/p13_library_form.png"
	"$OCR_DATA/p22_kjv_page.png"
	"$OCR_DATA/p35_blank_page.png"
	"$REAL_DATA/scenetext02.jpg"
	"$REAL_DATA/bw_text.png"
)
# added by a second run
LATE_IMAGE=$OCR_DATA/p38_multi_noticeboard.jpg
for f in "${IMAGES[@]}" "$LATE_IMAGE"; do
	if [ ! -f "$f" ]; then
		echo "missing $f (make setup makes build/real-images; ../shared/data/ocr is the team's)"
		echo "examples: 0 passed, 1 failed"
		exit 1
	fi
done
N=${#IMAGES[@]}

# ---- (a) loading ---------------------------------------------------------------
# with -d CONNINFO: PGDATABASE (postgres) has no such table
run_example load -d "$CONNINFO" "${IMAGES[@]}"
if [ "$RC" = 0 ]; then pass "load: exit status 0"; else fail "load: exit status $RC" "$(cat "$tmp/load.err")"; fi
check "load: $N inserted, $N read, $((N - 1)) embedded" "$(cat "$tmp/load.out")" \
	"^recognised the text of $N images in [0-9]+ ms$" \
	"^embedded $((N - 1)) texts with minilm in [0-9]+ ms$"
if [ "$(grep -c '^inserted ' "$tmp/load.out")" = "$N" ]; then
	pass "load: $N 'inserted' lines"
else
	fail "load: 'inserted' lines" "$(cat "$tmp/load.out")"
fi
check_not "load: nothing on stderr" "$(cat "$tmp/load.err")" '.'
# from here on the example connects through the PG* variables
export PGDATABASE=examples

# the bytes stored are the file's bytes
sums=""
for f in "${IMAGES[@]}"; do
	sums+="$(basename "$f")|$(md5sum <"$f" | cut -d' ' -f1)"$'\n'
done
got=$(qx -c "SELECT name || '|' || md5(img) FROM ocr_images ORDER BY id")
if [ "$got" = "${sums%$'\n'}" ]; then
	pass "load: every image stored byte for byte (md5)"
else
	fail "load: stored bytes differ from the files" "$got"
fi

# the text is what infer.ocr gives one row at a time
got=$(qx -c "SET infer.enable_batching = off" \
	-c "SELECT name FROM ocr_images WHERE text IS DISTINCT FROM infer.ocr(img) ORDER BY id")
if [ -z "$got" ] && [ "$(qx -c "SELECT count(*) FROM ocr_images WHERE text IS NOT NULL")" = "$N" ]; then
	pass "load: text of all $N images equals infer.ocr one row at a time"
else
	fail "load: text differs from infer.ocr one row at a time" "$got"
fi
# ... and is the text the program printed (escaped as its header says)
want=$(qx -c "SELECT 'text ' || id || E'\t' || name || E'\t' ||
	replace(replace(replace(text, E'\\\\', E'\\\\\\\\'), E'\n', E'\\\\n'), E'\t', E'\\\\t')
	FROM ocr_images ORDER BY id")
got=$(grep '^text ' "$tmp/load.out")
if [ -n "$got" ] && [ "$got" = "$want" ]; then
	pass "load: printed text equals stored text"
else
	fail "load: printed text differs from stored text" "$(diff <(echo "$want") <(echo "$got"))"
fi

# CER of the printed text against the ground truth (tools/cer.py)
cer_out=$(python3 - "$tmp/load.out" "$OCR_DATA/manifest.tsv" "$REAL_DATA/manifest.tsv" \
	"$MAX_CER" "$MEAN_CER" <<'PY'
import sys
sys.path.insert(0, "tools")
import cer

out, manifests, max_cer, mean_cer = sys.argv[1], sys.argv[2:4], float(sys.argv[4]), float(sys.argv[5])
truth = {}
for m in manifests:
    truth.update(cer.read_manifest(m))


def unescape(s):
    """The program's escapes (\\n, \\t, \\\\) back to characters."""
    res, i = [], 0
    while i < len(s):
        if s[i] == "\\" and i + 1 < len(s):
            res.append({"n": "\n", "t": "\t"}.get(s[i + 1], s[i + 1]))
            i += 2
        else:
            res.append(s[i])
            i += 1
    return "".join(res)


cers, bad = [], []
for line in open(out, encoding="utf-8"):
    if not line.startswith("text "):
        continue
    _, name, text = line.rstrip("\n").split("\t", 2)
    c = cer.cer(unescape(text), truth[name])
    cers.append(c)
    print(f"{name} CER {c:.3f}")
    if c > max_cer:
        bad.append(name)
mean = sum(cers) / max(len(cers), 1)
print(f"mean CER {mean:.3f} over {len(cers)} images")
print("CER-OK" if cers and not bad and mean <= mean_cer else f"CER-BAD {bad}")
PY
)
check "load: CER <= $MAX_CER per image, mean <= $MEAN_CER" "$cer_out" '^CER-OK$'
grep '^mean CER' <<<"$cer_out" | sed 's/^/       /'

# embeddings: infer.embed of the text one row at a time; none for no text
got=$(qx -c "SET infer.enable_batching = off" -c "SELECT name FROM ocr_images
	WHERE CASE WHEN text = '' THEN embedding IS NOT NULL
			   ELSE embedding IS NULL OR array_length(embedding, 1) <> 384
					OR infer.similarity(embedding, infer.embed('minilm', text)) < 0.9999 END
	ORDER BY id")
if [ -z "$got" ]; then
	pass "load: embeddings equal infer.embed one row at a time (384 values)"
else
	fail "load: wrong embeddings" "$got"
fi
check "load: the blank page has text '' and no embedding" \
	"$(qx -c "SELECT text = '', embedding IS NULL FROM ocr_images WHERE name = 'p35_blank_page.png'")" \
	'^t\|t$'

# a second run reads only the image it adds (the PG* variables this time)
run_example late "$LATE_IMAGE"
check "load again: exit 0, reads the one new image only" \
	"RC=$RC"$'\n'"$(cat "$tmp/late.out")" '^RC=0$' \
	'^recognised the text of 1 images in' \
	"^text $((N + 1))	p38_multi_noticeboard.jpg	Lost cat" '^embedded 1 texts with minilm'
N=$((N + 1))

# ---- (b) search ----------------------------------------------------------------
QUERIES=(
	"croissant and sourdough loaf|p02_receipt_bakery.png"
	"quarterly revenue, new stores|p04_slide_results.png"
	"organic wildflower honey|p07_honey_label.jpg"
	"platform northbound|p10_platform_sign.jpg"
	"application for a library card|p13_library_form.png"
	"one generation passeth away|p22_kjv_page.png"
	"lost cat, guitar lessons|p38_multi_noticeboard.jpg"
	"conference centre and car parks|scenetext02.jpg"
	"knaves, fools and murderers|bw_text.png"
)
args=()
for e in "${QUERIES[@]}"; do
	args+=(-q "${e%%|*}")
done
run_example search -n 3 "${args[@]}"
if [ "$RC" = 0 ]; then pass "search: exit status 0"; else fail "search: exit status $RC" "$(cat "$tmp/search.err")"; fi
for e in "${QUERIES[@]}"; do
	query=${e%%|*}
	want=${e#*|}
	# the three result lines after the query's header
	rows=$(awk -v h="search $query" '$0 == h {n = 3; next} n > 0 {print; n--}' "$tmp/search.out")
	first=$(head -1 <<<"$rows" | cut -f3)
	ordered=$(cut -f1,2 <<<"$rows" | awk -F'\t' '
		NR == $1 && $2 > -1 && $2 <= 1 && (NR == 1 || $2 <= prev) {ok++} {prev = $2}
		END {print (ok == 3 && NR == 3) ? "ok" : "bad"}')
	if [ "$first" = "$want" ] && [ "$ordered" = ok ]; then
		pass "search \"$query\": $want first, 3 rows, scores descending"
	else
		fail "search \"$query\": want $want first" "$rows"
	fi
done
check_not "search: the blank page (no embedding) is never a result" \
	"$(cat "$tmp/search.out")" 'p35_blank_page'
check "search: the table is unchanged" "$(qx -c "SELECT count(*) FROM ocr_images")" "^$N\$"

# ---- (c) errors ----------------------------------------------------------------
# each bad file with a good one, in a table of their own: nothing stored
for e in corrupt_middle.jpg:22P03:'invalid image: corrupt' \
	truncated_40pct.jpg:22P03:'invalid image: truncated' \
	text_file.png:22P03:'invalid image: not an image' \
	zero_bytes.jpg:22P03:'invalid image: not an image' \
	huge_dimensions.png:54000:'image is larger than the limit'; do
	IFS=: read -r file state msg <<<"$e"
	run_example bad -t bad_images "$OCR_DATA/p05_street_sign.jpg" "$OCR_DATA/bad/$file"
	rows=$(qx -c "SELECT count(*) FROM bad_images")
	if [ "$RC" = 1 ] && [ "$rows" = 0 ] &&
		grep -q "^ERROR:  $msg" "$tmp/bad.err" &&
		grep -q "^SQLSTATE: $state\$" "$tmp/bad.err" &&
		grep -q '^ocr_search: nothing was stored' "$tmp/bad.err"; then
		pass "bad image $file: SQLSTATE $state, exit 1, nothing stored"
	else
		fail "bad image $file: exit $RC, $rows rows stored" "$(cat "$tmp/bad.err")"
	fi
done
# infer.on_error = null: the bad image's text is NULL (printed \N) and a
# warning; the next run reads only the new image, not the bad one again
PGOPTIONS='-c infer.on_error=null' run_example null1 -t null_images \
	"$OCR_DATA/p05_street_sign.jpg" "$OCR_DATA/bad/truncated_40pct.jpg"
RC1=$RC
PGOPTIONS='-c infer.on_error=null' run_example null2 -t null_images "$OCR_DATA/p10_platform_sign.jpg"
check "on_error = null: the bad image's text is \\N, with a warning, exit 0; the next run reads only its new image" \
	"RC=$RC1,$RC $(grep -c '^text 2'$'\t''truncated_40pct\.jpg'$'\t''\\N$' "$tmp/null1.out") $(grep -c 'WARNING:  invalid image: truncated' "$tmp/null1.err") $(grep '^recognised' "$tmp/null2.out" | cut -d' ' -f1-6) $(grep -c truncated "$tmp/null2.out" "$tmp/null2.err" | awk -F: '{s += $2} END {print s}')" \
	'^RC=0,0 1 1 recognised the text of 1 images 0$'
# the worker and the server are still there (start_named_worker set PID_w1)
# shellcheck disable=SC2154
check "errors: the worker is still up and answers" \
	"$(kill -0 "$PID_w1" && echo alive)"$'\n'"$(qx -c "SELECT infer.ocr(img) FROM ocr_images WHERE name = 'p10_platform_sign.jpg'")" \
	'^alive$' 'Northbound'

run_example missing "$OCR_DATA/no_such_file.png"
check "error: a missing file" "RC=$RC"$'\n'"$(cat "$tmp/missing.err")" \
	'^RC=1$' "^ocr_search: cannot open .*/no_such_file.png: No such file or directory\$"
run_example notfile -t not_files "$OCR_DATA" "$OCR_DATA/p05_street_sign.jpg"
check "error: a directory is not an image file: exit 1, nothing stored" \
	"RC=$RC"$'\n'"$(cat "$tmp/notfile.err")"$'\n'"$(qx -c "SELECT count(*) FROM not_files")" \
	'^RC=1$' "^ocr_search: $OCR_DATA is not a regular file\$" '^0$'
run_example model -m no_such_model -q "honey"
check "error: an unknown model (42704)" "RC=$RC"$'\n'"$(cat "$tmp/model.err")" \
	'^RC=1$' '^ocr_search: searching failed$' '^ERROR:  model "no_such_model" does not exist' \
	'^SQLSTATE: 42704$'
run_example noserver -d "host=127.0.0.1 port=$(testenv_free_port) dbname=examples connect_timeout=5" -q x
check "error: no server there" "RC=$RC"$'\n'"$(cat "$tmp/noserver.err")" \
	'^RC=1$' '^ocr_search: cannot connect: .*(refused|failed)'
run_example noargs
check "error: no files and no query: exit 2 with the usage" "RC=$RC"$'\n'"$(cat "$tmp/noargs.err")" \
	'^RC=2$' '^usage: ocr_search '
run_example badlimit -n 0 -q x
check "error: -n 0: exit 2" "RC=$RC"$'\n'"$(cat "$tmp/badlimit.err")" \
	'^RC=2$' 'wants a positive number'

# ---- (d) a table name that needs quoting ----------------------------------------
run_example quoted -t 'Scans "2024"; DROP TABLE ocr_images' "$OCR_DATA/p05_street_sign.jpg" -q street
check "a quoted table name" "RC=$RC"$'\n'"$(qx -c "SELECT count(*) FROM \"Scans \"\"2024\"\"; DROP TABLE ocr_images\"")"$'\n'"$(qx -c "SELECT count(*) FROM ocr_images")" \
	'^RC=0$' '^1$' "^$N\$"

# ---- (e) memory ----------------------------------------------------------------
if ldd "$EXAMPLE" 2>/dev/null | grep -q libasan; then
	echo "skip - valgrind: an AddressSanitizer build (its LeakSanitizer reports leaks)"
elif ! command -v valgrind >/dev/null; then
	fail "valgrind is not installed (tools/setup.sh installs it)"
else
	for e in "vg_load:0:$OCR_DATA/p05_street_sign.jpg $OCR_DATA/p04_slide_results.png" \
		"vg_bad:1:$OCR_DATA/p05_street_sign.jpg $OCR_DATA/bad/corrupt_middle.jpg"; do
		IFS=: read -r name want files <<<"$e"
		# shellcheck disable=SC2086 # files: a list of paths without spaces
		valgrind --leak-check=full --show-leak-kinds=all --errors-for-leak-kinds=all \
			--error-exitcode=99 "$EXAMPLE" -t "$name" -q revenue $files \
			>"$tmp/$name.out" 2>"$tmp/$name.err"
		rc=$?
		if [ "$rc" = "$want" ] && grep -q 'ERROR SUMMARY: 0 errors' "$tmp/$name.err" &&
			grep -q 'in use at exit: 0 bytes in 0 blocks' "$tmp/$name.err"; then
			pass "valgrind ($name): exit $want, no errors, every block freed"
		else
			fail "valgrind ($name): exit $rc" "$(tail -30 "$tmp/$name.err")"
		fi
	done
fi

echo "examples: $passed passed, $failed failed"
[ "$failed" = 0 ]
