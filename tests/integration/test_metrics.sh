#!/usr/bin/env bash
# test_metrics.sh: process-level test of infer-worker's operator surface:
# the configuration file, the Prometheus endpoint and the pool dashboard
# (docs/operations.md "Configuration file", "Metrics", "Dashboard").
#
# Configuration: --print-config prints every flag of --help as a key (the
# actions excepted), set keys with their values and the rest commented
# with their defaults; its output read back with --config prints the same
# text again and starts the same worker (its port, batch size and metrics
# endpoint); a flag overrides the file's key; an unknown key, a bad value,
# a line without "=", a section, a key set twice and a missing file are
# each refused with FILE:LINE and exit 2; a bad --metrics-listen exits 2,
# and so does a --listen or --state-listen without its transport
# (tcp://), saying what an endpoint is; a port already in use exits 1.
#
# Metrics: two real workers with the real models (build/models), each with
# --metrics-listen on 127.0.0.1; requests through the worker protocol
# (worker-client) of known rows, bad rows and a failing request; then
# /metrics of each holds exactly those counts (requests, failures, rows,
# failed rows, runs, histogram counts, the detector's model calls), agrees
# with the PONG's counters, names the resident models, and passes a format
# check (tests/integration/prom_check.py: every line parses, HELP and TYPE
# before each family, cumulative histogram buckets); /state.json carries
# the CORS header and the same numbers; unknown paths get 404; while a
# long request runs and two wait, queue_length is 3 and busy_threads 1.
#
# Dashboard: while that load runs, headless Chromium renders worker A's
# dashboard (its --dashboard-peers names B) and B's with ?peers= naming A;
# the DOM names both workers with their ids and resident models, A's row
# count equals its inferences_total and its recent throughput is above 0,
# and B's queue is at least 1.  The screenshot goes to $SCREENSHOT
# (default $BUILD/dashboard.png; `SCREENSHOT=docs/img/dashboard.png make
# check-metrics` renews the docs' one).  Without Chromium (tools/setup.sh installs it)
# that part is skipped with a message saying so.
#
# Prints "metrics: N passed, M failed"; exits 1 on any failure.  Every
# process it starts is killed by pid on exit.
set -u
cd "$(dirname "$0")/../.."
SHARED=${SHARED:-../shared}
DATA=$SHARED/data/ocr
OCR_TIMEOUT_MS=${OCR_TIMEOUT_MS:-120000}
SCREENSHOT=${SCREENSHOT:-${BUILD:-build}/dashboard.png}

# shellcheck source=tests/integration/testlib.sh
. tests/integration/testlib.sh
TESTLIB_FAIL_BYTES=3000
require_bins metrics "$WORKER" "$CLIENT"

DET=ch_PP-OCRv4_det_infer.onnx
REC=ch_PP-OCRv4_rec_infer.onnx
CLS=ch_ppocr_mobile_v2.0_cls_infer.onnx

# http URL: GET URL; prints "STATUS", the headers (lower-case names), a
# blank line and the body.
http() {
	python3 - "$1" <<'PY'
import sys, urllib.request, urllib.error
try:
    r = urllib.request.urlopen(sys.argv[1], timeout=10)
except urllib.error.HTTPError as e:
    r = e
print(r.status)
for k, v in r.headers.items():
    print("%s: %s" % (k.lower(), v))
print()
sys.stdout.write(r.read().decode())
PY
}

# body URL: just the body of GET URL.
body() {
	http "$1" | sed '1,/^$/d'
}

# metric TEXT SERIES: the value of SERIES (name and labels, exactly as
# printed) in the exposition TEXT; empty when absent.
metric() {
	awk -v n="$2" '$1 == n { print $2 }' <<<"$1"
}

# conf_error NAME TEXT REGEX: writes TEXT to a file, starts the worker
# with --config on it, and checks exit 2 and a message matching REGEX
# (in which @ stands for the file's path).
conf_error() {
	local f=$tmp/bad.conf out
	printf '%s' "$2" >"$f"
	out=$("$WORKER" --config "$f" 2>&1)
	check "$1" "$out rc=$?" 'rc=2$' "${3//@/$f}"
}

