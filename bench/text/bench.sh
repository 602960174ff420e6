#!/usr/bin/env bash
# bench/text/bench.sh: text-model throughput, batched against per-row and
# against ONNX Runtime on the same CPU (issue 4).
#
# The texts: the 588 of tests/text/sentences.txt (real messages in 21
# languages, emoji, CR LF, empty and long texts), repeated to $ROWS rows
# (row i is text i mod 588).  The model: minilm (build/models/minilm,
# all-MiniLM-L6-v2), one infer-worker on 127.0.0.1 with its default engine
# threads (or $THREADS).
#
#   sql_per_row     SELECT id, infer.embed('minilm', body) FROM bench_text
#                   with SET infer.enable_batching = off: one row per
#                   request, one request at a time (the plan has no
#                   InferBatch node: checked in its EXPLAIN);
#   sql_batched     the same query with batching on (InferBatch: checked);
#                   both timed by psql's \timing after a warm-up query;
#   direct_per_row  batching-client (bench/batching/bench_client.c) sending
#                   1-row requests one at a time;
#   direct_batched  64-row requests, 2 in flight;
#   ort_per_row     bench/text/ort_bench.py: the Hugging Face tokenizer and
#                   an ONNX Runtime session over the same model.onnx with the
#                   same thread count, mean pooling and L2 norm in numpy, one
#                   text per run;
#   ort_batched     the same in requests of 64 rows, each sorted by token
#                   count, runs of 32 rows padded to the longest (as our
#                   worker pads);
#   sql_batched_256 sql_batched with SET infer.batch_size = 256 (larger
#                   requests: the worker sorts by length within a request,
#                   so they pad less); for comparison, not in the RESULT;
#   direct_sorted   direct_batched over the same rows sorted by token count
#                   (neighbours alike: almost no padding); for comparison.
# Each is run $REPS times in turn; the table has the best of each (on a
# shared machine the least disturbed run; bench/engine does the same), with the
# worker's own compute per row (from its log) and the rest per row, and the
# tokens the model runs padded against the texts' own.
#
# Every path's vectors are compared with the reference
# (tools/text_reference.py --sentences, cached in build/text/) by
# bench/text/compare.py; min_cosine_vs_reference is the smallest cosine of
# the SQL batched run's vectors over all its rows.  PostgreSQL's text cannot
# hold NUL: the one test text with a NUL ("Hello\x{0}World") is loaded
# into the table without it (the tokenizer drops NUL, so its tokens and
# reference vector are the same).
#
# Ends with one line
#   RESULT: batched_vs_per_row=X ratio_vs_ort=Y min_cosine_vs_reference=Z
#           sql_batched=..s/s sql_per_row=.. direct_batched=..
#           direct_per_row=.. ort_batched=.. ort_per_row=.. threads=N rows=M
# batched_vs_per_row is sql_batched over sql_per_row (target at least 3);
# ratio_vs_ort is sql_batched over ort_batched (above 1: we are faster).
# Where batched_vs_per_row is below 3 (or PROFILE=1; PROFILE=0: never), a
# second worker with IE_PROFILE=1 times 32 texts sent as 32 1-row requests
# against one 32-row request, per operator kind: texts of mixed lengths
# (padded) and one text 32 times (no padding: the engine's own gain).
# Environment: ROWS (1176, two passes over the texts), REPS (2), THREADS
# (the worker's default), SQL (on, off: skip the SQL runs; the RESULT then
# takes the direct numbers), PROFILE (auto).  Needs the extension
# installed (make install).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
PY=${PYTHON:-$BUILD/venv/bin/python}
SENT=tests/text/sentences.txt
REF=$BUILD/text/embed_reference.tsv
MODEL=minilm
N_TEXTS=$(wc -l <"$SENT")
ROWS=${ROWS:-$((2 * N_TEXTS))}
THREADS=${THREADS:-}
SQL=${SQL:-on}
REPS=${REPS:-2}
PROFILE=${PROFILE:-auto}
CLIENT=$BUILD/bin/bench/batching-client
top=$(pwd)
tmp=$top/$BUILD/bench-text

# shellcheck source=bench/lib.sh
. bench/lib.sh

