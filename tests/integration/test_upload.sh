#!/usr/bin/env bash
# test_upload.sh: process-level test of model-directory confinement and of
# model files uploaded from the database (issue 7 "Security";
# docs/security.md "Model files" and "Uploaded models").
#
# Two real infer-workers on 127.0.0.1, each over a model directory of its
# own under $tmp, and a real PostgreSQL with pg_infer (tools/testenv.sh):
#   - worker a's directory holds a copy of the PP-OCR direction classifier,
#     a symbolic link to it (inside), and a symbolic link to the same real
#     model outside the directory: a model on the inside link answers as
#     the file does (0,180 on an upright and a rotated line); one on the
#     outside link is refused (22023) with a message naming the file, the
#     model and --model-dir;
#   - infer.upload_model: a role with infer_user only gets "permission
#     denied" (42501), and cannot read the stored bytes; a wrong SHA-256
#     is refused (XX001) and nothing is stored; a name with ".." is refused
#     (22023); infer_admin uploads the real model with its sha256sum: the
#     function returns that digest, worker a holds the bytes under
#     .uploaded/<sha256>.onnx, and a model registered on the uploaded name
#     (a file that is not in any model directory) gives exactly the floats
#     of the same model loaded from the directory (infer.predict);
#   - infer.add_worker sends the uploaded files to a new worker (b); a byte
#     of b's stored copy changed on disk is refused by b (XX001, "SHA-256
#     mismatch"); infer.push_models('b') repairs it; a worker that is not
#     up when added gets a WARNING naming infer.push_models;
#   - an OCR request naming one file as two versions (digests, precisions)
#     is refused (22023) and the worker lives (it was a use-after-free);
#     "./up//./d.onnx" is kept as up/d.onnx by upload_model and create_model;
#     --no-uploads and --max-upload-bytes refuse with hints, the store is
#     0700/0600; a file over --max-message-bytes gets a hint naming it; a
#     dead worker costs one infer.timeout, not one a file, and push_models()
#     goes on past it; pings are answered during a 200 MiB upload.
#
# Prints "upload: N passed, M failed"; exits 1 on any failure.  Every
# process it starts is stopped by pid on every exit path.
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$(pwd)