# --- the configuration file -------------------------------------------------
P1=$(testenv_free_port)
MP1=$(testenv_free_port)
out=$("$WORKER" --listen "tcp://127.0.0.1:$P1" --model-dir "$MODEL_DIR" --threads 2 \
	--max-batch 8 --metrics-listen "127.0.0.1:$MP1" --print-config 2>&1)
rc=$?
check "--print-config prints the effective configuration and exits 0" "$out"$'\n'"rc=$rc" \
	'^rc=0$' "^listen = tcp://127\.0\.0\.1:$P1$" "^model-dir = $MODEL_DIR$" '^threads = 2$' \
	'^max-batch = 8$' "^metrics-listen = 127\.0\.0\.1:$MP1$" \
	'^# max-queue-delay-us = 2000$' '^# log-level = info$' '^# device = cpu$' \
	'^# dashboard-peers =$'
printf '%s\n' "$out" >"$tmp/w.conf"
# the actions are no keys, and --no-uploads is the key uploads = off
flags=$("$WORKER" --help | grep -oE '^  --[a-z-]+' | sed 's/^  --//' |
	grep -vxE 'help|version|config|print-config|curve-keygen|no-uploads' | sort -u)
keys=$(grep -oE '^(# )?[a-z-]+ =' "$tmp/w.conf" | sed -E 's/^# //; s/ =$//' | sort -u)
check "every flag of --help (but the actions) is a key of --print-config" \
	"flags: $(echo $flags) | keys: $(echo $keys) | same=$([ "$flags" = "$keys" ] && echo yes)" \
	'same=yes' ' metrics-listen ' ' dashboard-peers '
check "--version prints the release of sql/pg_infer.control and the protocol, exit 0" \
	"$("$WORKER" --version; echo "rc=$?")" \
	"^infer-worker \\(pg_infer $(sed -nE "s/^default_version = '([^']+)'/\\1/p" sql/pg_infer.control | sed 's/\./\\./g'), protocol [0-9]+\\)$" '^rc=0$'
check "--help explains --config, --print-config and the metrics endpoint" \
	"$("$WORKER" --help)" '--config FILE' '--print-config' '--metrics-listen HOST:PORT' \
	'--dashboard-peers'

out=$("$WORKER" --config "$tmp/w.conf" --print-config 2>&1)
check "--config then --print-config round-trips (same text)" \
	"$(diff "$tmp/w.conf" - <<<"$out" && echo same)" '^same$'
out=$("$WORKER" --config "$tmp/w.conf" --max-batch 4 --log-level warn --print-config 2>&1)
check "a flag overrides the file's key" "$out" '^max-batch = 4$' '^log-level = warn$' \
	"^listen = tcp://127\.0\.0\.1:$P1$" '^threads = 2$'

"$WORKER" --config "$tmp/w.conf" 2>"$tmp/cfg.log" &
cpid=$!
pids+=("$cpid")
started=no
for _ in $(seq 50); do
	if "$CLIENT" --endpoint "tcp://127.0.0.1:$P1" --timeout-ms 200 ping | grep -q '^PONG '; then
		started=yes
		break
	fi
done
check "a worker started from the file alone listens where the file says" \
	"started=$started $(cat "$tmp/cfg.log")" 'started=yes' \
	"listening on tcp://127\.0\.0\.1:$P1 .*2 engine threads.*max batch 8 rows" \
	"metrics on http://127\.0\.0\.1:$MP1/metrics"
check "... with its metrics endpoint on the file's port" \
	"$(http "http://127.0.0.1:$MP1/metrics")" '^200$' '^infer_worker_requests_total 0$'
kill -TERM "$cpid"
wait "$cpid"
check "... and it stops on SIGTERM with exit 0 (metrics endpoint closed)" "rc=$?" 'rc=0'

conf_error "an unknown key is refused with file:line (exit 2)" \
	$'# a comment\nlisten = tcp://127.0.0.1:1\nbogus = 1\n' \
	'@:3: unknown key "bogus"'