bench_need bench-text -e "$BUILD/bin/infer-worker" "$CLIENT" "$REF" "$BUILD/models/$MODEL/model.onnx"
rm -rf "$tmp"
mkdir -p "$tmp"
chmod 755 "$tmp"

# --- the worker ----------------------------------------------------------------
wargs=()
[ -n "$THREADS" ] && wargs=(--threads "$THREADS")
testenv_start_worker "$tmp/worker.log" "${wargs[@]}"
EP=$TESTENV_ENDPOINT
WPID=$TESTENV_PID
threads=$(sed -n 's/.*, \([0-9]*\) engine threads,.*/\1/p' "$tmp/worker.log" | head -1)
[ -n "$threads" ] || { echo "bench-text: no thread count in the worker's log" >&2; exit 1; }
echo "bench-text: worker $EP ($threads engine threads, $(nproc) CPUs), model $MODEL,"
echo "  $ROWS rows: the $N_TEXTS texts of $SENT in turn"
# load the model and warm it
"$CLIENT" --endpoint "$EP" --fragment embed_text --model "$MODEL" --rows 64 --batch 64 \
	--sentences "$SENT" >/dev/null

# RATES[name]: the rows/s of each repetition; WMS[name]: the worker's
# compute ms/row of each (from its log: "embed_text over R rows ... in MS
# ms", summed over the lines the run added); OMS[name]: the rest of each
# repetition's wall time per row
declare -A RATE RATES WMS OMS
loglines() { wc -l <"$tmp/worker.log"; }
wtime() {
	sed -n "$(($1 + 1)),\$p" "$tmp/worker.log" | grep 'embed_text over' |
		awk '{ for (i = 1; i <= NF; i++) { if ($i == "over") r += $(i + 1); if ($i == "in") ms += $(i + 1) } }
			END { if (r) printf "%.3f", ms / r; else printf "nan" }'
}
# keep NAME RATE LOGSTART: records one repetition
keep() {
	local w
	w=$(wtime "$3")
	RATES[$1]="${RATES[$1]:-} $2"
	WMS[$1]="${WMS[$1]:-} $w"
	OMS[$1]="${OMS[$1]:-} $(awk -v r="$2" -v w="$w" 'BEGIN { printf "%.3f", 1000 / r - w }')"
}
# cpu_snap: "seconds busy idle worker" now (the machine's ticks from
# /proc/stat, the worker's user + system ticks); cpu_since SNAP: the CPUs
# busy on average since SNAP on the whole machine (other users included)
# and in the worker, so a reader sees when a run shared the cores
cpu_snap() {
	echo "$(date +%s.%N) $(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9, $5 + $6 }' /proc/stat)" \
		"$(sed 's/.*) //' "/proc/$WPID/stat" | awk '{ print $12 + $13 }')"
}
cpu_since() {
	python3 -c "
import sys
a, b = sys.argv[1].split(), sys.argv[2].split()
wall = float(b[0]) - float(a[0])
busy, idle = int(b[1]) - int(a[1]), int(b[2]) - int(a[2])
print('cpus_busy=%.2f worker_cpus=%.2f' % (int(sys.argv[3]) * busy / max(busy + idle, 1),
      (int(b[3]) - int(a[3])) / float(sys.argv[4]) / wall))" \
		"$1" "$(cpu_snap)" "$(nproc)" "$(getconf CLK_TCK)"
}
# direct NAME ARGS...: batching-client over the texts
direct() {
	local name=$1 out l0 c0
	shift
	l0=$(loglines)
	c0=$(cpu_snap)
	out=$("$CLIENT" --endpoint "$EP" --fragment embed_text --model "$MODEL" --rows "$ROWS" \
		--sentences "$SENT" --answers "$tmp/$name.txt" "$@")
	keep "$name" "$(sed -n 's/.*rows_per_s=\([0-9.]*\).*/\1/p' <<<"$out")" "$l0"
	printf '  %-16s %s %s\n' "$name" "$(sed 's/ digest=.*//' <<<"$out")" "$(cpu_since "$c0")"
}

