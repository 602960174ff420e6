#!/usr/bin/env bash
# test_hostile.sh: process-level test of the hostile inputs of issue 7
# (docs/reliability.md "Hostile input"): each gets a clear error (its
# SQLSTATE and a message that names what is wrong), and afterwards the same
# infer-worker process is still running and answers a good request with
# the right answer.
#
# Starts real infer-workers on 127.0.0.1 and drives them with worker-client.
# The hostile inputs are made here from real files:
#   - decompression bombs: a PNG whose IHDR declares 100000 x 100000 RGB
#     pixels (30 GB decoded; CRCs right, one small IDAT), and JPEGs (the
#     real p05_street_sign.jpg) whose SOF0 is rewritten to 65500 x 65500
#     (libjpeg's largest side: our pixel limit refuses it) and to 65535 x
#     65535 (the most a JPEG header holds: libjpeg refuses it): 54000
#     each, refused from the header (the worker's peak RSS stays small),
#     alone and in a batch whose other rows are answered;
#   - CMYK JPEG and 16-bit gray PNG (real scans of the shared set): not
#     errors; decoded and read by OCR (ground truth words);
#   - zero-byte input: 22P03 "not an image";
#   - protocol messages whose lengths lie: a header field declaring 200
#     bytes of which 3 are there (08P01 malformed), a header naming one row
#     followed by 3 payload frames or none (08P01), a header naming 70000
#     rows (54000);
#   - a text row longer than --max-text-bytes: 54000 before tokenizing, the
#     batch's other row embedded;
#   - models: the real direction classifier with one node's operator
#     renamed to Loop (which the engine lacks: 0A000), the same file cut
#     to half its bytes and an empty file (XX001, data_corrupted), and the
#     real detector (4.7 MB) on a worker whose --gpu-memory is 2M (53200,
#     refused from the file's size, before it is parsed or made resident);
#   - tensors over --max-tensor-bytes 8M: OCR's detector input for a small
#     page (54000 for the row, naming the tensor and the limit), a model
#     registered at 2048x2048 (54000 for the request, before it runs).
# After each: the worker's pid is alive and a good request (predict with
# the classifier) gives the same values as before the hostile input.
#
# Prints "hostile: N passed, M failed"; exits 1 on any failure.  Every
# worker it starts is killed by pid on exit.
set -u
cd "$(dirname "$0")/../.." || exit 1
SHARED=${SHARED:-../shared}
DATA=$SHARED/data/ocr
TIMEOUT_MS=${OCR_TIMEOUT_MS:-120000}

# shellcheck source=tests/integration/testlib.sh
. tests/integration/testlib.sh
TESTLIB_FAIL_BYTES=2000
require_bins hostile "$WORKER" "$CLIENT"

CLS=ch_ppocr_mobile_v2.0_cls_infer.onnx
DET=ch_PP-OCRv4_det_infer.onnx
GOOD=$DATA/p05_street_sign.jpg
H=$tmp/hostile
mkdir -p "$H/models"

# --- the hostile files, made from real ones --------------------------------
python3 - "$H" "$GOOD" "$MODEL_DIR/$CLS" <<'PY'
import struct, sys, zlib
out, jpeg, cls = sys.argv[1], sys.argv[2], sys.argv[3]

def chunk(kind, body):
    return (struct.pack('>I', len(body)) + kind + body +
            struct.pack('>I', zlib.crc32(kind + body) & 0xffffffff))

# PNG: IHDR 100000 x 100000, 8-bit RGB; one row of IDAT
ihdr = struct.pack('>IIBBBBB', 100000, 100000, 8, 2, 0, 0, 0)
idat = zlib.compress(b'\x00' + b'\x7f' * 300000)
with open(out + '/bomb_100000x100000.png', 'wb') as f:
    f.write(b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', ihdr) + chunk(b'IDAT', idat) +
            chunk(b'IEND', b''))