conf_error "a bad value gets the flag's message with file:line" \
	$'listen = tcp://127.0.0.1:1\nmax-batch = zero\n' \
	'@:2: max-batch must be an integer from 1 to 65536, not "zero"'
conf_error "a line without '=' is refused with file:line" \
	$'model-dir = /tmp\n\nthreads 2\n' \
	'@:3: expected "key = value"'
conf_error "a section is refused with file:line" \
	$'; comment\n[worker]\nlisten = tcp://127.0.0.1:1\n' \
	'@:3: sections are not used'
conf_error "a key set twice is refused" \
	$'threads = 1\nlisten = tcp://127.0.0.1:1\nthreads = 2\n' \
	'@:3: key "threads" is set twice \(first on line 1\)'
conf_error "a line too long for libinih is refused with file:line" \
	"threads = 1"$'\n'"model-dir = /$(printf 'a%.0s' $(seq 250))"$'\n' \
	'@:2: line longer than 198 bytes'
conf_error "an action (curve-keygen) is no key" \
	$'curve-keygen = /tmp/k\n' '@:1: unknown key "curve-keygen"'
conf_error "a bad metrics-listen in the file is refused with file:line" \
	$'metrics-listen = localhost\n' '@:1: metrics-listen: expected HOST:PORT'
out=$("$WORKER" --config contrib/worker.conf.example --print-config 2>&1)
check "contrib/worker.conf.example is a valid configuration" "$out"$'\n'"rc=$?" '^rc=0$' \
	'^listen = tcp://127\.0\.0\.1:5555$' '^metrics-listen = 127\.0\.0\.1:9464$'
if command -v systemd-analyze >/dev/null; then
	# (the binary it names is there only after make install)
	out=$(systemd-analyze verify contrib/infer-worker.service 2>&1 |
		grep -vE '/usr/local/bin/infer-worker.*(not executable|No such file)')
	check_not "systemd-analyze verify finds nothing wrong with contrib/infer-worker.service" "$out" '.'
else
	echo "SKIP - systemd-analyze verify of contrib/infer-worker.service: no systemd-analyze here"