# --- SQL ---------------------------------------------------------------------------
sql_ok=0
if [ "$SQL" = on ]; then
	testenv_start_cluster "$tmp/pg"
	# the texts in COPY's text format (NUL dropped: see the banner)
	"$PY" - "$SENT" "$tmp/texts.copy" <<'PY'
import os, sys
sys.path.insert(0, os.path.join(os.getcwd(), "tools"))
from tokenizer_reference import read_sentences
esc = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
with open(sys.argv[2], "w", encoding="utf-8", newline="\n") as f:
    for k, t in enumerate(read_sentences(sys.argv[1])):
        f.write("%d\t%s\n" % (k, "".join(esc.get(c, c) for c in t.replace("\0", ""))))
PY
	psql -X -q -v ON_ERROR_STOP=1 >/dev/null <<SQL
CREATE EXTENSION pg_infer;
SELECT infer.add_worker('bench', '$EP');
CREATE TABLE bench_src (k int, body text);
\\copy bench_src FROM '$tmp/texts.copy'
CREATE TABLE bench_text AS
	SELECT g AS id, s.body FROM generate_series(0, $ROWS - 1) g
	  JOIN bench_src s ON s.k = g % $N_TEXTS ORDER BY g;
VACUUM ANALYZE bench_text;
SQL
	Q="SELECT id, infer.embed('$MODEL', body) FROM bench_text"
	WARM="SELECT count(infer.embed('$MODEL', body)) FROM (SELECT body FROM bench_text LIMIT 1) s"
	# sql_run NAME GUC: $Q with infer.enable_batching = GUC after a warm-up,
	# rows sorted into $tmp/NAME.txt; keeps rows/s (psql's \timing of $Q)
	sql_run() {
		local name=$1 guc=$2 extra=${3:-} ms rate l0 c0
		l0=$(loglines)
		c0=$(cpu_snap)
		ms=$(psql -X -q -At -v ON_ERROR_STOP=1 <<SQL | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | tail -1
SET max_parallel_workers_per_gather = 0;
SET infer.enable_batching = $guc;
$extra
$WARM;
\\o $tmp/$name.raw
\\timing on
$Q;
SQL
		)
		sort -t'|' -k1,1n "$tmp/$name.raw" >"$tmp/$name.txt"
		rate=$(python3 -c "import sys; print('%.2f' % ($ROWS / (float(sys.argv[1]) / 1000)))" "$ms")
		keep "$name" "$rate" "$l0"
		printf '  %-16s rows=%s seconds=%.3f rows_per_s=%s %s\n' "$name" "$ROWS" \
			"$(python3 -c "print($ms / 1000)")" "$rate" "$(cpu_since "$c0")"
	}
	echo
	echo "SQL plans (SET infer.enable_batching = off / on):"
	plan_off=$(psql -X -q -At -c "SET max_parallel_workers_per_gather = 0" \
		-c "SET infer.enable_batching = off" -c "EXPLAIN (COSTS OFF) $Q")
	plan_on=$(psql -X -q -At -c "SET max_parallel_workers_per_gather = 0" \
		-c "SET infer.enable_batching = on" -c "EXPLAIN (COSTS OFF) $Q")
	echo "  plan, batching off:"
	sed 's/^/  | /' <<<"$plan_off"
	echo "  plan, batching on:"
	sed 's/^/  | /' <<<"$plan_on"
	if grep -q InferBatch <<<"$plan_on" && ! grep -q InferBatch <<<"$plan_off"; then
		sql_ok=1
	else
		echo "  (the plans are not InferBatch with batching on and without it off:"
		echo "   the RESULT takes the direct numbers)"
	fi
fi

# The same rows sorted by token count (the escaped lines of $SENT), for
# direct_sorted: what the worker's padding costs when neighbours are alike
"$PY" - "$BUILD/models/$MODEL/tokenizer.json" "$SENT" "$ROWS" "$tmp/sorted.txt" <<'PY'
import os, sys
sys.path.insert(0, os.path.join(os.getcwd(), "tools"))
from tokenizer_reference import unescape
from tokenizers import Tokenizer
tk = Tokenizer.from_file(sys.argv[1])
tk.no_truncation()
tk.no_padding()
with open(sys.argv[2], encoding="utf-8", newline="\n") as f:
    lines = [line.rstrip("\n") for line in f]