# shellcheck source=tests/integration/testlib.sh
. tests/integration/testlib.sh
require_bins upload "$WORKER" "$CLIENT"
case $WORKER in /*) ;; *) WORKER=$ROOT/$WORKER ;; esac
MODEL_DIR=$(cd "$MODEL_DIR" && pwd)
REGRESS_DATA=$ROOT/tests/regress/data
PSQL=$TESTENV_PG_BIN/psql
CLS_FILE=ch_ppocr_mobile_v2.0_cls_infer.onnx
CLS=$MODEL_DIR/$CLS_FILE

use_cluster_cleanup

# q ARGS...: psql on the test database, unaligned, no headers, errors with
# their SQLSTATE (VERBOSITY verbose) on stdout too.
q() {
	"$PSQL" -X -q -At -v VERBOSITY=verbose "$@" 2>&1
}

if [ ! -r "$CLS" ]; then
	echo "missing $CLS (make models)"
	echo "upload: 0 passed, 1 failed"
	exit 1
fi
SHA=$(sha256sum "$CLS" | cut -c1-64)

# --- model directories ------------------------------------------------------------
A=$tmp/models_a
B=$tmp/models_b
OUT=$tmp/outside
mkdir -p "$A" "$B" "$OUT"
cp "$CLS" "$A/$CLS_FILE"
cp "$CLS" "$OUT/cls.onnx"
ln -s "$CLS_FILE" "$A/in_link.onnx"
ln -s "$OUT/cls.onnx" "$A/out_link.onnx"
ln -s ../outside "$A/outdir"

start_worker "$tmp/a.log" --model-dir "$A" || exit 1
EPA=$EP
disown "$WPID"
start_worker "$tmp/b.log" --model-dir "$B" || exit 1
EPB=$EP
disown "$WPID"

if ! testenv_start_cluster "$tmp/pg" >"$tmp/cluster.log" 2>&1; then
	cat "$tmp/cluster.log"
	echo "upload: $passed passed, $failed failed"
	exit 1
fi
# the server's user reads the model (pg_read_binary_file) as a client
# would send it
out=$(q -v ON_ERROR_STOP=1 <<EOF
CREATE EXTENSION pg_infer;
CREATE TABLE img (n int, data bytea);
INSERT INTO img VALUES (1, pg_read_binary_file('$REGRESS_DATA/line_upright.png')),
					   (2, pg_read_binary_file('$REGRESS_DATA/line_rot180.png'));
CREATE TABLE model_bytes (data bytea);
INSERT INTO model_bytes VALUES (pg_read_binary_file('$CLS'));
CREATE ROLE app LOGIN;
GRANT infer_user TO app;
CREATE ROLE ops LOGIN;
GRANT infer_admin TO ops;
GRANT SELECT ON img, model_bytes TO app, ops;
SELECT infer.add_worker('a', '$EPA');
EOF
)
check "setup" "$out" '^$'
# create_model with the PP-OCR classifier's settings on FILE as NAME
cls_model() {
	echo "SELECT infer.create_model('$1', '$2', 'classify', input_height => 48,
		input_width => 192, mean => '{0.5,0.5,0.5}', std => '{0.5,0.5,0.5}',
		labels => '{0,180}')"
}
classify() {
	echo "SELECT string_agg(infer.classify('$1', data), ',' ORDER BY n) FROM img"
}
T="SET infer.timeout = 20000"

# --- symbolic links ----------------------------------------------------------------
out=$(q -c "$T" -c "$(classify ppocr_cls)")
check "the model from worker a's directory: 0,180" "$out" '^0,180$'
q -c "$(cls_model cls_in in_link.onnx)" -c "$(cls_model cls_out out_link.onnx)" \
	-c "$(cls_model cls_outdir outdir/cls.onnx)" >/dev/null
out=$(q -c "$T" -c "$(classify cls_in)")
check "a symbolic link inside the model directory to a file inside: accepted, 0,180" "$out" '^0,180$'
out=$(q -c "$T" -c "$(classify cls_out)")
check "a symbolic link to the same real model outside: refused (22023), naming file, model and --model-dir" \
	"$out" '22023' 'model file "out_link\.onnx" of model "cls_out" resolves outside the model directory' \
	'\(--model-dir\)'
check_not "... without telling where the link leads" "$out" "$OUT"
out=$(q -c "$T" -c "$(classify cls_outdir)")
check "a folder link out of the model directory: refused (22023)" "$out" \
	'22023' 'model file "outdir/cls\.onnx" of model "cls_outdir" resolves outside'
check "the worker logs the refusal with the real target" "$(cat "$tmp/a.log")" \
	"refused model file \"out_link\.onnx\": it resolves to \"$OUT/cls\.onnx\""

# --- who may upload -----------------------------------------------------------------
out=$(q -U app -c "SELECT infer.upload_model('x.onnx', data) FROM model_bytes")
check "infer_user cannot upload: permission denied (42501)" "$out" \
	'42501: permission denied for function upload_model'
out=$(q -U app -c "SELECT infer.push_models()")
check "infer_user cannot push: permission denied (42501)" "$out" \
	'42501: permission denied for function push_models'
out=$(q -U app -c "SELECT length(data) FROM infer.model_files")
check "infer_user cannot read the stored bytes" "$out" \
	'42501: permission denied for table model_files'
out=$(q -U app -c "SELECT count(file), count(sha256) FROM infer.model_files")
check "... but may read the names and digests (none yet)" "$out" '^0\|0$'

# --- refused uploads ----------------------------------------------------------------
out=$(q -U ops -c "SELECT infer.upload_model('up/cls.onnx', data, repeat('ab', 32)) FROM model_bytes")
check "a wrong SHA-256 is refused (XX001) with both digests and a hint" "$out" \
	'XX001: bytes of uploaded model file "up/cls\.onnx" do not match the given SHA-256' \
	"have SHA-256 $SHA, not (ab){32}" 'HINT: .*sha256sum'
out=$(q -U ops -c "SELECT infer.upload_model('up/cls.onnx', data, 'xyz') FROM model_bytes")
check "a malformed SHA-256 is refused (22023)" "$out" '22023: invalid SHA-256 "xyz"'
out=$(q -U ops -c "SELECT infer.upload_model('../cls.onnx', data) FROM model_bytes")
check "a name with .. is refused (22023)" "$out" \
	'22023: uploaded model file "\.\./cls\.onnx" is outside the model directory'
out=$(q -U ops -c "SELECT infer.upload_model('/tmp/cls.onnx', data) FROM model_bytes")
check "an absolute name is refused (22023)" "$out" '22023: .* is outside the model directory'
out=$(q -c "SELECT count(*) FROM infer.model_files")
check "nothing was stored" "$out" '^0$'
if [ ! -e "$A/.uploaded" ]; then pass "... nor sent to worker a"; else fail "... nor sent to worker a" "$(ls -la "$A/.uploaded")"; fi

# --- upload, and use ----------------------------------------------------------------
out=$(q -U ops -c "SELECT infer.upload_model('up/cls.onnx', data, upper('$SHA')) FROM model_bytes")
check "infer_admin uploads the model with its sha256sum: returns the digest" "$out" "^$SHA\$"
if cmp -s "$CLS" "$A/.uploaded/$SHA.onnx"; then
	pass "worker a holds the bytes as .uploaded/<sha256>.onnx"
else
	fail "worker a holds the bytes as .uploaded/<sha256>.onnx" "$(ls -la "$A" "$A/.uploaded" 2>&1)"
fi
check "... and nothing else there (no temporary file)" "$(ls -A "$A/.uploaded")" "^$SHA\\.onnx\$"
out=$(q -c "SELECT file, encode(sha256, 'hex'), length(data) FROM infer.model_files")
check "infer.model_files keeps name, digest and bytes" "$out" \
	"^up/cls\\.onnx\\|$SHA\\|$(stat -c %s "$CLS")\$"
out=$(q -U ops -c "$(cls_model cls_up up/cls.onnx)")
check "infer_admin registers a model on the uploaded file" "$out" '^$'
out=$(q -U app -c "$T" -c "$(classify cls_up)")
check "the uploaded model answers 0,180" "$out" '^0,180$'
out=$(q -U app -c "$T" -c "SELECT count(*), bool_and(infer.predict('cls_up', data) = infer.predict('ppocr_cls', data)),
	bool_and(cardinality(infer.predict('cls_up', data)) = 2) FROM img")
check "... with exactly the floats of the same model loaded from the directory" "$out" '^2\|t\|t$'
if [ ! -e "$A/up" ]; then pass "... with no file up/cls.onnx in the model directory"; else fail "up/ exists in worker a's directory"; fi
check "worker a loaded it from the uploaded bytes" "$(cat "$tmp/a.log")" 'stored uploaded model file "up/cls\.onnx"' \
	'loaded model "up/cls\.onnx"'
# a request without the digest (a model registered on that name without an
# upload, as another database sharing the worker has it) means the file on
# disk, which is not there: never the uploaded copy that is resident
out=$("$CLIENT" --endpoint "$EPA" --timeout-ms 20000 --input-size 48x192 \
	predict up/cls.onnx "$REGRESS_DATA/line_upright.png")
check "... a request for up/cls.onnx without its digest: 58P01, not the resident uploaded copy" \
	"$out" '^ERROR sqlstate=58P01 message=model file "up/cls\.onnx" .*not found in model directory'

# --- a worker added later, a tampered copy --------------------------------------------
out=$(q -U ops -c "SELECT infer.add_worker('b', '$EPB')")
check "add_worker b: no warning" "$out" '^$'
if cmp -s "$CLS" "$B/.uploaded/$SHA.onnx"; then
	pass "add_worker sends the uploaded files to the new worker"
else
	fail "add_worker sends the uploaded files to the new worker" "$(ls -la "$B" 2>&1; tail -5 "$tmp/b.log")"
fi
# change one byte in the middle of b's stored copy, then run on b only
size=$(stat -c %s "$B/.uploaded/$SHA.onnx")
printf '\x5a' | dd of="$B/.uploaded/$SHA.onnx" bs=1 seek=$((size / 2)) conv=notrunc status=none
if ! cmp -s "$CLS" "$B/.uploaded/$SHA.onnx"; then pass "tampered with b's copy"; else fail "tampered with b's copy"; fi
q -U ops -c "SELECT infer.drop_worker('a')" >/dev/null
out=$(q -U app -c "$T" -c "$(classify cls_up)")
check "worker b refuses the tampered copy: XX001, SHA-256 mismatch naming file and copy" "$out" \
	'XX001' "SHA-256 mismatch: the uploaded copy \"\\.uploaded/$SHA\\.onnx\" of model file \"up/cls\\.onnx\"" \
	"registration says $SHA"
out=$(q -U ops -c "SELECT infer.push_models('b')")
check "push_models('b') sends the one file again" "$out" '^1$'
out=$(q -U app -c "$T" -c "$(classify cls_up)")
check "... and b answers 0,180 again" "$out" '^0,180$'
out=$(q -U ops -c "SELECT infer.push_models('nobody')")
check "push_models of an unknown worker: 42704" "$out" '42704: inference worker "nobody" does not exist'

# a worker that is not up when added: a WARNING, the registration stays
DEAD=tcp://127.0.0.1:$(testenv_free_port)
out=$(q -U ops -c "SET infer.timeout = 500" -c "SELECT infer.add_worker('c', '$DEAD')" \
	-c "SELECT count(*) FROM infer.worker_registry WHERE name = 'c'")
check "add_worker of a worker that is down: WARNING with a hint, worker registered" "$out" \
	'WARNING: +01000: uploaded model file "up/cls\.onnx" was not sent to inference worker "c"' \
	"HINT: +Send it once the worker is up with infer.push_models\\('c'\\)" '^1$'

# --- two versions of one file in one OCR request ---------------------------------------
# (before: the second lookup reloaded the file and freed the model the OCR
# plan held: a use-after-free in the worker)
DET=$MODEL_DIR/ch_PP-OCRv4_det_infer.onnx
REC_FILE=ch_PP-OCRv4_rec_infer.onnx
DET_SHA=$(sha256sum "$DET" | cut -c1-64)
U=$tmp/models_u
mkdir -p "$U"
cp "$CLS" "$U/x.onnx"
cp "$MODEL_DIR/$REC_FILE" "$MODEL_DIR/ppocr_keys_v1.txt" "$U/"
start_worker "$tmp/u.log" --model-dir "$U" || exit 1
EPU=$EP
WPID_U=$WPID
disown "$WPID"
q -v ON_ERROR_STOP=1 -c "SELECT infer.add_worker('u', '$EPU')" \
	-c "INSERT INTO model_bytes VALUES (pg_read_binary_file('$DET'))" >/dev/null
out=$(q -U ops -c "SELECT infer.upload_model('x.onnx', data) FROM model_bytes WHERE length(data) = $(stat -c %s "$DET")")
check "x.onnx uploaded with the detector's bytes (the file on disk is the classifier)" "$out" "^$DET_SHA\$"
out=$("$CLIENT" --endpoint "$EPU" --timeout-ms 30000 --ocr-models "x.onnx,./x.onnx,$REC_FILE,ppocr_keys_v1.txt" \
	--ocr-sha256 "$DET_SHA,-,-" ocr "$REGRESS_DATA/line_upright.png")
check "OCR naming x.onnx with the upload's digest and ./x.onnx without: 22023 naming both, before any load" "$out" \
	'^ERROR sqlstate=22023 message=models "x\.onnx" and "\./x\.onnx" name the same model file "\./x\.onnx" but different versions of it'
SHA_CLS_DISK=$(sha256sum "$U/x.onnx" | cut -c1-64)
out=$("$CLIENT" --endpoint "$EPU" --timeout-ms 30000 --ocr-models "x.onnx,.//x.onnx,$REC_FILE,ppocr_keys_v1.txt" \
	--ocr-sha256 "$DET_SHA,$SHA_CLS_DISK,-" ocr "$REGRESS_DATA/line_upright.png")
check "... and with two different digests: 22023" "$out" '^ERROR sqlstate=22023 .*different versions of it'
out=$(q -c "SELECT infer.create_model('detx', 'x.onnx', 'detect_text')" -c "$(cls_model clsx ./x.onnx)" \
	-c "UPDATE infer.model_registry SET compute_precision = 'fp16' WHERE name = 'clsx'" \
	-c "SET infer.timeout = 30000" -c "SET infer.ocr_detector = 'detx'" -c "SET infer.ocr_classifier = 'clsx'" \
	-c "SELECT infer.ocr(data) FROM img WHERE n = 1")
check "SQL: OCR whose detector and classifier are x.onnx at two precisions: 22023" "$out" \
	'22023: .*models "detx" and "clsx" name the same model file "x\.onnx" but different versions'
out=$("$CLIENT" --endpoint "$EPU" --timeout-ms 30000 --ocr-models "x.onnx,none,$REC_FILE,ppocr_keys_v1.txt" \
	--ocr-sha256 "$DET_SHA,-,-" ocr "$REGRESS_DATA/line_upright.png")
if kill -0 "$WPID_U" 2>/dev/null; then pass "worker u is alive"; else fail "worker u died" "$(tail -20 "$tmp/u.log")"; fi
check "... and still runs OCR with the uploaded detector" "$out" '^ROW 0 id=100 ok=1'
q -c "SELECT infer.drop_model('detx'), infer.drop_model('clsx')" >/dev/null

# --- one spelling per file ----------------------------------------------------------------
out=$(q -U ops -c "SELECT infer.upload_model('./up//./d.onnx', data) FROM model_bytes WHERE length(data) = $(stat -c %s "$DET")" \
	-c "SELECT file FROM infer.model_files WHERE file LIKE '%d.onnx'")
check "upload_model('./up//./d.onnx') keeps the file as up/d.onnx" "$out" "^$DET_SHA\$" '^up/d\.onnx$'
out=$(q -U ops -c "SELECT infer.create_model('dm', './up/d.onnx', 'raw', input_height => 32, input_width => 64)" \
	-c "SELECT file FROM infer.model_registry WHERE name = 'dm'" \
	-c "$T" -c "SELECT cardinality(infer.predict('dm', data)) FROM img WHERE n = 1")
check "create_model('./up/d.onnx') keeps up/d.onnx, whose upload it runs (32x64 outputs)" "$out" '^up/d\.onnx$' '^2048$'
out=$(q -U ops -c "SELECT infer.upload_model('./.', data) FROM model_bytes LIMIT 1")
check "a name that is only ./ is refused (22023)" "$out" '22023: uploaded model file "\./\." names no file'

# --- workers that refuse or limit uploads ----------------------------------------------
N=$tmp/models_n
L=$tmp/models_l
mkdir -p "$N" "$L"
start_worker "$tmp/n.log" --model-dir "$N" --no-uploads || exit 1
EPN=$EP
disown "$WPID"
start_worker "$tmp/l.log" --model-dir "$L" --max-upload-bytes 1M || exit 1
EPL=$EP
disown "$WPID"
out=$(q -U ops -c "SELECT infer.add_worker('n', '$EPN')")
check "a worker started with --no-uploads refuses uploads, with a hint" "$out" \
	'WARNING: .*uploaded model file "up/cls\.onnx" was not sent to inference worker "n": .*this worker takes no uploaded models \(--no-uploads\)' \
	'HINT: +Copy the file into the worker.s --model-dir instead'
if [ ! -e "$N/.uploaded" ]; then pass "... and stores nothing"; else fail "... and stores nothing" "$(ls -la "$N/.uploaded")"; fi
out=$(q -U ops -c "SELECT infer.add_worker('l', '$EPL')")
check "--max-upload-bytes 1M: the classifier (585532 bytes) fits, the detector does not: refused naming the limit" "$out" \
	'WARNING: .*uploaded model file "up/d\.onnx" was not sent to inference worker "l": .*\(4745517 bytes\) does not fit: the uploaded models hold 585532 bytes of the 1048576 this worker keeps \(--max-upload-bytes\)' \
	'HINT: +Remove unused files'
check_not "... the classifier was sent" "$out" 'up/cls\.onnx'
check "the store folder is 0700, its files 0600" "$(stat -c '%a %n' "$L/.uploaded" "$L/.uploaded/"*)" \
	"^700 $L/\\.uploaded\$" "^600 $L/\\.uploaded/$SHA\\.onnx\$"
printf 'uploads = off\nmax-upload-bytes = 2G\n' >"$tmp/w.conf"
out=$("$WORKER" --config "$tmp/w.conf" --print-config 2>&1)
check "uploads and max-upload-bytes are configuration keys" "$out" '^uploads = off$' '^max-upload-bytes = 2G$'
q -c "SELECT infer.drop_worker('n'), infer.drop_worker('l'), infer.drop_worker('u')" >/dev/null

# --- a worker that drops messages over its --max-message-bytes -------------------------------
S=$tmp/models_s
mkdir -p "$S"
start_worker "$tmp/s.log" --model-dir "$S" --max-message-bytes 100000 || exit 1
EPS=$EP
disown "$WPID"
out=$(q -U ops -c "SET infer.timeout = 5000" -c "SELECT infer.add_worker('s', '$EPS')")
check "a file over the worker's --max-message-bytes: the hint names that limit and the size" "$out" \
	'uploaded model file "up/cls\.onnx" was not sent to inference worker "s"' \
	'HINT: +The file has 585532 bytes: a worker drops a message larger than its --max-message-bytes'
check_not "... not 'once the worker is up'" "$out" 'once the worker is up'
q -c "SELECT infer.drop_worker('s')" >/dev/null

# --- dead workers cost one infer.timeout each, not one a file ------------------------------------
nfiles=$(q -c "SELECT count(*) FROM infer.model_files")
DEAD2=tcp://127.0.0.1:$(testenv_free_port)
t0=$(date +%s%N)
out=$(q -U ops -c "SET infer.timeout = 1000" -c "SELECT infer.add_worker('d2', '$DEAD2')")
ms=$(ms_since "$t0")
check "add_worker of a dead worker with $nfiles files: one WARNING naming them all" "$out" \
	"WARNING: .*$nfiles uploaded model files \\(\"up/cls\\.onnx\", \"up/d\\.onnx\", \"x\\.onnx\"\\) were not sent to inference worker \"d2\"" \
	"HINT: +Send them once the worker is up with infer.push_models\\('d2'\\)"
check "... exactly one" "$(grep -c WARNING <<<"$out")" '^1$'
if [ "$ms" -lt 2500 ]; then pass "... in one infer.timeout ($ms ms < 2500)"; else fail "... in one infer.timeout" "$ms ms"; fi
t0=$(date +%s%N)
out=$(q -U ops -c "SET infer.timeout = 1000" -c "SELECT infer.push_models()")
ms=$(ms_since "$t0")
check "push_models() with dead workers c and d2: WARNINGs, and the $nfiles files reach b" "$out" \
	'WARNING: .*not sent to inference worker "c"' 'WARNING: .*not sent to inference worker "d2"' "^$nfiles\$"
if [ "$ms" -lt 4000 ]; then pass "... in one infer.timeout a dead worker ($ms ms < 4000)"; else fail "... in one infer.timeout a dead worker" "$ms ms"; fi
out=$(q -U ops -c "SET infer.timeout = 1000" -c "SELECT infer.push_models('d2')")
check "push_models('d2') of the dead worker alone: its error" "$out" '08006: could not connect to inference worker "d2"'
q -c "SELECT infer.drop_worker('c'), infer.drop_worker('d2')" >/dev/null

# --- the worker answers pings while it stores a large upload -------------------------------------
P=$tmp/models_p
mkdir -p "$P"
start_worker "$tmp/p.log" --model-dir "$P" || exit 1
EPP=$EP
disown "$WPID"
q -c "SELECT infer.drop_worker('b')" -c "SELECT infer.add_worker('p', '$EPP')" >/dev/null
head -c $((200 << 20)) /dev/urandom >"$tmp/big.onnx"
BIG_SHA=$(sha256sum "$tmp/big.onnx" | cut -c1-64)
q -c "SET infer.timeout = 60000" -c "SELECT infer.upload_model('big.onnx', pg_read_binary_file('$tmp/big.onnx'))" \
	>"$tmp/big.out" 2>&1 &
UPID=$!
pids+=("$UPID")
worst=0
npings=0
while kill -0 "$UPID" 2>/dev/null; do
	t0=$(date +%s%N)
	"$CLIENT" --endpoint "$EPP" --timeout-ms 5000 ping | grep -q '^PONG ' || worst=99999
	ms=$(ms_since "$t0")
	[ "$ms" -gt "$worst" ] && worst=$ms
	npings=$((npings + 1))
done
wait "$UPID"
q -c "SELECT 1" >/dev/null
check "the 200 MiB upload reached worker p" "$(cat "$tmp/big.out"; cat "$tmp/p.log")" "^$BIG_SHA\$" 'stored uploaded model file "big\.onnx"'
if [ "$worst" -lt 400 ]; then
	pass "pings answered within 400 ms during the upload (worst $worst ms of $npings)"
else
	fail "pings answered within 400 ms during the upload" "worst $worst ms of $npings"
fi
rm -f "$tmp/big.onnx"

echo "upload: $passed passed, $failed failed"
[ "$failed" = 0 ]
