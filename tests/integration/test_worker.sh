#!/usr/bin/env bash
# test_worker.sh: process-level test of infer-worker.
#
# Starts a real infer-worker bound to a free port of 127.0.0.1 with
# --model-dir $MODEL_DIR (build/models), drives it
# with worker-client, and checks: ping/pong; a protocol version mismatch,
# a malformed header and a wrong frame count each get MSG_ERROR 08P01; OCR
# of p05_street_sign.jpg reads "Baker"; every file in data/ocr/bad/ gives a
# per-row error and the worker still answers a ping; a batch of 3 rows with
# a bad middle row keeps rows 1 and 3 right and in order; an unknown model
# file gives MSG_ERROR naming it; unsafe paths (a symbolic link out of
# the model dir included) and wrong SHA-256 digests (XX001) are refused; a cancel gets no reply; predict/classify with the OCR
# direction classifier as a plain image model; batched predict/classify:
# a row's floats inside batches of mixed image sizes with a bad row are
# bit-for-bit those it gets alone, in one model call per input shape, at
# most --max-batch rows a call; OCR and detect_text of 3 images in one
# request equal each image alone; OCR chained into the text embedding
# gives each row the vector of its OCR text alone (a bad row keeps its
# error), and OCR with OCR -> embed or detect_text share one request;
# dynamic batching: two clients sending at
# once get their own rows and the PONG counts one merged batch, a PING is
# answered while a request waits in the queue, a cancel drops a queued
# request, and SIGTERM answers queued requests with 57P01; a second worker
# on the same endpoint fails to start; SIGHUP is logged and ignored;
# SIGTERM and SIGINT make an idle
# worker exit 0 within 2 s, and SIGTERM abandons a long batch (MSG_ERROR
# 57P01) and exits 0 within 3 s.  Limits: a request with too many rows or
# payload frames gets 54000 (and the worker's peak RSS stays small), a
# frame over --max-message-bytes gets the connection dropped; "./" spellings
# of a model path load one copy; a FIFO or directory in the model dir is
# refused with 58P01; control characters from requests are escaped in the
# log; after each the worker still answers a ping.  The input cache: rows
# with digests are cached, rows left out are answered from it bit for bit,
# a row not held gets MSG_NEED_INPUT (and its resend is answered), a lying
# digest fails its row with XX001, a restarted worker asks for every row
# left out, --input-cache 0 caches nothing.  A client that sends and
# never reads is held to --max-client-bytes (answered, then refused with
# 53400, then dropped), while one that reads its answers is never refused.
#
# Prints "worker: N passed, M failed"; exits 1 on any failure.  Every
# worker it starts is killed by pid on exit.
set -u
cd "$(dirname "$0")/../.."
SHARED=${SHARED:-../shared}
DATA=$SHARED/data/ocr
OCR_TIMEOUT_MS=${OCR_TIMEOUT_MS:-120000}

# shellcheck source=tests/integration/testlib.sh
. tests/integration/testlib.sh
TESTLIB_FAIL_BYTES=2000
TESTLIB_WORKER_ARGS=(--model-dir "$MODEL_DIR")

# stop_worker SIGNAL [TENTHS]: sends SIGNAL to $WPID and waits up to TENTHS
# tenths of a second (default 20); sets STOPPED to "exit=N" or "alive".
# (Not in a subshell: wait needs the child.)
stop_worker() {
	kill -"$1" "$WPID"
	STOPPED=alive
	for _ in $(seq "${2:-20}"); do
		if ! kill -0 "$WPID" 2>/dev/null; then
			wait "$WPID"
			STOPPED="exit=$?"
			return
		fi
		sleep 0.1
	done
}

require_bins worker "$WORKER" "$CLIENT"

# --- command line ---------------------------------------------------------
out=$("$WORKER" --help 2>&1)
rc=$?
check "--help exits 0 and explains every flag" "$out rc=$rc" 'rc=0' '--listen ENDPOINT' \
	'--model-dir DIR' '--threads N' '--max-pixels N' '--log-level LEVEL' 'SIGTERM' \
	'--max-batch N' '--max-queue-delay-us N' '--max-message-bytes N' '65536 rows'