n_tok = [len(tk.encode(unescape(line)).ids) for line in lines]
rows = sorted(range(int(sys.argv[3])), key=lambda i: (n_tok[i % len(lines)], i))
with open(sys.argv[4], "w", encoding="utf-8", newline="\n") as f:
    for i in rows:
        f.write(lines[i % len(lines)] + "\n")
PY

# --- the runs, $REPS times in turn (the best counts: the machine is shared) ---
echo
echo "runs ($REPS rounds, the best of each counts; direct: batching-client, per row = 1-row requests one at a"
echo "time, batched = 64-row requests, 2 in flight; sql: the query above, batching"
echo "off / on, psql's \\timing; ort: bench/text/ort_bench.py, see below); cpus_busy:"
echo "the machine's CPUs busy on average meanwhile (of $(nproc), other users included),"
echo "worker_cpus: the infer-worker's share of them:"
for r in $(seq "$REPS"); do
	echo " round $r"
	direct direct_per_row --batch 1 --inflight 1
	direct direct_batched --batch 64 --inflight 2
	[ "$ROWS" -le 4096 ] && SENT=$tmp/sorted.txt direct direct_sorted --batch 64 --inflight 2
	if [ "$SQL" = on ]; then
		sql_run sql_per_row off 2>"$tmp/sql_notices.txt"
		sql_run sql_batched on 2>>"$tmp/sql_notices.txt"
		sql_run sql_batched_256 on "SET infer.batch_size = 256;" 2>>"$tmp/sql_notices.txt"
	fi
	c0=$(cpu_snap)
	ort=$(OMP_NUM_THREADS=$threads "$PY" bench/text/ort_bench.py "$BUILD/models/$MODEL" "$SENT" \
		"$ROWS" "$threads" "$REF" --batch 32 --request 64)
	echo "  $ort $(cpu_since "$c0" | sed 's/ worker.*//')"
	RATES[ort_per_row]="${RATES[ort_per_row]:-} $(sed -n 's/.*per_row_s_per_s=\([0-9.]*\).*/\1/p' <<<"$ort")"
	RATES[ort_batched]="${RATES[ort_batched]:-} $(sed -n 's/.*batched_s_per_s=\([0-9.]*\).*/\1/p' <<<"$ort")"
done
# best NAME: the 1-based round of NAME's highest rows/s
best() {
	# shellcheck disable=SC2086
	python3 -c "import sys; v = list(map(float, sys.argv[1:])); print(v.index(max(v)) + 1)" ${RATES[$1]}
}
# nth N WORDS...: the Nth word
nth() {
	local n=$1
	shift
	echo "${!n}"
}
declare -A BEST
for name in "${!RATES[@]}"; do
	BEST[$name]=$(best "$name")
	# shellcheck disable=SC2086
	RATE[$name]=$(nth "${BEST[$name]}" ${RATES[$name]})
done

echo "(ort: Hugging Face tokenizer + an ONNX Runtime session on the same model.onnx,"
echo " $threads intra-op threads, mean pooling + L2 norm in numpy, tokenizing timed;"
echo " batched = requests of 64 rows sorted by token count, runs of 32 padded)"
grep -m1 -A2 NOTICE "$tmp/sql_notices.txt" 2>/dev/null | sed 's/^/  sql: /' || true

# --- the vectors against the reference ------------------------------------------------
echo
echo "vectors against the reference (tools/text_reference.py --sentences: Hugging Face"
echo "tokenizer + ONNX Runtime, one text at a time; $REF):"
sets=()
if [ "$sql_ok" = 1 ] || [ "$SQL" = on ]; then
	sets+=(sql_batched="$tmp/sql_batched.txt" sql_per_row="$tmp/sql_per_row.txt")
fi
sets+=(direct_batched="$tmp/direct_batched.txt" direct_per_row="$tmp/direct_per_row.txt")
cmpout=$("$PY" bench/text/compare.py "$REF" "$N_TEXTS" "${sets[@]}") || {
	echo "$cmpout" | sed 's/^/  /'
	echo "bench-text: rows without a vector" >&2
	exit 1
}
echo "$cmpout" | sed 's/^/  /'
first=$(head -1 <<<"$cmpout" | cut -d' ' -f1)
min_cos=$(head -1 <<<"$cmpout" | sed -n 's/.*min_cos=\([0-9.-]*\).*/\1/p')