# JPEG: the real file with its SOF0 frame size set to N x N
for side in (65500, 65535):
    d = bytearray(open(jpeg, 'rb').read())
    i = 2
    while True:
        assert d[i] == 0xff, 'no marker at %d' % i
        marker, seglen = d[i + 1], struct.unpack('>H', d[i + 2:i + 4])[0]
        if marker in (0xc0, 0xc1, 0xc2):
            d[i + 5:i + 9] = struct.pack('>HH', side, side)
            break
        i += 2 + seglen
    open(out + '/bomb_%dx%d.jpg' % (side, side), 'wb').write(bytes(d))
open(out + '/zero_bytes.png', 'wb').write(b'')

# models: an operator the engine lacks (the first Conv node's op_type,
# field 4 of NodeProto, becomes Loop), half the file, an empty file
m = open(cls, 'rb').read()
k = m.find(b'\x22\x04Conv')
assert k > 0
open(out + '/models/unknown_op.onnx', 'wb').write(m[:k] + b'\x22\x04Loop' + m[k + 6:])
open(out + '/models/truncated.onnx', 'wb').write(m[:len(m) // 2])
open(out + '/models/empty.onnx', 'wb').write(b'')
open(out + '/models/' + 'cls.onnx', 'wb').write(m)
PY
cp "$MODEL_DIR/$DET" "$H/models/det.onnx"
printf 'word %.0s' $(seq 1000) >"$H/long.txt" # 5000 bytes
printf 'how do I vacuum a table?' >"$H/short.txt"

# row_values OUT ROW: the values= of ROW in a worker-client RESULT.
row_values() { sed -n "s/^ROW $2 id=[0-9]* ok=1 .*values=\([^ ]*\).*/\1/p" <<<"$1"; }

# still_serves NAME PID C... : the worker PID is alive and a predict with
# the classifier (model file $GOOD_MODEL) gives $GOOD_VALUES.
still_serves() {
	local name=$1 pid=$2 out
	shift 2
	out=$("$@" --timeout-ms "$TIMEOUT_MS" --input-size 48x192 --all-values \
		predict "$GOOD_MODEL" "$GOOD")
	if kill -0 "$pid" 2>/dev/null && [ -n "$GOOD_VALUES" ] &&
		[ "$(row_values "$out" 0)" = "$GOOD_VALUES" ]; then
		pass "... $name: the worker runs on and answers a good request right"
	else
		fail "... $name: the worker runs on and answers a good request right" \
			"alive=$(kill -0 "$pid" 2>/dev/null && echo yes || echo no) $out"
	fi
}

# --- worker A: the real models, --max-text-bytes 4096 ------------------------
start_worker "$tmp/a.log" --model-dir "$MODEL_DIR" --max-text-bytes 4096 || exit 1
A_PID=$WPID
A=("$CLIENT" --endpoint "$EP")
check "worker A logs its text limit" "$(cat "$tmp/a.log")" 'INFO longest text row: 4096 bytes'
out=$("$WORKER" --listen tcp://127.0.0.1:1 --model-dir "$MODEL_DIR" --max-text-bytes 0 2>&1)
check "--max-text-bytes 0 is refused (exit 2)" "$out rc=$?" 'rc=2' 'max-text-bytes must be a positive integer'

# decompression bombs first, so that the peak RSS is the bombs' alone
for bomb in bomb_100000x100000.png bomb_65500x65500.jpg bomb_65535x65535.jpg; do
	out=$("${A[@]}" --timeout-ms "$TIMEOUT_MS" ocr "$H/$bomb")
	case $bomb in
		*.png) want='PNG declares 100000x100000 pixels \(10000000000\), over the limit of 50000000 pixels' ;;
		*65500*) want='JPEG declares 65500x65500 pixels \(4290250000\), over the limit of 50000000 pixels' ;;
		*) want='JPEG declares a side over libjpeg.s limit: Maximum supported image dimension is 65500 pixels' ;;
	esac
	check "$bomb: 54000, refused from its header" "$out" '^RESULT rows=1' \
		'^ROW 0 id=100 ok=0 sqlstate=54000 message=image is larger than the limit of 50000000 pixels' \
		"detail=$want"