fi
out=$("$WORKER" --config "$tmp/no_such.conf" 2>&1)
check "a missing file is refused (exit 2)" "$out rc=$?" 'rc=2$' 'no_such\.conf: could not open: No such file'
out=$("$WORKER" --listen tcp://127.0.0.1:1 --model-dir "$MODEL_DIR" --metrics-listen 127.0.0.1:99999 2>&1)
check "a bad --metrics-listen is refused (exit 2)" "$out rc=$?" 'rc=2$' \
	'--metrics-listen: expected HOST:PORT'
out=$("$WORKER" --listen 127.0.0.1:1 --model-dir "$MODEL_DIR" 2>&1)
check "a --listen without its transport is refused (exit 2), saying what an endpoint is" "$out rc=$?" 'rc=2$' \
	'--listen must be a ZeroMQ endpoint such as tcp://127\.0\.0\.1:5555, tcp://\*:5555 or ipc:///run/infer\.sock, not "127\.0\.0\.1:1"'
conf_error "... also in the file, with file:line; and --state-listen likewise" \
	$'listen = tcp://127.0.0.1:1\nstate-listen = 127.0.0.1:2\n' \
	'@:2: state-listen must be a ZeroMQ endpoint such as tcp://127\.0\.0\.1:5556'

# --- two live workers -------------------------------------------------------
MA=$(testenv_free_port)
MB=$(testenv_free_port)
start_worker "$tmp/a.log" --model-dir "$MODEL_DIR" --threads 2 \
	--metrics-listen "127.0.0.1:$MA" --dashboard-peers "127.0.0.1:$MB" || exit 1
EPA=$EP
PIDA=$WPID
start_worker "$tmp/b.log" --model-dir "$MODEL_DIR" --threads 1 \
	--metrics-listen "127.0.0.1:$MB" --gpu-memory 25275990020 || exit 1
EPB=$EP
PIDB=$WPID
A=("$CLIENT" --endpoint "$EPA" --timeout-ms "$OCR_TIMEOUT_MS")
B=("$CLIENT" --endpoint "$EPB" --timeout-ms "$OCR_TIMEOUT_MS")

out=$("$WORKER" --listen 'tcp://127.0.0.1:*' --model-dir "$MODEL_DIR" --metrics-listen "127.0.0.1:$MA" 2>&1)
check "a metrics port already in use is refused (exit 1)" "$out rc=$?" 'rc=1$' \
	"could not start: --metrics-listen 127\.0\.0\.1:$MA: could not listen"
check_not "... before the worker says it listens" "$out" 'INFO listening on'

check "a byte count is exact, not rounded to 10 digits (B's --gpu-memory 25275990020)" \
	"$(body "http://127.0.0.1:$MB/metrics")" '^infer_worker_gpu_memory_cap_bytes 25275990020$'
m=$(body "http://127.0.0.1:$MA/metrics")
check "a fresh worker counts nothing" "$m" '^infer_worker_requests_total 0$' \
	'^infer_worker_inferences_total 0$' '^infer_worker_queue_duration_seconds_count 0$' \
	'^infer_worker_queue_length 0$' '^infer_worker_resident_models 0$'

# A: 3 rows (1 bad), a request that fails as a whole, OCR of 2 images.
out=$("${A[@]}" predict $CLS "$DATA/p05_street_sign.jpg" "$DATA/bad/corrupt_middle.jpg" \
	"$DATA/p04_slide_results.png")
check "A: predict over 3 rows, the middle one bad" "$out" '^RESULT rows=3' \
	'^ROW 1 id=101 ok=0 sqlstate=22P03'
out=$("${A[@]}" classify $CLS only_one "$DATA/p04_slide_results.png")
check "A: classify with too few labels fails as a whole" "$out" '^ERROR sqlstate=22023'
out=$("${A[@]}" ocr "$DATA/p05_street_sign.jpg" "$DATA/p04_slide_results.png")
check "A: OCR of 2 images" "$out" '^RESULT rows=2' '^ROW 0 id=100 ok=1 .*Baker'
busy=$(metric "$(body "http://127.0.0.1:$MA/metrics")" infer_worker_heap_bytes)
# B: classify 4 rows.
out=$("${B[@]}" classify $CLS 0,180 "$DATA/p01_web_docs.png" "$DATA/p02_receipt_bakery.png" \
	"$DATA/p04_slide_results.png" "$DATA/p05_street_sign.jpg")
check "B: classify 4 rows" "$out" '^RESULT rows=4' '^ROW 3 id=103 ok=1'

ma=$(body "http://127.0.0.1:$MA/metrics")
mb=$(body "http://127.0.0.1:$MB/metrics")
pa=$("${A[@]}" ping)
check "A's /metrics counts exactly what it was sent" \
	"requests=$(metric "$ma" infer_worker_requests_total) failures=$(metric "$ma" infer_worker_request_failures_total) rows=$(metric "$ma" infer_worker_inferences_total) bad_rows=$(metric "$ma" infer_worker_inference_failures_total) runs=$(metric "$ma" infer_worker_executions_total) queued=$(metric "$ma" infer_worker_queue_duration_seconds_count) computed=$(metric "$ma" infer_worker_compute_duration_seconds_count) det_calls=$(metric "$ma" "infer_worker_model_executions_total{model=\"$DET\"}") det_rows=$(metric "$ma" "infer_worker_model_inferences_total{model=\"$DET\"}") ." \
	'requests=3 failures=1 rows=5 bad_rows=1 runs=3 queued=3 computed=3 det_calls=2 det_rows=2 \.'
served=$(grep -oE ' served=[0-9]+' <<<"$pa" | cut -d= -f2)
batches=$(grep -oE ' batches=[0-9]+' <<<"$pa" | cut -d= -f2)
check "... and agrees with the PONG (served = requests - failures, batches)" \
	"served=$served batches=$batches" 'served=2 batches=2'
# the allocator's bytes in use: not known (0) under AddressSanitizer
heap_re='^infer_worker_heap_bytes [1-9][0-9]{5,}$'
grep -qa __asan_init "$WORKER" && heap_re='^infer_worker_heap_bytes 0$'
check "A's gauges: idle, 3 resident models, model memory in use, no request held" "$ma" \
	'^infer_worker_queue_length 0$' '^infer_worker_backlog_seconds 0$' \
	'^infer_worker_request_bytes 0$' "$heap_re" \
	'^infer_worker_resident_models 3$' "^infer_worker_model_resident\{model=\"$DET\"\} 1$" \
	"^infer_worker_model_resident\{model=\"$REC\"\} 1$" \
	'^infer_worker_gpu_memory_bytes\{state="used"\} [1-9][0-9]{6,}$' \
	'^infer_worker_gpu_memory_bytes\{state="total"\} [1-9]' \
	'^infer_worker_host_memory_bytes\{state="used"\} [1-9]' \
	"^infer_worker_info\{worker_id=\"[^\"]+:$PIDA\",endpoint=\"${EPA//./\\.}\",device=\"cpu\",protocol_version=\"[0-9]+\",version=\"$(sed -n 's/^#define PGINFER_RELEASE "\(.*\)"$/\1/p' common/protocol.h | sed 's/\./\\./g')\"\} 1$"
# idle for 2 s, the worker frees the engine's cached tensor buffers (the
# OCR runs left hundreds of MB there) and trims its heap
if [ "$busy" != 0 ]; then
	for _ in $(seq 50); do
		idle=$(metric "$(body "http://127.0.0.1:$MA/metrics")" infer_worker_heap_bytes)
		[ "$idle" -lt $((busy / 4)) ] && break
		sleep 0.2
	done
	check "idle, A frees the engine's cached tensor buffers: heap $busy bytes after the runs, $idle idle" \
		"$((idle < busy / 4 && busy > 50000000))" '^1$'
fi
check "B's /metrics counts its own requests only" \
	"requests=$(metric "$mb" infer_worker_requests_total) rows=$(metric "$mb" infer_worker_inferences_total) runs=$(metric "$mb" infer_worker_executions_total) resident=$(metric "$mb" infer_worker_resident_models) cls=$(metric "$mb" "infer_worker_model_resident{model=\"$CLS\"}") det=$(metric "$mb" "infer_worker_model_resident{model=\"$DET\"}") ." \
	'requests=1 rows=4 runs=1 resident=1 cls=1 det= \.'
check "A's exposition is valid Prometheus text" "$(python3 tests/integration/prom_check.py <<<"$ma")" '^ok [0-9]+ samples'
check "B's exposition is valid Prometheus text" "$(python3 tests/integration/prom_check.py <<<"$mb")" '^ok [0-9]+ samples'
check "every metric has HELP and TYPE; histograms have buckets" "$ma" \
	'^# HELP infer_worker_requests_total ' '^# TYPE infer_worker_requests_total counter$' \
	'^# TYPE infer_worker_queue_duration_seconds histogram$' \
	'^infer_worker_queue_duration_seconds_bucket\{le="\+Inf"\} 3$' \
	'^# TYPE infer_worker_compute_duration_seconds histogram$' \
	'^# TYPE infer_worker_gpu_memory_bytes gauge$'
out=$(http "http://127.0.0.1:$MA/metrics" | sed '/^$/q')
check "/metrics is served as text format 0.0.4" "$out" '^200$' \
	'^content-type: text/plain; version=0\.0\.4'
out=$(http "http://127.0.0.1:$MA/state.json")
check "/state.json: CORS header, the same counters, the peers" "$out" '^200$' \
	'^access-control-allow-origin: \*' '^content-type: application/json' \
	'"requests_total":3,' '"inferences_total":5,' "\"peers\":\[\"127\.0\.0\.1:$MB\"\]" \
	"\"endpoint\":\"${EPA//./\\.}\""
check "/state.json is JSON" "$(body "http://127.0.0.1:$MA/state.json" |
	python3 -c 'import json, sys; d = json.load(sys.stdin); print("queue=%d resident=%s" % (d["queue_length"], ",".join(sorted(d["resident_models"]))))')" \
	"^queue=0 resident=$DET,$REC,$CLS$"
check "an unknown path gets 404" "$(http "http://127.0.0.1:$MA/nope")" '^404$'
check "the dashboard is one HTML page with no outside resources" \
	"$(http "http://127.0.0.1:$MA/")" '^200$' '^content-type: text/html' '<svg|createElement' \
	'state\.json'
check_not "... (no http(s) URL but the workers')" "$(body "http://127.0.0.1:$MA/")" \
	'(src|href)="?https?:'

# --- load: A recent throughput, B a queue -----------------------------------
for _ in 1 2 3 4; do
	"${A[@]}" ocr "$DATA/p05_street_sign.jpg" "$DATA/p04_slide_results.png" >/dev/null
done
# 21 rows take B (one engine thread) about 15 s here, minutes under ASan:
# the dashboards below must find it still running (14 rows, about 10 s,
# were done before Chromium had drawn A's page in one run of 30 Nov 2026)
big=("$DATA"/p0[1-7]_* "$DATA"/p0[1-7]_* "$DATA"/p0[1-7]_*)
BL=("$CLIENT" --endpoint "$EPB" --timeout-ms 900000)
"${BL[@]}" ocr "${big[@]}" >"$tmp/big.out" &
l1=$!
pids+=("$l1")
sleep 0.3
"${BL[@]}" ocr "$DATA/p05_street_sign.jpg" "$DATA/p04_slide_results.png" >"$tmp/small1.out" &
l2=$!
pids+=("$l2")
"${BL[@]}" ocr "$DATA/p05_street_sign.jpg" >"$tmp/small2.out" &
l3=$!
pids+=("$l3")
queue=0
for _ in $(seq 100); do
	mb=$(body "http://127.0.0.1:$MB/metrics")
	queue=$(metric "$mb" infer_worker_queue_length)
	[ "${queue:-0}" -ge 3 ] && break
	sleep 0.05
done
check "while a long request runs and two wait: queue_length 3, busy, a backlog" \
	"queue=$queue $(grep -E '^infer_worker_(busy_threads|backlog_seconds) ' <<<"$mb" | tr '\n' ' ')" \
	'queue=3 ' 'infer_worker_busy_threads 1 ' 'infer_worker_backlog_seconds [0-9.e-]+ '

# --- the dashboard in headless Chromium -------------------------------------
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROMIUM" ]; then
	echo "SKIP - dashboard in headless Chromium: no chromium here (tools/setup.sh installs the Debian package chromium)"
else
	chrome() {
		timeout 60 "$CHROMIUM" --headless --no-sandbox --disable-gpu --hide-scrollbars \
			--user-data-dir="$tmp/chrome" --virtual-time-budget=5000 "$@" 2>>"$tmp/chrome.log"
	}
	ida=$(body "http://127.0.0.1:$MA/state.json" | python3 -c 'import json, sys; print(json.load(sys.stdin)["worker_id"])')
	idb=$(body "http://127.0.0.1:$MB/state.json" | python3 -c 'import json, sys; print(json.load(sys.stdin)["worker_id"])')
	rows_a=$(metric "$(body "http://127.0.0.1:$MA/metrics")" infer_worker_inferences_total)
	bad_a=$(metric "$(body "http://127.0.0.1:$MA/metrics")" infer_worker_inference_failures_total)
	chrome --dump-dom "http://127.0.0.1:$MA/" >"$tmp/dom_a.html"
	chrome --dump-dom "http://127.0.0.1:$MB/?peers=127.0.0.1:$MA" >"$tmp/dom_b.html"
	# one line per worker card: addr queue rows throughput models
	cards() {
		python3 - "$1" <<'PY'
import re, sys
dom = open(sys.argv[1]).read()
dom = dom[:dom.find("<script")]  # the cards, not the page's own script
for part in dom.split('data-worker="')[1:]:
    addr = part[:part.index('"')]
    def span(cls):
        m = re.search(r'<span class="%s">([^<]*)</span>' % cls, part)
        return m.group(1) if m else "?"
    h2 = re.search(r"<h2>([^<]*)</h2>", part)
    models = ",".join(sorted(re.findall(r'<li class="model">([^<]*)</li>', part)))
    print("%s id=%s queue=%s rows=%s failed=%s throughput=%s/%s models=%s" % (
        addr, h2.group(1) if h2 else "?", span("queue"), span("rows"),
        span("rows-failed"), span("throughput"), span("throughput-1m"), models or "-"))
PY
	}
	ca=$(cards "$tmp/dom_a.html")
	cb=$(cards "$tmp/dom_b.html")
	check "A's dashboard shows both workers (A's peers), ids and resident models" "$ca" \
		"^127\.0\.0\.1:$MA id=${ida//./\\.} .* models=$DET,$REC,$CLS$" \
		"^127\.0\.0\.1:$MB id=${idb//./\\.} .* models=($DET,$REC,)?$CLS$"
	check "... A's rows equal its inferences_total ($rows_a), its failed rows its inference_failures_total ($bad_a), its last minute's throughput above 0" "$ca" \
		"^127\.0\.0\.1:$MA .* rows=$rows_a failed=$bad_a throughput=[0-9.]+/([1-9][0-9]*\.[0-9]+|0\.[0-9]*[1-9][0-9]*) "
	check "... B's queue is at least 1 while its load runs" "$ca" \
		"^127\.0\.0\.1:$MB .* queue=[1-9] "
	check "B's dashboard with ?peers= naming A shows both" "$cb" \
		"^127\.0\.0\.1:$MB id=${idb//./\\.} " "^127\.0\.0\.1:$MA id=${ida//./\\.} .* rows=$rows_a "
	# the screenshot, with A busy too
	for _ in $(seq 10); do
		"${A[@]}" ocr "$DATA/p05_street_sign.jpg" "$DATA/p04_slide_results.png" >/dev/null
		sleep 0.2
	done &
	aload=$!
	pids+=("$aload")
	sleep 3
	mkdir -p "$(dirname "$SCREENSHOT")"
	chrome --window-size=1280,900 --screenshot="$SCREENSHOT" "http://127.0.0.1:$MA/" >/dev/null
	wait "$aload"
	check "the screenshot is a 1280x900 PNG ($SCREENSHOT)" \
		"$(python3 -c 'import struct, sys; d = open(sys.argv[1], "rb").read(24); print("png" if d[:8] == b"\x89PNG\r\n\x1a\n" else "not png", "%dx%d" % struct.unpack(">II", d[16:24]))' "$SCREENSHOT" 2>&1)" \
		'^png 1280x900$'
fi

wait "$l1" "$l2" "$l3"
check "B's load was answered: 21 + 2 + 1 rows" \
	"$(grep -c '^ROW .* ok=1' "$tmp/big.out" "$tmp/small1.out" "$tmp/small2.out" | tr '\n' ' ')" \
	'big\.out:21 ' 'small1\.out:2 ' 'small2\.out:1 '
mb=$(body "http://127.0.0.1:$MB/metrics")
check "B's counters after the load: 4 requests, 28 rows, idle" \
	"requests=$(metric "$mb" infer_worker_requests_total) rows=$(metric "$mb" infer_worker_inferences_total) queue=$(metric "$mb" infer_worker_queue_length) ." \
	'requests=4 rows=28 queue=0 \.'

kill -TERM "$PIDA"
rc=timeout
for _ in $(seq 30); do
	if ! kill -0 "$PIDA" 2>/dev/null; then
		wait "$PIDA"
		rc=$?
		break
	fi
	sleep 0.1
done
check "SIGTERM stops a worker with its metrics endpoint (exit 0 within 3 s)" \
	"rc=$rc $(tail -1 "$tmp/a.log")" 'rc=0 ' 'stopped$'

kill -TERM "$PIDB"
wait "$PIDB"
echo "metrics: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