# --- the table ------------------------------------------------------------------------
if [ "$sql_ok" = 1 ]; then
	ours=sql_batched ours_row=sql_per_row
else
	ours=direct_batched ours_row=direct_per_row
fi
echo
echo "the best of $REPS rounds for each (the least disturbed by other users of the"
echo "machine); worker ms/row: the worker's compute per row (its"
echo "log); other ms/row: the rest of the wall time per row (transport, the"
echo "backend, waiting; below 0 where requests in flight overlap the worker's)"
printf '%-16s %6s %12s %11s %15s %14s %13s\n' what rows sentences/s vs_per_row vs_ort_batched \
	worker_ms/row other_ms/row
for name in sql_per_row sql_batched sql_batched_256 direct_per_row direct_batched direct_sorted \
	ort_per_row ort_batched; do
	[ -n "${RATE[$name]:-}" ] || continue
	vr=- wms=- oms=-
	case $name in
	*_batched) vr=$(ratio "${RATE[$name]}" "${RATE[${name%_batched}_per_row]}") ;;
	*_batched_256) vr=$(ratio "${RATE[$name]}" "${RATE[${name%_batched_256}_per_row]}") ;;
	*_sorted) vr=$(ratio "${RATE[$name]}" "${RATE[${name%_sorted}_per_row]}") ;;
	esac
	if [ -n "${WMS[$name]:-}" ]; then
		# shellcheck disable=SC2086
		wms=$(nth "${BEST[$name]}" ${WMS[$name]})
		# shellcheck disable=SC2086
		oms=$(nth "${BEST[$name]}" ${OMS[$name]})
	fi
	printf '%-16s %6s %12s %11s %15s %14s %13s\n' "$name" "$ROWS" "${RATE[$name]}" "$vr" \
		"$(ratio "${RATE[$name]}" "${RATE[ort_batched]}")" "$wms" "$oms"
done
echo "(vs_per_row: over the same path's per-row run; vs_ort_batched: ours over ONNX"
echo " Runtime batched, above 1 = we are faster; min cosine from $first;"
echo " for comparison only: sql_batched_256, SET infer.batch_size = 256;"
echo " direct_sorted, direct_batched over the same rows sorted by token count)"
# Padding: the tokens the model runs batched (the worker's policy, worker/text.c:
# each request sorted by token count, model calls of at most 32 rows and
# 2048 padded tokens, no row longer than TEXT_PAD_RATIO x the call's first
# row + TEXT_PAD_SLACK, worker/text.h) against the texts' own tokens (what
# per-row runs)
"$PY" - "$BUILD/models/$MODEL/tokenizer.json" "$SENT" "$ROWS" <<'PY'
import os, sys
sys.path.insert(0, os.path.join(os.getcwd(), "tools"))
from tokenizer_reference import read_sentences
from tokenizers import Tokenizer
tk = Tokenizer.from_file(sys.argv[1])
tk.no_truncation()
tk.no_padding()
base = [min(len(tk.encode(t).ids), 256) for t in read_sentences(sys.argv[2])]
rows = [base[i % len(base)] for i in range(int(sys.argv[3]))]
def padded(req):
    out = calls = 0
    for r0 in range(0, len(rows), req):
        s = sorted(rows[r0:r0 + req])
        i = 0
        while i < len(s):
            n = 1
            while (i + n < len(s) and n < 32 and (n + 1) * s[i + n] <= 2048
                   and s[i + n] <= s[i] * 1.25 + 2):
                n += 1
            out += n * s[i + n - 1]
            calls += 1
            i += n
    return out, calls
p64, c64 = padded(64)
p256, c256 = padded(256)
print("tokens: %d in the texts (%.1f a row); padded, in 64-row requests %d (%d model "
      "calls, %.2fx), in 256-row requests %d (%d calls, %.2fx)" %
      (sum(rows), sum(rows) / len(rows), p64, c64, p64 / sum(rows), p256, c256,
       p256 / sum(rows)))