done
rss=$(awk '/VmHWM/ {print $2}' "/proc/$A_PID/status")
if [ "${rss:-999999}" -lt 102400 ]; then
	pass "... the worker's peak RSS stays under 100 MB (${rss} kB; decoded, the PNG is 30 GB)"
else
	fail "... the worker's peak RSS stays under 100 MB" "VmHWM ${rss} kB"
fi
GOOD_MODEL=$CLS
GOOD_VALUES=$(row_values "$("${A[@]}" --timeout-ms "$TIMEOUT_MS" --input-size 48x192 --all-values \
	predict "$CLS" "$GOOD")" 0)
check "the good request: two scores for p05_street_sign.jpg" "$GOOD_VALUES" \
	'^[0-9.e-]+,[0-9.e-]+$'
still_serves "after the bombs" "$A_PID" "${A[@]}"

# a bomb in a batch fails alone; CMYK and 16-bit rows are read
out=$("${A[@]}" --timeout-ms "$TIMEOUT_MS" ocr "$DATA/p29_market_flyer_cmyk.jpg" \
	"$H/bomb_65500x65500.jpg" "$DATA/p22_kjv_page.png" "$H/zero_bytes.png")
check "OCR batch: CMYK JPEG and 16-bit gray PNG read; the bomb and the empty row fail alone" \
	"$out" '^RESULT rows=4' \
	'^ROW 0 id=100 ok=1 .*text=.*Farmers Market' \
	'^ROW 1 id=101 ok=0 sqlstate=54000 ' \
	'^ROW 2 id=102 ok=1 .*text=.*generation' \
	'^ROW 3 id=103 ok=0 sqlstate=22P03 message=invalid image: not an image'
out=$("${A[@]}" --timeout-ms "$TIMEOUT_MS" --input-size 48x192 predict "$CLS" "$H/zero_bytes.png")
check "zero-byte input: 22P03 not an image" "$out" \
	'^ROW 0 id=100 ok=0 sqlstate=22P03 message=invalid image: not an image .*detail=.*empty input'
still_serves "after CMYK, 16-bit and zero-byte rows" "$A_PID" "${A[@]}"

# protocol messages whose lengths lie
check "a header field declaring 200 bytes with 3 present: 08P01 malformed" \
	"$("${A[@]}" garbage)" '^ERROR sqlstate=08P01 message=malformed'
check "one row id, 3 payload frames: 08P01" "$("${A[@]}" frames 3)" \
	'^ERROR sqlstate=08P01 message=.*3 payload frames, expected 1'
check "one row id, no payload frame: 08P01" "$("${A[@]}" frames 0)" \
	'^ERROR sqlstate=08P01 message=.*0 payload frames, expected 1'
check "a header naming 70000 rows with none sent: 54000" "$("${A[@]}" bulk 70000 0 0)" \
	'^ERROR sqlstate=54000 message=.*70000 rows, more than the 65536'
still_serves "after the lying messages" "$A_PID" "${A[@]}"

# a text over --max-text-bytes fails alone, before tokenizing
if [ -f "$MODEL_DIR/minilm/model.onnx" ]; then
	out=$("${A[@]}" --timeout-ms "$TIMEOUT_MS" embed minilm/model.onnx "$H/long.txt" "$H/short.txt")
	check "a 5000-byte text over --max-text-bytes 4096: 54000, the other row embedded" "$out" \
		'^ROW 0 id=100 ok=0 sqlstate=54000 message=text of 5000 bytes is longer than the worker.s limit of 4096 bytes' \
		'hint=Split the text, or raise the worker.s --max-text-bytes' \
		'^ROW 1 id=101 ok=1 n_values=384 '
	still_serves "after the long text" "$A_PID" "${A[@]}"
else
	fail "the text limit: $MODEL_DIR/minilm/model.onnx is missing (make models)"
fi