out=$("$WORKER" --listen tcp://127.0.0.1:1 --model-dir "$MODEL_DIR" --max-batch 0 2>&1)
check "--max-batch 0 is refused (exit 2)" "$out rc=$?" 'rc=2' 'max-batch must be an integer from 1'
out=$("$WORKER" --listen tcp://127.0.0.1:1 --model-dir "$MODEL_DIR" --log-level loud 2>&1)
check "a bad --log-level is refused (exit 2)" "$out rc=$?" 'rc=2' 'debug, info, warn or error'
out=$("$WORKER" --listen 'tcp://127.0.0.1:*' --model-dir /nonexistent/models 2>&1)
check "a missing --model-dir is refused (exit 1)" "$out rc=$?" 'rc=1' '/nonexistent/models'

# --- one worker for the protocol checks -----------------------------------
if ! start_worker "$tmp/worker.log" --threads 2 --log-level info; then
	fail "worker starts"
	echo "worker: $passed passed, $failed failed"
	exit 1
fi
C=("$CLIENT" --endpoint "$EP")
check "log lines have an ISO timestamp and a level" "$(head -1 "$tmp/worker.log")" \
	'^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z infer-worker\[[0-9]+\] INFO listening on '"$EP"

check "ping gets pong" "$("${C[@]}" ping)" '^PONG worker_id=[^ ]+:[0-9]+ served=0 '

out=$("${C[@]}" --version 99 ping)
check "version mismatch gets MSG_ERROR 08P01 naming both versions" "$out" \
	'^ERROR sqlstate=08P01' 'version 99' 'speaks version 1'
check "malformed header gets MSG_ERROR" "$("${C[@]}" garbage)" \
	'^ERROR sqlstate=08P01 message=malformed'
# Fragment.next chained a million deep (9 MB of header): refused before
# protobuf-c's recursive unpack, which overflowed the stack (SIGSEGV);
# a chain of 16 stages still unpacks (and fails as an unknown kind)
check "Fragment.next a million deep gets MSG_ERROR 54000 (its request id), no crash" \
	"$("${C[@]}" deep 1000000)" \
	'^ERROR sqlstate=54000 message=request refused unread: .*Fragment.next more than 16 deep.*request_id=7'
check "Fragment.next 15 deep is unpacked" "$("${C[@]}" deep 15)" \
	'^ERROR sqlstate=22023 message=unknown fragment kind 0 .*request_id=7'
check "worker alive after the deep chain" "$("${C[@]}" ping)" '^PONG '
# the shape of a request (common/protocol.h): at most 3 models a stage,
# 16 fragments, 65536 rows over all fragments: 54000 under the request's
# id.  Fragments, chains and the models of all stages (768) are counted
# in the header's bytes before protobuf-c allocates them (a stage of
# 20000 models once held the worker's loop for 12 s, pinning each;
# fragments times rows multiplied the answer); a stage's models once
# unpacked (protobuf-c merges the copies of a field that is not
# repeated, each merge copying what the copies gathered: a header with a
# second copy of such a field is refused unread)
cls=ch_ppocr_mobile_v2.0_cls_infer.onnx
PIMG=$DATA/p05_street_sign.jpg
check "a stage of 3 models is run" \
	"$("${C[@]}" --input-size 48x192 --pad-models 2 predict $cls "$PIMG")" '^ROW 0 id=100 ok=1 '
check "a stage of 4 models is refused (54000)" \
	"$("${C[@]}" --input-size 48x192 --pad-models 3 predict $cls "$PIMG")" \
	'^ERROR sqlstate=54000 message=MSG_RUN_FRAGMENT request: stage 1 of fragment 0 has 4 models, more than the 3 .*request_id=7'
check "a header with two copies of Header.run (protobuf-c would merge them) is refused unread (54000)" \
	"$("${C[@]}" --input-size 48x192 --merge-models 1 predict $cls "$PIMG")" \
	'^ERROR sqlstate=54000 message=request refused unread: .*a message field that is not repeated comes more than once.*request_id=7'
for how in "--pad-models 20000:name more than 768 models" \
	"--merge-models 200000:not repeated comes more than once"; do
	t0=$(date +%s%N)
	# shellcheck disable=SC2086
	out=$("${C[@]}" --input-size 48x192 ${how%%:*} predict $cls "$PIMG")
	ms=$((($(date +%s%N) - t0) / 1000000))
	check "${how%%:*}: refused unread (54000)" "$out" \
		"^ERROR sqlstate=54000 message=request refused unread: .*${how#*:}.*request_id=7"
	if [ "$ms" -lt 2000 ]; then
		pass "... at once ($ms ms), and the worker still answers: $("${C[@]}" ping | cut -c1-4)"
	else
		fail "... at once" "$ms ms"
	fi
done
out=$("${C[@]}" --input-size 48x192 --copies 15 predict $cls "$PIMG")
check "16 fragments over a row are run: 16 answers" "$(grep -Ec '^ROW [0-9]+ id=100 ok=1 ' <<<"$out")" '^16$'
check "17 fragments are refused (54000, the request's id)" \
	"$("${C[@]}" --input-size 48x192 --copies 16 predict $cls "$PIMG")" \
	'^ERROR sqlstate=54000 message=request refused unread: .*more than 16 fragments.*request_id=7'
check "65536 rows for 2 fragments are refused (54000)" \
	"$("${C[@]}" --copies 1 bulk 65536 65536 0)" \
	'^ERROR sqlstate=54000 message=MSG_RUN_FRAGMENT request of 65536 rows for 2 fragments: 131072 result rows, more than the 65536'
check "worker alive after the shapes" "$("${C[@]}" ping)" '^PONG '
check "wrong frame count gets MSG_ERROR" "$("${C[@]}" frames 3)" \
	'^ERROR sqlstate=08P01 message=.*3 payload frames, expected 1'
check "zero payload frames for one row gets MSG_ERROR" "$("${C[@]}" frames 0)" \
	'^ERROR sqlstate=08P01 message=.*0 payload frames, expected 1'

out=$("${C[@]}" --timeout-ms 300 cancel)
check "cancel of an unknown request is a no-op (no reply)" "$out rc=$?" '^NOREPLY' 'rc=0'

# --- models ---------------------------------------------------------------
out=$("${C[@]}" load no_such_model.onnx)
check "unknown model file gets MSG_ERROR 58P01 naming it" "$out" \
	'^ERROR sqlstate=58P01 message=.*"no_such_model.onnx"' 'hint=.*model directory'
out=$("${C[@]}" --ocr-models no_such_det.onnx,ch_ppocr_mobile_v2.0_cls_infer.onnx,ch_PP-OCRv4_rec_infer.onnx,ppocr_keys_v1.txt \
	ocr "$DATA/p05_street_sign.jpg")
check "OCR with an unknown detector file gets MSG_ERROR naming it" "$out" \
	'^ERROR sqlstate=58P01 message=.*"no_such_det.onnx"'
check "a '..' model path is refused" "$("${C[@]}" load ../models/ppocr_keys_v1.txt)" \
	'^ERROR sqlstate=22023 message=.*"\.\."'
check "an absolute model path is refused" "$("${C[@]}" load /etc/passwd)" \
	'^ERROR sqlstate=22023 message=.*absolute'
cls=ch_ppocr_mobile_v2.0_cls_infer.onnx
sum=$(sha256sum "$MODEL_DIR/$cls" | awk '{print $1}')
check "load with a wrong SHA-256 is refused (XX001, the bytes are not those registered)" \
	"$("${C[@]}" load $cls 0000000000000000000000000000000000000000000000000000000000000000)" \
	'^ERROR sqlstate=XX001 message=SHA-256 mismatch: model file'
out=$("${C[@]}" load $cls "$sum")
if grep -q 'unsupported operator' <<<"$out"; then
	fail "load with the right SHA-256 (the engine cannot load $cls yet)" "$out"
else
	check "load with the right SHA-256 gets PONG listing the model" "$out" "^PONG .*resident=.*$cls"
	check "unload gets PONG without the model" "$("${C[@]}" unload $cls)" '^PONG ' \
		'resident= request_id'
fi

# --- an image model (the OCR direction classifier as a plain model) -------
# Its declared input is [N, 3, 48, 192]; its output two softmax scores.
out=$("${C[@]}" --timeout-ms "$OCR_TIMEOUT_MS" predict $cls "$DATA/p05_street_sign.jpg" \
	"$DATA/bad/corrupt_middle.jpg" "$DATA/p04_slide_results.png")
check "predict over 3 rows with a bad middle row: values for rows 1 and 3, in order" "$out" \
	'^RESULT rows=3 frames=3' \
	'^ROW 0 id=100 ok=1 n_values=2 frame_bytes=8 values=0?\.[0-9]' \
	'^ROW 1 id=101 ok=0 sqlstate=22P03 message=[^|]+ \| detail=[^|]+ \| hint=.+' \
	'^ROW 2 id=102 ok=1 n_values=2 frame_bytes=8 values='
out=$("${C[@]}" --timeout-ms "$OCR_TIMEOUT_MS" classify $cls 0,180 "$DATA/p04_slide_results.png" \
	"$DATA/bad/zero_bytes.jpg")
check "classify gives the top label; an empty row fails alone" "$out" \
	'^ROW 0 id=100 ok=1 n_values=0 frame_bytes=0 text=0$' '^ROW 1 id=101 ok=0 sqlstate=22P03'
check "classify with fewer labels than scores gets MSG_ERROR" \
	"$("${C[@]}" --timeout-ms "$OCR_TIMEOUT_MS" classify $cls only_one "$DATA/p04_slide_results.png")" \
	'^ERROR sqlstate=22023 message=.*2 scores but has 1 labels'

# --- batched predict/classify --------------------------------------------
# values FILE-OUTPUT ROW: the "values=" of ROW i in a worker-client output.
values() {
	sed -n "s/^ROW $2 id=[0-9]* ok=1 .*values=\([^ ]*\) .*/\1/p" <<<"$1"
}
# counter NAME PONG-LINE: a counter of the PONG line.
counter() {
	sed -n "s/.* $1=\([0-9]*\) .*/\1/p" <<<"$2"
}
A=$DATA/p05_street_sign.jpg   # 620 rows high; the others differ in size
B=$DATA/p01_web_docs.png
Cimg=$DATA/p22_kjv_page.png
BAD=$DATA/bad/corrupt_middle.jpg
P=("${C[@]}" --timeout-ms "$OCR_TIMEOUT_MS" --all-values)
# (A twice alone first: the worker checks where the classifier's output
# [-1, 2] keeps its rows at its first batch of two rows after a load, a
# run of one row more, docs/sql.md "Models"; that happens here, before the
# counts)
for size in 48x192 0x0; do
	alone=$("${P[@]}" --input-size $size predict $cls "$A" "$A")
	va=$(values "$alone" 0)
	before=$("${C[@]}" ping)
	out=$("${P[@]}" --input-size $size predict $cls "$B" "$A" "$BAD" "$Cimg" "$A")
	after=$("${C[@]}" ping)
	runs=$(($(counter model_runs "$after") - $(counter model_runs "$before")))
	if [ $size = 48x192 ]; then want_runs=1; else want_runs=3; fi
	if [ -n "$va" ] && [ "$(values "$out" 1)" = "$va" ] && [ "$(values "$out" 4)" = "$va" ] &&
		grep -q '^ROW 2 id=102 ok=0 sqlstate=22P03' <<<"$out" &&
		[ -n "$(values "$out" 0)" ] && [ -n "$(values "$out" 3)" ] && [ "$runs" = $want_runs ]; then
		pass "predict input $size: a row batched with other sizes and a bad row equals it alone ($va), $runs model calls"
	else
		fail "predict input $size: batched rows equal the row alone ($va), $want_runs model calls (got $runs)" "$out"
	fi
done
alone=$("${C[@]}" --timeout-ms "$OCR_TIMEOUT_MS" --input-size 48x192 classify $cls 0,180 "$B")
label=$(sed -n 's/^ROW 0 id=100 ok=1 .*text=//p' <<<"$alone")
out=$("${C[@]}" --timeout-ms "$OCR_TIMEOUT_MS" --input-size 48x192 classify $cls 0,180 "$A" "$B" "$BAD" "$B")
check "classify in a batch gives each row its label alone ($label)" "$out" \
	"^ROW 1 id=101 ok=1 .*text=$label\$" "^ROW 3 id=103 ok=1 .*text=$label\$" '^ROW 2 id=102 ok=0 sqlstate=22P03'

# --- OCR ------------------------------------------------------------------
out=$("${C[@]}" --timeout-ms "$OCR_TIMEOUT_MS" ocr "$DATA/p05_street_sign.jpg")
check "OCR of p05_street_sign.jpg reads Baker" "$out" '^RESULT rows=1 frames=1' \
	'^ROW 0 id=100 ok=1 .*text=.*Baker'

nocls=ch_PP-OCRv4_det_infer.onnx,none,ch_PP-OCRv4_rec_infer.onnx
out=$("${C[@]}" --timeout-ms "$OCR_TIMEOUT_MS" --ocr-models $nocls,ppocr_keys_v1.txt \
	ocr "$DATA/p05_street_sign.jpg")
check "OCR without the direction classifier reads Baker" "$out" '^ROW 0 id=100 ok=1 .*text=.*Baker'
out=$("${C[@]}" --timeout-ms "$OCR_TIMEOUT_MS" --ocr-models $nocls,no_such_keys.txt \
	ocr "$DATA/p05_street_sign.jpg")
check "OCR with an unknown dictionary gets MSG_ERROR naming it" "$out" \
	'^ERROR sqlstate=58P01 message=.*"no_such_keys.txt"'

for f in "$DATA"/bad/*; do
	case "$f" in *.tsv) continue ;; esac
	name=$(basename "$f")
	want=22P03
	[ "$name" = huge_dimensions.png ] && want=54000
	out=$("${C[@]}" --timeout-ms "$OCR_TIMEOUT_MS" ocr "$f")
	check "bad/$name gives a per-row error $want" "$out" '^RESULT rows=1' \
		"^ROW 0 id=100 ok=0 sqlstate=$want message=[^|]+"
	check "worker answers a ping after bad/$name" "$("${C[@]}" ping)" '^PONG '
done

out=$("${C[@]}" --timeout-ms "$OCR_TIMEOUT_MS" ocr "$DATA/p05_street_sign.jpg" \
	"$DATA/bad/corrupt_middle.jpg" "$DATA/p04_slide_results.png")
check "batch of 3 with a bad middle row: rows 1 and 3 right, in order" "$out" \
	'^RESULT rows=3 frames=3' \
	'^ROW 0 id=100 ok=1 .*text=.*Baker' \
	'^ROW 1 id=101 ok=0 sqlstate=22P03' \
	'^ROW 2 id=102 ok=1 .*text=.*Results'

# Several images in one request: each as it reads alone, exactly.
three=("$DATA/p05_street_sign.jpg" "$DATA/p04_slide_results.png" "$DATA/p11_order_ticket.png")
for cmd in ocr detect; do
	want=""
	for f in "${three[@]}"; do
		want+=$("${C[@]}" --timeout-ms "$OCR_TIMEOUT_MS" $cmd "$f" | sed -n 's/^ROW 0 id=100 //p')$'\n'
	done
	got=$("${C[@]}" --timeout-ms "$OCR_TIMEOUT_MS" $cmd "${three[@]}" | sed -n 's/^ROW [0-9] id=10[0-9] //p')$'\n'
	if [ "$got" = "$want" ] && [ "$(grep -c '^ok=1 ' <<<"$got")" = 3 ]; then
		pass "$cmd of 3 images in one request equals each image alone"
	else
		fail "$cmd of 3 images in one request equals each image alone" "got: $got want: $want"
	fi
done

out=$("${C[@]}" --timeout-ms "$OCR_TIMEOUT_MS" detect "$DATA/p05_street_sign.jpg")
check "detect_text returns boxes as JSON" "$out" '^ROW 0 id=100 ok=1 .*json=\[\{"box":\[\['

# --- chained fragments and shared input (RunFragment.more_fragments) -----
if [ -f "$MODEL_DIR/minilm/model.onnx" ]; then
	chain=("$DATA/p05_street_sign.jpg" "$DATA/bad/corrupt_middle.jpg" "$DATA/p35_blank_page.png")
	out=$("${C[@]}" --timeout-ms "$OCR_TIMEOUT_MS" --all-values \
		--embed minilm/model.onnx ocr "${chain[@]}")
	check "OCR chained into embed: a vector per row, the bad row keeps its OCR error" "$out" \
		'^RESULT rows=3 frames=3' '^ROW 0 id=100 ok=1 n_values=384 frame_bytes=1536 ' \
		'^ROW 1 id=101 ok=0 sqlstate=22P03' '^ROW 2 id=102 ok=1 n_values=384 frame_bytes=1536 '
	# each vector is that of the row's OCR text embedded alone ('' for the blank page)
	text=$("${C[@]}" --timeout-ms "$OCR_TIMEOUT_MS" ocr "${chain[0]}" |
		sed -n 's/^ROW 0 id=100 ok=1 .* text=//p')
	printf '%b' "$text" >"$tmp/ocr.txt"
	: >"$tmp/empty.txt"
	want=$("${C[@]}" --timeout-ms "$OCR_TIMEOUT_MS" --all-values embed minilm/model.onnx \
		"$tmp/ocr.txt" "$tmp/empty.txt" | sed -n 's/^ROW [01] id=10[01] ok=1 .* values=\([^ ]*\) .*/\1/p')
	got=$(sed -n 's/^ROW [02] id=10[02] ok=1 .* values=\([^ ]*\) .*/\1/p' <<<"$out")
	if [ -n "$text" ] && [ "$(wc -l <<<"$got")" = 2 ] && [ "$got" = "$want" ]; then
		pass "chained vectors equal the OCR text embedded alone, bit for bit"
	else
		fail "chained vectors equal the OCR text embedded alone, bit for bit" \
			"text: $text got: $got want: $want"
	fi
	# OCR and OCR -> embed in one request: the text and the same vectors
	out2=$("${C[@]}" --timeout-ms "$OCR_TIMEOUT_MS" --all-values \
		--also-chain minilm/model.onnx ocr "${chain[@]}")
	got2=$(sed -n 's/^ROW [35] id=10[02] ok=1 .* values=\([^ ]*\) .* fragment=1$/\1/p' <<<"$out2")
	check "OCR plus OCR -> embed share one request: rows of both fragments" "$out2" \
		'^RESULT rows=6 frames=6' '^ROW 0 id=100 ok=1 .*text=.*Baker' \
		'^ROW 1 id=101 ok=0 sqlstate=22P03' '^ROW 4 id=101 ok=0 sqlstate=22P03 .* fragment=1$'
	if [ "$got2" = "$want" ]; then
		pass "the shared request's vectors equal the chain's"
	else
		fail "the shared request's vectors equal the chain's" "got: $got2 want: $want"
	fi
else
	echo "skip - chained fragments: $MODEL_DIR/minilm/model.onnx is missing (make models)"
fi
out=$("${C[@]}" --timeout-ms "$OCR_TIMEOUT_MS" --also detect ocr "$DATA/p05_street_sign.jpg")
check "OCR and detect_text over one image in one request" "$out" '^RESULT rows=2 frames=2' \
	'^ROW 0 id=100 ok=1 .*text=.*Baker' '^ROW 1 id=100 ok=1 .*json=\[\{"box":.* fragment=1$'
out=$("${C[@]}" --timeout-ms "$OCR_TIMEOUT_MS" --embed ch_PP-OCRv4_det_infer.onnx \
	detect "$DATA/p05_street_sign.jpg")
check "a stage that cannot take the one before fails the request (22023)" "$out" \
	'^ERROR sqlstate=22023 message=stage embed_text cannot follow stage detect_text'

out=$("${C[@]}" ping)
check "pong counts the requests served and lists resident models" "$out" \
	'^PONG .*served=[1-9]' 'resident=.*ch_PP-OCRv4_det_infer.onnx'

# --- dynamic batching across clients -------------------------------------
# A worker that lets a request wait up to 1 s for others, 4 rows a batch.
EP1=$EP
WPID1=$WPID
if start_worker "$tmp/dyn.log" --threads 2 --log-level debug --max-batch 4 \
	--max-queue-delay-us 1000000; then
	D=("$CLIENT" --endpoint "$EP" --timeout-ms "$OCR_TIMEOUT_MS" --all-values --input-size 48x192)
	vb=$(values "$("${P[@]}" --input-size 48x192 predict $cls "$B")" 0)
	vc=$(values "$("${P[@]}" --input-size 48x192 predict $cls "$Cimg")" 0)
	# two rows, on this worker: the output layout's check (above) here
	va=$(values "$("${D[@]}" predict $cls "$A" "$A")" 0)
	# Round 1 makes both clients active peers; in round 2 the first request
	# to arrive waits for the other client, which is active, and they merge.
	before=$("$CLIENT" --endpoint "$EP" ping)
	out=$("${D[@]}" --rounds 2 predict $cls "$A" "$B" + "$Cimg")
	after=$("$CLIENT" --endpoint "$EP" ping)
	c0=$(sed -n '/^CLIENT 0/,/^CLIENT 1/p' <<<"$out")
	c1=$(sed -n '/^CLIENT 1/,$p' <<<"$out")
	check "two clients at once: client 0 gets its 2 rows, in order" "$c0" \
		'^RESULT rows=2 frames=2 request_id=7 served=[0-9]+$' "^ROW 0 id=100 ok=1 .*values=$va " \
		"^ROW 1 id=101 ok=1 .*values=$vb "
	check "two clients at once: client 1 gets its own row" "$c1" \
		'^RESULT rows=1 frames=1 request_id=8 served=[0-9]+$' "^ROW 0 id=1100 ok=1 .*values=$vc "
	merged=$(($(counter merged "$after") - $(counter merged "$before")))
	batches=$(($(counter batches "$after") - $(counter batches "$before")))
	runs=$(($(counter model_runs "$after") - $(counter model_runs "$before")))
	# Round 1 ran as 1 merged or 2 separate batches; round 2 as 1 merged.
	check "two clients at once ran as one merged batch of 3 rows, one model call" \
		"merged=$merged batches=$batches model_runs=$runs" \
		'^(merged=1 batches=3 model_runs=3|merged=2 batches=2 model_runs=2)$'
	check "the log says the requests were merged" "$(cat "$tmp/dyn.log")" \
		'INFO merged 2 requests \(3 rows\) into one predict run'
	check "at debug, the log names the merged run's model call (file, rows, ms)" \
		"$(cat "$tmp/dyn.log")" \
		"DEBUG run of 2 requests in [0-9.]+ ms: model calls ${cls//./\\.} 3 [0-9.]+$"

	before=$after
	"${D[@]}" predict $cls "$A" "$A" "$A" "$A" "$A" "$A" >"$tmp/six.out"
	after=$("$CLIENT" --endpoint "$EP" ping)
	runs=$(($(counter model_runs "$after") - $(counter model_runs "$before")))
	check "--max-batch 4: 6 rows of one request take 2 model calls, all equal" \
		"runs=$runs $(grep -c "values=$va " "$tmp/six.out")" '^runs=2 6$'

	# Requests with two fragments over the same rows merge too, and each
	# client gets the rows of both fragments that are its own.  On a worker
	# of its own that lets a request wait up to 5 s: when round 1 did not
	# merge, client 1's round-2 request comes only after its round-1 OCR,
	# which on a loaded machine takes longer than 1 s.
	EPD=$EP
	WPIDD=$WPID
	start_worker "$tmp/dyn2.log" --threads 2 --log-level debug --max-queue-delay-us 5000000 ||
		fail "the worker for the two-fragment merge did not start" ""
	out=$("$CLIENT" --endpoint "$EP" --timeout-ms "$OCR_TIMEOUT_MS" --rounds 2 --also detect \
		ocr "$DATA/p19_footer_small.png" "$DATA/bad/zero_bytes.jpg" + "$DATA/p28_ci_status_palette.png")
	c0=$(sed -n '/^CLIENT 0/,/^CLIENT 1/p' <<<"$out")
	c1=$(sed -n '/^CLIENT 1/,$p' <<<"$out")
	check "two clients with OCR + detect_text: client 0 gets its rows of both" "$c0" \
		'^RESULT rows=4 frames=4 request_id=7 served=[0-9]+$' '^ROW 0 id=100 ok=1 .*text=' \
		'^ROW 1 id=101 ok=0 sqlstate=22P03' '^ROW 2 id=100 ok=1 .*json=\[.* fragment=1$' \
		'^ROW 3 id=101 ok=0 sqlstate=22P03 .* fragment=1$'
	check "two clients with OCR + detect_text: client 1 gets its own rows" "$c1" \
		'^RESULT rows=2 frames=2 request_id=8 served=[0-9]+$' '^ROW 0 id=1100 ok=1 .*text=' \
		'^ROW 1 id=1100 ok=1 .*json=\[.* fragment=1$'
	check "the log says the two-fragment requests were merged" "$(cat "$tmp/dyn2.log")" \
		'INFO merged 2 requests \(3 rows\) into one ocr run'
	stop_worker TERM
	EP=$EPD
	WPID=$WPIDD
	if [ -f "$MODEL_DIR/minilm/model.onnx" ]; then
		"$CLIENT" --endpoint "$EP" --timeout-ms "$OCR_TIMEOUT_MS" --also-chain minilm/model.onnx \
			ocr "$DATA/p19_footer_small.png" >"$tmp/reuse.out"
		check "OCR and OCR -> embed in one request run the OCR once" \
			"$(cat "$tmp/reuse.out" "$tmp/dyn.log")" '^ROW 1 id=100 ok=1 n_values=384 .* fragment=1$' \
			'fragment 1: first stage taken from fragment 0'
	fi

	# A request waits in the queue for an active peer (up to 1 s) while a
	# PING is answered at once.
	Q=(--rounds 2 --solo-last-round)
	QC=(predict $cls "$A" + "$A")
	"${D[@]}" "${Q[@]}" "${QC[@]}" >"$tmp/queued.out" &
	qpid=$!
	pids+=("$qpid")
	sleep 0.3
	check "a PING is answered while a request is queued, with a backlog estimate" \
		"$("$CLIENT" --endpoint "$EP" --timeout-ms 300 ping)" \
		'^PONG .* queue=[1-9] backlog_ms=([1-9]|0\.[0-9]*[1-9])'
	wait "$qpid"
	check "the queued request then gets its answer" "$(cat "$tmp/queued.out")" \
		"^ROW 0 id=100 ok=1 .*values=$va "

	before=$("$CLIENT" --endpoint "$EP" ping)
	out=$("${D[@]}" "${Q[@]}" --timeout-ms 1500 --cancel "${QC[@]}" 2>&1)
	rc=$?
	after=$("$CLIENT" --endpoint "$EP" ping)
	check "a cancel drops a queued request: no result" "$out rc=$rc" '^NOREPLY' 'rc=0'
	# Round 1 ran 2 rows; the cancelled third never runs.
	check "a cancelled request is never run" \
		"$(($(counter rows "$after") - $(counter rows "$before"))) $(counter queue "$after")" '^2 0$'
	check "the log says the cancel dropped it" "$(cat "$tmp/dyn.log")" \
		'cancel dropped the queued request'

	# Round 1 is over within about 1 s; round 2's request then waits 1 s.
	"${D[@]}" "${Q[@]}" "${QC[@]}" >"$tmp/shut.out" &
	qpid=$!
	pids+=("$qpid")
	sleep 1.5
	stop_worker TERM
	wait "$qpid"
	check "SIGTERM with a queued request: it gets MSG_ERROR 57P01, exit 0" \
		"$STOPPED $(tr '\n' ' ' <"$tmp/shut.out")" '^exit=0 CLIENT 0 ERROR sqlstate=57P01 message=.*not run' \
		'hint=Run the query again'
else
	fail "dynamic batching worker starts"
fi
EP=$EP1
WPID=$WPID1

# --- shutdown -------------------------------------------------------------
other_log=$tmp/second.log
"$WORKER" --listen "$EP" --model-dir "$MODEL_DIR" 2>"$other_log" &
opid=$!
pids+=("$opid")
wait "$opid"
rc=$?
check "a second worker on the same endpoint fails to start" "$(cat "$other_log") rc=$rc" \
	'rc=1' 'could not bind'

# SIGHUP (a reload, to most daemons) ended the worker with no word
kill -HUP "$WPID"
sleep 0.3
check "SIGHUP is logged and ignored: the worker still answers" \
	"$("$CLIENT" --endpoint "$EP" ping | cut -c1-4) $(grep -c 'SIGHUP ignored: the worker reads its settings (--config and its flags) at start only' "$tmp/worker.log")" \
	'^PONG 1$'

stop_worker TERM
check "SIGTERM: exit 0 within 2 s" "$STOPPED" '^exit=0$'
check "SIGTERM: 'shutting down' logged" "$(cat "$tmp/worker.log")" 'INFO shutting down'

if start_worker "$tmp/worker2.log" --log-level warn; then
	stop_worker INT
	check "SIGINT: exit 0 within 2 s" "$STOPPED" '^exit=0$'
	check "--log-level warn hides INFO lines" "$(cat "$tmp/worker2.log")x" '^x$'
else
	fail "second worker starts"
fi

# SIGTERM in the middle of a long batch: the batch is abandoned between
# rows with MSG_ERROR 57P01 and the worker still exits 0 promptly.
if start_worker "$tmp/worker3.log"; then
	batch=()
	for _ in $(seq 30); do batch+=("$DATA/p05_street_sign.jpg"); done
	"$CLIENT" --endpoint "$EP" --timeout-ms 20000 ocr "${batch[@]}" >"$tmp/busy.out" &
	cpid=$!
	pids+=("$cpid")
	wait_grep 'loaded dictionary' "$tmp/worker3.log" 100 0.1
	sleep 0.5
	stop_worker TERM 30
	wait "$cpid"
	check "SIGTERM during a 30-row batch: exit 0 within 3 s" "$STOPPED" '^exit=0$'
	check "SIGTERM during a batch: the batch gets MSG_ERROR 57P01" "$(cat "$tmp/busy.out")" \
		'^ERROR sqlstate=57P01 message=.*shutting down' 'hint=Run the query again'
else
	fail "third worker starts"
fi

# SIGTERM in the middle of one dense page (2000x2000, 99 lines of small
# words: a minute of OCR on a loaded 2-core machine): the run stops
# between the page's model calls, not after the page (which outlasted
# systemd's TimeoutStopSec), and the request gets 57P01
dense=$tmp/dense.png
if [ -n "${PYTHON:-}" ] && "$PYTHON" - "$dense" <<'PY'
import random
import sys

from PIL import Image, ImageDraw, ImageFont

random.seed(7)
words = ["alpha", "delta", "order", "total", "amount", "street", "invoice",
         "berlin", "parcel", "notice", "2024", "12.80"]
img = Image.new("RGB", (2000, 2000), "white")
draw = ImageDraw.Draw(img)
font = ImageFont.load_default(size=14)
for y in range(10, 1990, 20):
    draw.text((10, y), " ".join(random.choice(words) for _ in range(40)),
              font=font, fill="black")
img.save(sys.argv[1])
PY
then
	if start_worker "$tmp/worker3b.log" --log-level info; then
		"$CLIENT" --endpoint "$EP" --timeout-ms 600000 ocr "$dense" >"$tmp/dense.out" &
		cpid=$!
		pids+=("$cpid")
		wait_grep 'loaded dictionary' "$tmp/worker3b.log" 100 0.1
		sleep 1
		t0=$(date +%s)
		stop_worker TERM 300
		wait "$cpid"
		check "SIGTERM during one dense page: exit 0 within 30 s, systemd's TimeoutStopSec ($(($(date +%s) - t0)) s after)" \
			"$STOPPED" '^exit=0$'
		check "... the page was stopped in its row, the request gets 57P01" \
			"$(cat "$tmp/dense.out" "$tmp/worker3b.log")" '^ERROR sqlstate=57P01 ' \
			'the run was stopped in row 1; 1 of 1 rows were not run'
	else
		fail "dense-page worker starts"
	fi
else
	fail "the dense page is made (PYTHON with Pillow: ${PYTHON:-unset})"
fi

# --- request limits, model paths, odd files, log escaping -----------------
# A worker with --max-message-bytes 1 MiB (a header of 70000 row ids is
# about 210 kB) over a model dir of its own: a
# copy of the classifier, a symbolic link to it (inside) and one to the
# real classifier in $MODEL_DIR (outside), a FIFO and a directory.
mdir=$tmp/mdir
mkdir -p "$mdir/subdir"
cp "$MODEL_DIR/$cls" "$mdir/cls.onnx"
ln -s cls.onnx "$mdir/in_link.onnx"
ln -s "$(cd "$MODEL_DIR" && pwd)/$cls" "$mdir/out_link.onnx"
mkfifo "$mdir/fifo.onnx"
out=$("$WORKER" --listen tcp://127.0.0.1:1 --model-dir "$mdir" --max-message-bytes 10 2>&1)
check "--max-message-bytes 10 is refused (exit 2)" "$out rc=$?" 'rc=2' 'max-message-bytes must be'
if start_worker "$tmp/worker4.log" --model-dir "$mdir" --max-message-bytes 1048576; then
	C4=("$CLIENT" --endpoint "$EP")
	check "the bound worker logs its message limit" "$(cat "$tmp/worker4.log")" \
		'max message 1048576 bytes'
	check "... and publishes it in its state" "$("${C4[@]}" ping)" \
		'^PONG .* max_message_bytes=1048576( |$)'
	# 1 row id, 200000 empty frames: at most 65537 frames are kept, then 54000.
	out=$("${C4[@]}" --timeout-ms 20000 bulk 1 200000 0)
	check "1 row with 200000 empty frames gets MSG_ERROR 54000 naming the limit" "$out" \
		'^ERROR sqlstate=54000 message=request has 200000 payload frames, more than the 65536 rows'
	check "... and the worker still answers a ping" "$("${C4[@]}" ping)" '^PONG '
	rss=$(awk '/VmHWM/ {print $2}' "/proc/$WPID/status")
	if [ "${rss:-0}" -lt 150000 ]; then
		pass "... and its peak RSS stays small (${rss} kB)"
	else
		fail "... and its peak RSS stays small" "VmHWM ${rss} kB"
	fi
	check "a header naming 70000 rows gets MSG_ERROR 54000" "$("${C4[@]}" bulk 70000 0 0)" \
		'^ERROR sqlstate=54000 message=.*70000 rows, more than the 65536'
	check "65537 empty rows (one over the limit) get MSG_ERROR 54000" \
		"$("${C4[@]}" --timeout-ms 20000 bulk 65537 65537 0)" \
		'^ERROR sqlstate=54000 message=.*65537 rows, more than the 65536'
	# (This model dir has no detector: a request that passes the limits
	# gets as far as loading it.)
	check "65536 empty rows (the limit) pass the limits" \
		"$("${C4[@]}" --timeout-ms 20000 bulk 65536 65536 0)" \
		'^ERROR sqlstate=58P01 message=.*"ch_PP-OCRv4_det_infer.onnx"'
	check "a frame under --max-message-bytes is read" "$("${C4[@]}" bulk 1 1 60000)" \
		'^ERROR sqlstate=58P01 message=.*"ch_PP-OCRv4_det_infer.onnx"'
	out=$("${C4[@]}" --timeout-ms 1500 bulk 1 1 2000000)
	check "a frame over --max-message-bytes: ZeroMQ drops the connection, no reply" \
		"$out rc=$?" '^NOREPLY' 'rc=3'
	check "... and the worker still answers a ping" "$("${C4[@]}" ping)" '^PONG '

	# One model, several spellings of its path: one copy, unloaded by any.
	for f in cls.onnx ./cls.onnx .//cls.onnx ././cls.onnx; do
		"${C4[@]}" --timeout-ms 20000 load "$f" >"$tmp/load.out"
	done
	out=$("${C4[@]}" ping)
	check "cls.onnx, ./cls.onnx, .//cls.onnx and ././cls.onnx load one copy" \
		"$out $(grep -c 'loaded model' "$tmp/worker4.log") loads" \
		'resident=cls\.onnx request_id' ' 1 loads$'
	check "unloading .//./cls.onnx drops it" "$("${C4[@]}" unload .//./cls.onnx)" \
		'^PONG .*resident= request_id'
	check "a symbolic link inside the model dir to a file inside loads" \
		"$("${C4[@]}" --timeout-ms 20000 load in_link.onnx)" '^PONG .*resident=in_link\.onnx'
	check "a symbolic link to the real model outside the model dir is refused (22023)" \
		"$("${C4[@]}" --timeout-ms 20000 load out_link.onnx)" \
		'^ERROR sqlstate=22023 message=model file "out_link\.onnx" of model "out_link\.onnx" resolves outside the model directory .*--model-dir'
	"${C4[@]}" unload in_link.onnx >/dev/null
	check "a path of only '.' components is refused" "$("${C4[@]}" load ././/)" \
		'^ERROR sqlstate=22023 message=.*names no file'

	# A FIFO or a directory is not read (a FIFO would block the worker).
	out=$("${C4[@]}" --timeout-ms 3000 load fifo.onnx)
	check "a FIFO in the model dir is refused with 58P01 naming it" "$out" \
		'^ERROR sqlstate=58P01 message=model file "fifo.onnx" .*not a regular file'
	check "a directory in the model dir is refused with 58P01" "$("${C4[@]}" load subdir)" \
		'^ERROR sqlstate=58P01 message=model file "subdir" .*not a regular file'
	check "... and the worker still answers a ping" "$("${C4[@]}" ping)" '^PONG '

	# A newline in a file name cannot forge a log line.
	"${C4[@]}" load $'evil\n2026-01-01T00:00:00.000Z infer-worker[1] INFO forged.onnx' >/dev/null
	"${C4[@]}" load $'bad\xff\x1b[31m.onnx' >/dev/null
	log4=$(cat "$tmp/worker4.log")
	if grep -q '^2026-01-01T00:00:00.000Z infer-worker\[1\] INFO forged' <<<"$log4" ||
		grep -q $'\x1b' <<<"$log4"; then
		fail "control characters from requests are escaped in the log" "$log4"
	else
		check "control characters from requests are escaped in the log" "$log4" \
			'"evil\\n2026-01-01T00:00:00\.000Z infer-worker\[1\] INFO forged\.onnx"' \
			'"bad\\xff\\x1b\[31m\.onnx"'
	fi
	stop_worker TERM
	check "the limits worker exits 0 on SIGTERM" "$STOPPED" '^exit=0$'
else
	fail "limits worker starts"
fi

# --- a client that does not read its answers (--max-client-bytes) ---------
# A client that sends 20000 pings from a socket that reads little: the
# worker keeps what it has answered up to twice --max-client-bytes (4 MiB
# here: a client that reads is over the limit for the moment an answer
# takes to go out, so only twice it, or once it for a second, stops one),
# then drops what comes (a refusal would be held too); it logs the episode
# once each way, serves another client all the while, and serves the
# first again once it has read.  One connection sending
# request after request that it reads (12 rounds of 3 images, about 350
# kB a request, over a 1 MiB limit) is never refused: what a request
# holds is given back when it is answered.
out=$("$WORKER" --help 2>&1)
check "--help explains --max-client-bytes" "$out" '--max-client-bytes BYTES' 'SQLSTATE 53400' \
	'default 1G'
out=$("$WORKER" --listen tcp://127.0.0.1:1 --model-dir "$MODEL_DIR" --max-client-bytes 0 2>&1)
check "--max-client-bytes 0 is refused (exit 2)" "$out rc=$?" 'rc=2' 'max-client-bytes must be a positive byte count'
# flood_counts OUT: from worker-client's flood output, what the worker held
# before the client read (unread, refusals, drops: its last HELD line but
# one) and what the client read (answered: pongs or results, refused)
flood_counts() {
	local held
	held=$(grep '^HELD ' <<<"$1" | head -n -1 | tail -1)
	unread=$(sed -n 's/.*unread_answer_bytes=\([0-9]*\).*/\1/p' <<<"$held")
	refusals=$(sed -n 's/.* refusals=\([0-9]*\).*/\1/p' <<<"$held")
	drops=$(sed -n 's/.* drops=\([0-9]*\).*/\1/p' <<<"$held")
	answered=$(sed -n 's/^FLOOD .* \(pongs\|results\)=\([0-9]*\).*/\2/p' <<<"$1")
	refused=$(sed -n 's/^FLOOD .* refused=\([0-9]*\).*/\1/p' <<<"$1")
}
if start_worker "$tmp/worker_cb.log" --max-client-bytes 4M --threads 1; then
	out=$("$CLIENT" --endpoint "$EP" --timeout-ms 5000 flood 20000)
	flood_counts "$out"
	# twice 4 MiB, and the refusals of its last second over once (or one
	# answer of a few kB)
	if [ "${unread:-0}" -gt 4194304 ] && [ "${unread:-0}" -le $((8388608 + 1048576 + 16384)) ]; then
		pass "the worker holds the unread answers up to twice the limit ($unread bytes)"
	else
		fail "the worker holds the unread answers up to twice the limit" "$out"
	fi
	if [ "${drops:-0}" -gt 0 ] && [ "$refusals" = "$refused" ] &&
		[ $((answered + refused + drops)) -eq 20000 ]; then
		pass "every ping was answered, refused (53400) or dropped: $answered + $refused + $drops"
	else
		fail "every ping was answered, refused (53400) or dropped" "$out"
	fi
	check "once it has read, the client is served again and the worker holds nothing for it" \
		"$out" '^FLOOD sent=20000 ' '^AFTER pong$' '^HELD unread_answer_bytes=0 '
	# The client's ZeroMQ reads answers into its queue while the program
	# does not, so the worker can see it dip under and go over again: each
	# logged "over" line gets one "under again" line, and the "over" lines
	# come at most once a second (warn_over), never once a request.
	n_over=$(grep -c 'over --max-client-bytes 4194304: its requests are refused' "$tmp/worker_cb.log")
	n_under=$(grep -c 'under --max-client-bytes 4194304 again' "$tmp/worker_cb.log")
	n_err=$(grep -c 'error 53400' "$tmp/worker_cb.log")
	if [ "$n_over" -ge 1 ] && [ "$n_over" -le 10 ] && [ "$n_under" = "$n_over" ] && [ "$n_err" = 0 ]; then
		pass "the episodes are logged once each way, not once a request ($n_over over, $n_under under)"
	else
		fail "the episodes are logged once each way, not once a request" \
			"over lines $n_over, under lines $n_under, error lines $n_err"
	fi
	check "the log names the client" "$(cat "$tmp/worker_cb.log")" \
		'WARN client 127\.0\.0\.1 \(routing id [0-9a-f]+\) holds [0-9]+ bytes'
	stop_worker TERM
else
	fail "client-limit worker starts"
fi
# Small requests whose answers are large, queued unread: a request admitted
# while its client was under the limit is refused (53400, never dropped)
# when its turn comes, once the answers the client has not read pass twice
# the limit, or the limit for a second.  500 embeds of 8 one-character
# rows (about 3 kB counted each, 13 kB of answer) under a 2 MiB limit:
# unread stays within twice the limit, two merged runs' answers and the
# refusals of the queued requests, about 1.4 kB each (the worker made all
# 6.5 MB of answers before).
if start_worker "$tmp/worker_cb2.log" --max-client-bytes 2M --threads 1; then
	printf 'x' >"$tmp/x.txt"
	xs=()
	for _ in 1 2 3 4 5 6 7 8; do xs+=("$tmp/x.txt"); done
	out=$("$CLIENT" --endpoint "$EP" --timeout-ms 30000 --flood 500 embed minilm/model.onnx "${xs[@]}")
	flood_counts "$out"
	if [ "${unread:-0}" -gt 2097152 ] && [ "${unread:-0}" -le $((4194304 + 16 * 14000 + 500 * 1400)) ] &&
		[ "${refused:-0}" -gt 0 ] && [ "${drops:-1}" -eq 0 ] &&
		[ $((answered + refused)) -eq 500 ]; then
		pass "queued small requests with large answers: unread held to the limit ($unread bytes), $answered answered, $refused refused, $drops dropped"
	else
		fail "queued small requests with large answers: unread held to the limit" "$out"
	fi
	check "... and once it has read, the client is served again" "$out" \
		'^AFTER pong$' '^HELD unread_answer_bytes=0 '
	check "... a refusal names the limit and the flag" "$out" \
		'^REFUSAL request_id=[0-9]+ message=the worker holds [0-9]+ bytes for this connection \(requests queued and answers not read yet\), over its limit of 2097152 bytes; the request was not run \| hint=.*--max-client-bytes'
	check "... the log says the queued ones were refused too" "$(cat "$tmp/worker_cb2.log")" \
		'over --max-client-bytes 2097152: its requests are refused(, even those queued,)? until it reads'
	stop_worker TERM
else
	fail "client-limit worker for queued requests starts"
fi
if start_worker "$tmp/worker_cb1.log" --max-client-bytes 1M --threads 1 --max-batch 16 \
	--max-queue-delay-us 0; then
	out=$("$CLIENT" --endpoint "$EP" --timeout-ms 20000 --input-size 48x192 --rounds 12 \
		predict $cls "$DATA/p08_doc_on_desk.jpg" "$DATA/p38_multi_noticeboard.jpg" \
		"$DATA/p31_lift_notice_exif6.jpg")
	check "one connection's 12 requests of 350 kB that it reads pass a 1 MiB limit" "$out" \
		'^RESULT rows=3 frames=3 request_id=7 served=12' '^ROW 2 id=102 ok=1 '
	check "... and nothing is refused" "$("$CLIENT" --endpoint "$EP" ping)" \
		' unread_answer_bytes=0 client_limit_refusals=0 client_limit_drops=0 '
	# three requests at once from a client that reads as answers come, each
	# answer (600 embeddings, 1.5 MB) over the 1 MiB limit: each counts
	# unread until written out, and the next one ran just after it; the
	# second and third were refused or dropped, though the client read
	printf 'x' >"$tmp/x.txt"
	xs=()
	for _ in $(seq 600); do xs+=("$tmp/x.txt"); done
	check "three pipelined requests whose answers are each over the limit, from a client that reads: all answered" \
		"$("$CLIENT" --endpoint "$EP" --timeout-ms 60000 --flood 3 --flood-read embed minilm/model.onnx "${xs[@]}")" \
		'^FLOOD sent=3 results=3 refused=0 other=0$'
	stop_worker TERM
else
	fail "1 MiB client-limit worker starts"
fi

# --- the input cache ------------------------------------------------------
# Rows that come with their SHA-256 are cached; the same rows left out
# (empty frames, --cached-rows) are answered from the cache with the same
# values; a row left out that the worker does not hold gets MSG_NEED_INPUT,
# and sending it again answers it right; a row whose bytes do not match
# its digest fails alone with XX001 and is not cached; a row cached under
# one input_scope is not found under another; a restarted worker (empty
# cache) asks for every row left out; --input-cache 0 caches nothing.
out=$("$WORKER" --help 2>&1)
check "--help explains --input-cache" "$out" '--input-cache MB' '0 = off \(default 256\)'
out=$("$WORKER" --listen tcp://127.0.0.1:1 --model-dir "$MODEL_DIR" --input-cache -1 2>&1)
check "a negative --input-cache is refused (exit 2)" "$out rc=$?" 'rc=2' 'input-cache must be'
cls=ch_ppocr_mobile_v2.0_cls_infer.onnx
IA=$DATA/p05_street_sign.jpg
IB=$DATA/p06_bakery_sign_fr.jpg
IMC=$DATA/p01_web_docs.png
ha=$(sha256sum "$IA" | cut -c1-64)
hb=$(sha256sum "$IB" | cut -c1-64)
hc=$(sha256sum "$IMC" | cut -c1-64)
# row_values OUT ROW: the values of ROW in a RESULT
row_values() { sed -n "s/^ROW $2 id=[0-9]* ok=1 .*values=\([^ ]*\).*/\1/p" <<<"$1"; }
if start_worker "$tmp/worker_ic.log" --threads 2 --input-cache 64; then
	IC=("$CLIENT" --endpoint "$EP" --timeout-ms "$OCR_TIMEOUT_MS" --input-size 48x192 --all-values)
	plain=$("${IC[@]}" predict $cls "$IA" "$IB" "$IMC")
	va=$(row_values "$plain" 0)
	vb=$(row_values "$plain" 1)
	vc=$(row_values "$plain" 2)
	out=$("$CLIENT" --endpoint "$EP" ping)
	check "no digests: nothing cached" "$out" ' input_cache_entries=0 ' \
		' input_cache_capacity=67108864 bloom_bytes=4096 bloom_hashes=5 bloom_bits_set=0 '
	out=$("${IC[@]}" --input-sha256 "$ha,$hb" predict $cls "$IA" "$IB")
	if [ -n "$va" ] && [ "$(row_values "$out" 0)" = "$va" ] && [ "$(row_values "$out" 1)" = "$vb" ]; then
		pass "rows sent with digests are answered as without"
	else
		fail "rows sent with digests are answered as without" "$plain / $out"
	fi
	bytes=$(($(stat -c %s "$IA") + $(stat -c %s "$IB")))
	out=$("$CLIENT" --endpoint "$EP" ping)
	check "... and cached: 2 entries of their bytes, 2 x 5 filter bits" "$out" \
		" input_cache_hits=0 input_cache_misses=0 input_cache_bytes=$bytes input_cache_entries=2 " \
		' bloom_bits_set=(9|10) '
	out=$("${IC[@]}" --input-sha256 "$ha,$hb" --cached-rows 0,1 predict $cls "$IA" "$IB")
	if [ "$(row_values "$out" 0)" = "$va" ] && [ "$(row_values "$out" 1)" = "$vb" ]; then
		pass "rows left out are answered from the cache, bit for bit ($va)"
	else
		fail "rows left out are answered from the cache, bit for bit" "$plain / $out"
	fi
	check "... 2 cache hits" "$("$CLIENT" --endpoint "$EP" ping)" ' input_cache_hits=2 input_cache_misses=0 '
	out=$("${IC[@]}" --input-sha256 "$ha,$hc" --cached-rows 0,1 predict $cls "$IA" "$IMC")
	check "a row left out that is not cached gets MSG_NEED_INPUT naming it" "$out" \
		'^NEED_INPUT rows=1 request_id=7$'
	out=$("${IC[@]}" --resend --input-sha256 "$ha,$hc" --cached-rows 0,1 predict $cls "$IA" "$IMC")
	if grep -q '^NEED_INPUT rows=1 ' <<<"$out" && [ "$(row_values "$out" 0)" = "$va" ] &&
		[ "$(row_values "$out" 1)" = "$vc" ]; then
		pass "... sent again with its bytes, both rows are answered right"
	else
		fail "... sent again with its bytes, both rows are answered right" "$out"
	fi
	out=$("${IC[@]}" --input-sha256 "$hb,$hc" predict $cls "$IA" "$IMC")
	check "a row whose bytes do not match its digest fails alone with XX001" "$out" \
		'^ROW 0 id=100 ok=0 sqlstate=XX001 message=the row.s bytes do not match the SHA-256' \
		'^ROW 1 id=101 ok=1 '
	check "... and the worker log says so" "$(cat "$tmp/worker_ic.log")" \
		'WARN 1 rows of a request do not match their input digests'
	# the lie did not replace what hb names: B left out still gives B's values
	out=$("${IC[@]}" --input-sha256 "$hb" --cached-rows 0 predict $cls "$IB")
	if [ "$(row_values "$out" 0)" = "$vb" ]; then
		pass "... and is not cached under the digest it claimed"
	else
		fail "... and is not cached under the digest it claimed" "$out"
	fi
	out=$("$CLIENT" --endpoint "$EP" ping)
	check "state: 6 hits, 2 misses, 3 entries" "$out" \
		' input_cache_hits=6 input_cache_misses=2 ' ' input_cache_entries=3 '
	# scopes (RunFragment.input_scope): B, held unscoped, sent again under
	# scope a; left out under scope b it is asked for, under a it is held
	out=$("${IC[@]}" --input-scope tenant-a --input-sha256 "$hb" predict $cls "$IB")
	check "a row sent under a scope is answered" "$out" '^ROW 0 id=100 ok=1 '
	check "... and cached under its scope's key: a 4th entry" \
		"$("$CLIENT" --endpoint "$EP" ping)" ' input_cache_entries=4 '
	out=$("${IC[@]}" --input-scope tenant-b --input-sha256 "$hb" --cached-rows 0 predict $cls "$IB")
	check "another scope that leaves it out gets MSG_NEED_INPUT (not another scope's row)" "$out" \
		'^NEED_INPUT rows=0 '
	out=$("${IC[@]}" --input-scope tenant-a --input-sha256 "$hb" --cached-rows 0 predict $cls "$IB")
	if [ "$(row_values "$out" 0)" = "$vb" ]; then
		pass "... its own scope that leaves it out is answered from the cache ($vb)"
	else
		fail "... its own scope that leaves it out is answered from the cache" "$out"
	fi
	out=$("${IC[@]}" --input-scope tenant-a --input-sha256 "$ha" --cached-rows 0 predict $cls "$IA")
	check "a row cached with no scope is not found under a scope" "$out" '^NEED_INPUT rows=0 '
	out=$("${IC[@]}" --input-scope "$(printf 's%.0s' $(seq 65))" --input-sha256 "$hb" predict $cls "$IB")
	check "an input_scope over 64 bytes is refused (08P01)" "$out" \
		'^ERROR sqlstate=08P01 message=MSG_RUN_FRAGMENT request: input_scope has 65 bytes, at most 64'
	stop_worker TERM
	# the same endpoint, an empty cache: every row left out is asked for
	port_ep=$EP
	"$WORKER" --listen "$port_ep" --model-dir "$MODEL_DIR" --threads 2 2>"$tmp/worker_ic2.log" &
	WPID=$!
	pids+=("$WPID")
	for _ in $(seq 50); do
		"$CLIENT" --endpoint "$port_ep" --timeout-ms 200 ping | grep -q '^PONG ' && break
	done
	out=$("${IC[@]}" --resend --input-sha256 "$ha,$hb" --cached-rows 0,1 predict $cls "$IA" "$IB")
	if grep -q '^NEED_INPUT rows=0,1 ' <<<"$out" && [ "$(row_values "$out" 0)" = "$va" ] &&
		[ "$(row_values "$out" 1)" = "$vb" ]; then
		pass "a restarted worker (empty cache) asks for the rows left out, then answers them right"
	else
		fail "a restarted worker (empty cache) asks for the rows left out, then answers them right" "$out"
	fi
	stop_worker TERM
else
	fail "input cache worker starts"
fi
if start_worker "$tmp/worker_ic0.log" --input-cache 0; then
	IC0=("$CLIENT" --endpoint "$EP" --timeout-ms "$OCR_TIMEOUT_MS" --input-size 48x192 --all-values)
	out=$("${IC0[@]}" --input-sha256 "$ha" predict $cls "$IA")
	check "--input-cache 0: a row with a digest is answered" "$out" '^ROW 0 id=100 ok=1 '
	check "... not cached, and no filter is published" "$("$CLIENT" --endpoint "$EP" ping)" \
		' input_cache_bytes=0 input_cache_entries=0 input_cache_capacity=0 bloom_bytes=0 bloom_hashes=0 '
	check "... a row left out gets MSG_NEED_INPUT" \
		"$("${IC0[@]}" --input-sha256 "$ha" --cached-rows 0 predict $cls "$IA")" '^NEED_INPUT rows=0 '
	check "the worker logs its input cache setting" "$(cat "$tmp/worker_ic0.log")" 'INFO input cache: off'
	stop_worker TERM
else
	fail "worker with --input-cache 0 starts"
fi

echo "worker: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