PY
batched_vs_per_row=$(ratio "${RATE[$ours]}" "${RATE[$ours_row]}")
ratio_vs_ort=$(ratio "${RATE[$ours]}" "${RATE[ort_batched]}")

# --- where the time goes in the engine (PROFILE=1) ------------------------------------
if [ "$PROFILE" = auto ]; then
	PROFILE=$(python3 -c "import sys; print(1 if float(sys.argv[1]) < 3 else 0)" "$batched_vs_per_row")
fi
if [ "$PROFILE" = 1 ]; then
	echo
	echo "IE_PROFILE (a second worker, --max-batch 32): 32 texts as 32 1-row requests"
	echo "against one 32-row request; the engine's time per operator kind, summed over"
	echo "the runs (ms, the better of 3 rounds).  'mixed': 32 English PostgreSQL"
	echo "messages (lines 101-132 of $SENT, padded to the batch's longest);"
	echo "'same': line 101 32 times (no padding: the engine's own batching gain)"
	sed -n '101,132p' "$SENT" >"$tmp/profile_mixed.txt"
	for _ in $(seq 32); do sed -n '101p' "$SENT"; done >"$tmp/profile_same.txt"
	IE_PROFILE=1 testenv_start_worker "$tmp/worker-profile.log" "${wargs[@]}" --max-batch 32
	PEP=$TESTENV_ENDPOINT
	for set in mixed same; do
		pclient() {
			"$CLIENT" --endpoint "$PEP" --fragment embed_text --model "$MODEL" --rows 32 \
				--sentences "$tmp/profile_$set.txt" "$@" >/dev/null
		}
		pclient --batch 32
		for r in 1 2 3; do
			p0=$(wc -l <"$tmp/worker-profile.log")
			pclient --batch 1
			p1=$(wc -l <"$tmp/worker-profile.log")
			pclient --batch 32
			p2=$(wc -l <"$tmp/worker-profile.log")
			sed -n "$((p0 + 1)),${p1}p" "$tmp/worker-profile.log" >"$tmp/profile_${set}_rows.$r"
			sed -n "$((p1 + 1)),${p2}p" "$tmp/worker-profile.log" >"$tmp/profile_${set}_batch.$r"
		done
		echo "  $set:"
		python3 - "$tmp/profile_$set" <<'PY'
import collections, sys
def load(path):
    d, ms = collections.Counter(), 0.0
    for line in open(path):
        f = line.split()
        if f and f[0] == "ie_profile" and f[-1] == "ms":
            d[f[1]] += float(f[-2])
        elif "embed_text over" in line:
            ms += float(f[f.index("in") + 1])
    return d, ms
def best(kind):
    return min((load("%s_%s.%d" % (sys.argv[1], kind, r)) for r in (1, 2, 3)),
               key=lambda p: sum(p[0].values()))
(rows, rms), (batch, bms) = best("rows"), best("batch")
print("    %-20s %12s %12s %8s" % ("operator", "32x1-row ms", "1x32-row ms", "ratio"))
for op in sorted(set(rows) | set(batch), key=lambda o: -rows[o])[:6]:
    print("    %-20s %12.2f %12.2f %8.2f" % (op, rows[op], batch[op],
          rows[op] / batch[op] if batch[op] else float("nan")))
tr, tb = sum(rows.values()), sum(batch.values())
print("    %-20s %12.2f %12.2f %8.2f" % ("all operators", tr, tb, tr / max(tb, 1e-9)))
print("    %-20s %12.2f %12.2f %8.2f" % ("worker's request ms", rms, bms, rms / max(bms, 1e-9)))
PY
	done
fi

echo
echo "RESULT: batched_vs_per_row=$batched_vs_per_row ratio_vs_ort=$ratio_vs_ort min_cosine_vs_reference=$min_cos sql_batched=${RATE[sql_batched]:-na}s/s sql_per_row=${RATE[sql_per_row]:-na} direct_batched=${RATE[direct_batched]} direct_per_row=${RATE[direct_per_row]} ort_batched=${RATE[ort_batched]} ort_per_row=${RATE[ort_per_row]} threads=$threads rows=$ROWS"