# --- worker B: the hostile models, --gpu-memory 2M ---------------------------
start_worker "$tmp/b.log" --model-dir "$H/models" --gpu-memory 2M || exit 1
B_PID=$WPID
B=("$CLIENT" --endpoint "$EP")
GOOD_MODEL=cls.onnx
still_serves "B before the hostile models" "$B_PID" "${B[@]}"
for m in unknown_op.onnx truncated.onnx empty.onnx; do
	case $m in
		unknown_op.onnx) st=0A000 want="unsupported operator 'Loop' \\(node 'Conv@0'\\)"
			hint='hint=Export the model without it' ;;
		truncated.onnx) st=XX001 want='not an ONNX model \(the bytes do not parse as a ModelProto\)'
			hint='hint=Check the file with onnx\.checker\.check_model\(model, full_check=True\), which names what is wrong' ;;
		*) st=XX001 want='not an ONNX model \(no graph\)'
			hint='hint=Check the file with onnx\.checker\.check_model\(model, full_check=True\), which names what is wrong' ;;
	esac
	out=$("${B[@]}" --timeout-ms "$TIMEOUT_MS" --input-size 48x192 predict "$m" "$GOOD")
	check "$m: $st naming the file (once) and the cause, with a hint" "$out" \
		"^ERROR sqlstate=$st message=could not load model file \"$m\": [^']*$want" "$hint"
	check "... also on MSG_LOAD_MODEL" "$("${B[@]}" --timeout-ms "$TIMEOUT_MS" load "$m")" \
		"^ERROR sqlstate=$st message=could not load model file \"$m\": .*$want"
	still_serves "after $m" "$B_PID" "${B[@]}"
done
check "a model larger than --gpu-memory 2M: 53200 naming its size and the cap" "$("${B[@]}" \
	--timeout-ms "$TIMEOUT_MS" --input-size 48x192 predict det.onnx "$GOOD")" \
	'^ERROR sqlstate=53200 message=model "det\.onnx" needs 4745517 bytes, more than the 2097152 bytes this worker may hold' \
	'hint=Start the worker with a larger --gpu-memory'
check "... also on MSG_LOAD_MODEL, and it is not resident" \
	"$("${B[@]}" load det.onnx) $("${B[@]}" ping)" '^ERROR sqlstate=53200 ' \
	'PONG .*resident=cls\.onnx request_id'
still_serves "after the model over the cap" "$B_PID" "${B[@]}"
# --- worker C: the real models, --max-tensor-bytes 8M ------------------------
# OCR's detector input for a small page (resized up to 1792x736) is over
# the limit: 54000 for the row, from the pipeline's own tensor, naming it;
# a model registered at 2048x2048 fails the request before it runs.
start_worker "$tmp/c.log" --model-dir "$MODEL_DIR" --max-tensor-bytes 8M || exit 1
C_PID=$WPID
C=("$CLIENT" --endpoint "$EP")
out=$("${C[@]}" --timeout-ms "$TIMEOUT_MS" ocr "$DATA/p21_curl_desc_small.png")
check "OCR's detector input over --max-tensor-bytes: 54000 for the row, naming the tensor and the limit, with a hint" "$out" \
	'^ROW 0 id=100 ok=0 sqlstate=54000 message=OCR failed \| detail=text detection: a 1792x736 input: over the tensor limit: a float tensor of shape \[1, 3, 736, 1792\] is 15826944 bytes, more than the 8388608 bytes a tensor may take \| hint=Start the worker with a larger --max-tensor-bytes'
out=$("${C[@]}" --timeout-ms "$TIMEOUT_MS" --input-size 2048x2048 predict "$DET" "$GOOD")
check "a model's fixed input over it: 54000 for the request, before the model runs" "$out" \
	"^ERROR sqlstate=54000 message=model \"$DET\"'s 2048x2048 input is larger than the worker allows: a float tensor of shape \[1, 3, 2048, 2048\] is 50331648 bytes"
GOOD_MODEL_C=$GOOD_MODEL
GOOD_MODEL=$CLS
still_serves "C after the tensor limit" "$C_PID" "${C[@]}"
GOOD_MODEL=$GOOD_MODEL_C
check_not "no worker logged a crash or an abort" "$(cat "$tmp/a.log" "$tmp/b.log" "$tmp/c.log")" \
	'Segmentation|Aborted|AddressSanitizer|runtime error'

for p in "${workers[@]}"; do
	testenv_stop_pid "$p" TERM
done
echo "hostile: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
