#!/usr/bin/env bash
# test_user_models.sh: a user's own ONNX image models (infer.create_model,
# task raw), batched.  A real PostgreSQL with pg_infer and one real
# infer-worker (CPU) on 127.0.0.1 over a model directory of small models
# that make_user_models.py writes with onnx.helper, and 25 real images of
# ../shared/data/ocr.  For each model, infer.predict over the 25 rows in
# batches (infer.batch_size 3, 7 and the default: batches of 1, 2, 4, 3,
# 7, ..., so that the worker's batch tensor, whose room doubles, holds
# fewer rows than it has room for) gives, row by row, what the same call
# gives one row at a time (infer.enable_batching = off), within 1e-5:
#   (b) first_identity, first_concat (operators that copy their input
#       whole: the worker exited on a heap corruption), mlp (Flatten
#       first: "reshape changes the size"), batch_transpose (output
#       [3, N, 1, 1]: split by rows where N was 3, the rows' values came
#       back transposed), seq_first (output [C, N], the names say where
#       the batch is), undeclared (the same without a declared shape: the
#       rows of other requests merged into one run, even other sessions',
#       came back in its rows), unnamed (rows first, declared [?, ?]:
#       the check finds them first, and it batches), reshape_b1 (a batch
#       of 1 fixed inside: XX000 "cannot reshape" once batched);
#   (c) the worker's verdicts, one a model load: undeclared and reshape_b1
#       run rows alone, unnamed in batches; a declared [N, ...] output is
#       checked too: maxpool_indices (MaxPool's Indices count over the
#       whole batch: row k came back k * 192 higher) runs rows alone;
#   (v) batch_transpose's and seq_first's per-row values are the channel
#       means that first_identity gives;
#   (w) the worker is the one started, and its log has no allocator abort;
#   (f) a model file replaced in the model directory is read again at a
#       use once it has been left alone for a second (copied over: the
#       first use after the copy still gets the old answers), or at once
#       when a copy written a second before is renamed over it, without
#       infer.unload_model: the answers are the new file's;
#   (e) models that do not fit the image functions are refused with
#       22023 before any row runs: an int64 output, a registered input
#       size that the model's fixed one refuses, a batch fixed at 4 (it
#       was XX000 at the first row); a classifier registered
#       with more labels than it gives scores (as with fewer); the error
#       of a request that carries two calls over one input names both in
#       its context;
#   (l) a classifier's labels from labels_file (one a line, "\n" or
#       "\r\n" ended) give each row the label its place in the file
#       says, the one labels => ARRAY[...] gives at that place; 5 lines
#       for 4 scores is 22023 naming the file; a file the model directory
#       lacks is 58P01; labels and labels_file both is refused (22023);
#   (m) a model that fails in the engine: XX000 naming the model once
#       (the engine's "model '...':" opening left out), with a hint;
#   (o) a second worker whose model directory lacks the files (58P01):
#       under round_robin, the batches it gets go to the worker that has
#       them, every row as alone, and it gets no more of the query's
#       batches; one row at a time (infer.enable_batching = off) each row
#       w2 gets goes to w too; a model whose file no worker has is still
#       58P01; a third worker, run as the server's user, whose copy of
#       the file that user may not read answers 58P01 saying so, and its
#       batches go to w likewise; a worker whose model directory that user
#       may not open refuses to start, saying so; a fourth worker
#       whose --gpu-memory cap mlp.onnx passes answers 53200 and its
#       batches go to w likewise, every row as alone; in a slow scan
#       (5 s) it is avoided 2 s after each 53200, tried again, and passed
#       over again, every row as alone; registered again
#       as tcp://localhost, the server's log says the two are one process;
#       a worker registered at PostgreSQL's own port is 08006 saying that
#       what listens there does not speak the worker's protocol;
#   (p) a worker started with --max-tensor-bytes 8M logs it; a model that
#       takes each image at its own size fails the row whose tensor in
#       the model passes the limit (54000, naming node, tensor and
#       limit), and before the model the row whose input alone does, the
#       other rows answered, and at the debug level its log names each
#       failed row and its error; so does the row whose operator's own
#       buffer passes the limit where its tensors do not (dyn_convt's
#       ConvTranspose column buffer, 54000 naming the buffer); a worker
#       without the setting runs all;
#       txt_b1, a text model whose batches fail for a shape where its rows
#       alone run, embeds every row, the first batch again row by row,
#       later ones row by row at once (the verdict kept); a
#       tensor larger than the host's memory (expand_huge, in (m)) is
#       54000 too, with the default limit.
#   (k) infer.load_model runs a test row of the model's task: valid raw
#       and classify models load; two inputs (22023), a classifier without
#       labels or with 5 for 4 scores, float16 arithmetic (0A000) and a
#       uint8 Add (XX000) fail the load with the first row's SQLSTATE and
#       message and "(a test row at load)"; a file that does not load fails
#       as before; no request is logged for the test rows; on a second
#       worker the bundled minilm, prompt_task and the three OCR models
#       load, a recognizer without its dictionary does not (22023).
# Prints "user_models: N passed, M failed"; exits 1 on any failure.  Every
# process it starts is stopped by pid on every exit path.
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$(pwd)

# shellcheck source=tests/integration/testlib.sh
. tests/integration/testlib.sh
PYTHON=${PYTHON:-$BUILD/venv/bin/python}
require_bins user_models "$WORKER" "$PYTHON"
case $WORKER in /*) ;; *) WORKER=$ROOT/$WORKER ;; esac
OCR_DATA=$(cd "${OCR_DATA:-$ROOT/../shared/data/ocr}" && pwd)

use_cluster_cleanup

MODELS=$tmp/models
if ! "$PYTHON" tests/integration/make_user_models.py "$MODELS" >"$tmp/make.log" 2>&1; then
	cat "$tmp/make.log"
	echo "user_models: 0 passed, 1 failed"
	exit 1
fi
chmod -R a+rX "$MODELS"
if ! testenv_start_cluster "$tmp/pg" >"$tmp/cluster.log" 2>&1; then
	cat "$tmp/cluster.log"
	echo "user_models: 0 passed, 1 failed"
	exit 1
fi
port=$(testenv_free_port)
start_named_worker w "$port" --model-dir "$MODELS" || exit 1
FIRST_PID=$PID_w

# worker_up: starts the worker again should it have exited (each check
# below then stands on its own; (w) says whether it had to), and waits
# until the pool holds it up.
worker_up() {
	if ! kill -0 "$PID_w" 2>/dev/null; then
		start_named_worker w "$port" --model-dir "$MODELS" || exit 1
	fi
	for _ in $(seq 100); do
		[ "$(q -c "SELECT status FROM infer.workers WHERE name = 'w'" 2>/dev/null)" = up ] && return
		sleep 0.05
	done
}

q <<EOF >/dev/null
CREATE EXTENSION pg_infer;
SELECT infer.add_worker('w', 'tcp://127.0.0.1:$port');
CREATE TABLE img (n int PRIMARY KEY, data bytea NOT NULL);
INSERT INTO img
SELECT row_number() OVER (ORDER BY f), pg_read_binary_file('$OCR_DATA/' || f)
  FROM pg_ls_dir('$OCR_DATA') AS f
 WHERE f ~ '^p[0-9]+_.*\.(png|jpg)$'
 ORDER BY f LIMIT 25;
SELECT infer.create_model(m, m || '.onnx', 'raw')
  FROM unnest(ARRAY['first_identity', 'first_concat', 'mlp', 'batch_transpose', 'seq_first',
					'undeclared', 'unnamed', 'reshape_b1', 'maxpool_indices', 'opset20']) AS m;
-- differ(a, b): whether two answers differ by more than 1e-5 (or in length)
CREATE FUNCTION differ(a real[], b real[]) RETURNS boolean
LANGUAGE sql IMMUTABLE AS \$\$
	SELECT a IS NULL OR b IS NULL OR cardinality(a) <> cardinality(b) OR
		   (SELECT bool_or(abs(x - y) > 1e-5 OR (x = 'NaN') <> (y = 'NaN'))
			  FROM unnest(a, b) AS u(x, y))
\$\$;
EOF
check "25 real images" "$(q -c "SELECT count(*) FROM img")" '^25$'

# --- (b) batched answers are the row-by-row answers -------------------------
for m in first_identity first_concat mlp batch_transpose seq_first undeclared unnamed reshape_b1 \
	maxpool_indices opset20; do
	worker_up
	q >"$tmp/$m.out" 2>&1 <<EOF
SET infer.enable_batching = off;
CREATE TABLE ref_$m AS SELECT n, infer.predict('$m', data) AS v FROM img;
SELECT 'ref ' || count(*) || ' ' || count(*) FILTER (WHERE cardinality(v) > 0) FROM ref_$m;
RESET infer.enable_batching;
SET infer.batch_size = 3;
SELECT 'bs3 ' || count(*) || ' ' || count(*) FILTER (WHERE differ(b.v, r.v))
  FROM (SELECT n, infer.predict('$m', data) AS v FROM img) b JOIN ref_$m r USING (n);
SET infer.batch_size = 7;
SELECT 'bs7 ' || count(*) || ' ' || count(*) FILTER (WHERE differ(b.v, r.v))
  FROM (SELECT n, infer.predict('$m', data) AS v FROM img) b JOIN ref_$m r USING (n);
RESET infer.batch_size;
SELECT 'bsd ' || count(*) || ' ' || count(*) FILTER (WHERE differ(b.v, r.v))
  FROM (SELECT n, infer.predict('$m', data) AS v FROM img) b JOIN ref_$m r USING (n);
EOF
	out=$(tr '\n' ' ' <"$tmp/$m.out")
	check "(b) $m: batches of 3, 7 and the default answer each row as it is answered alone" \
		"$out" '^ref 25 25 bs3 25 0 bs7 25 0 bsd 25 0 $'
done

# --- (b) an opset 20 model answers as its opset 13 spelling ----------------
worker_up
check "(b) opset20 (Gelu-20, ReduceMean-18) answers every row as opset13 (Erf, ReduceMean-13) does" \
	"$(q -c "SELECT infer.create_model('opset13', 'opset13.onnx', 'raw');
			 SELECT count(*) || ' ' || count(*) FILTER (WHERE differ(a.v, b.v)) || ' ' ||
					count(*) FILTER (WHERE cardinality(a.v) = 4)
			   FROM (SELECT n, infer.predict('opset20', data) AS v FROM img) a
			   JOIN (SELECT n, infer.predict('opset13', data) AS v FROM img) b USING (n)" 2>&1 |
	   tail -1)" \
	'^25 0 25$'

# --- (c) the verdicts, each once --------------------------------------------
# verdict MODEL TEXT: the worker's verdicts on MODEL that say TEXT
verdict() {
	grep -c "model \"$1.onnx\": .*$2" "$tmp/w.log"
}
check "(c) undeclared runs rows alone, unnamed in batches, reshape_b1 rows alone: one verdict each" \
	"undeclared=$(verdict undeclared 'rows run one at a time') unnamed=$(verdict unnamed 'gives its slice.*rows run in batches') reshape_b1=$(verdict reshape_b1 'a batch failed where its rows alone run')" \
	'^undeclared=1 unnamed=1 reshape_b1=1$'
check "(c) declared rows first is checked too: first_identity and mlp in batches, maxpool_indices rows alone" \
	"first_identity=$(verdict first_identity 'gives its slice.*rows run in batches') mlp=$(verdict mlp 'gives its slice.*rows run in batches') maxpool_indices=$(verdict maxpool_indices 'does not give its slice.*rows run one at a time') all=$(grep -c 'rows run one at a time\|rows run in batches' "$tmp/w.log")" \
	'^first_identity=1 mlp=1 maxpool_indices=1 all=9$'

# --- (v) the per-row values are right, not only alike ----------------------
for m in batch_transpose seq_first undeclared unnamed; do
	check "(v) $m's rows are first_identity's channel means" \
		"$(q -c "SELECT count(*) || ' ' || count(*) FILTER (WHERE differ(t.v, i.v))
		           FROM ref_$m t JOIN ref_first_identity i USING (n)")" '^25 0$'
done
check "(v) the channel means are means of values in [0, 1] (pixel / 255, no mean or std)" \
	"$(q -c "SELECT count(*) FROM ref_first_identity, unnest(v) AS x WHERE x < 0 OR x > 1")" '^0$'

# --- (w) the worker survived -------------------------------------------------
check "(w) the worker started is still running, and its log has no allocator abort" \
	"alive=$(kill -0 "$FIRST_PID" 2>/dev/null && echo 1 || echo 0) aborts=$(grep -ciE 'double free|corruption|malloc\(\)|free\(\)' "$tmp/w.log")" \
	'^alive=1 aborts=0$'

# --- (f) a model file replaced on disk ----------------------------------------
worker_up
cp "$MODELS/mlp.onnx" "$MODELS/swap.onnx"
chmod a+r "$MODELS/swap.onnx"
swap_query="SELECT count(*) FILTER (WHERE NOT differ(s.v, r.v)) FROM (SELECT n, infer.predict('swap', data) AS v FROM img) s JOIN"
q -c "SELECT infer.create_model('swap', 'swap.onnx', 'raw')" >/dev/null
q -c "SELECT infer.create_model('mlp_b', 'mlp_b.onnx', 'raw')" >/dev/null
q -c "CREATE TABLE ref_mlp_b AS SELECT n, infer.predict('mlp_b', data) AS v FROM img" >/dev/null
first=$(q -c "$swap_query ref_mlp r USING (n)")
# copied over (the same inode; the size and the modification time change):
# read once left alone for a second
cp "$MODELS/mlp_b.onnx" "$MODELS/swap.onnx"
settling=$(q -c "$swap_query ref_mlp r USING (n)")
sleep 1.2
copied=$(q -c "$swap_query ref_mlp_b r USING (n)")
# renamed over (another inode), written a second before: read at once
cp "$MODELS/mlp.onnx" "$MODELS/swap.new"
chmod a+r "$MODELS/swap.new"
sleep 1.2
mv "$MODELS/swap.new" "$MODELS/swap.onnx"
renamed=$(q -c "$swap_query ref_mlp r USING (n)")
check "(f) swap.onnx answers as mlp.onnx; just copied over, still so; a second on, as mlp_b.onnx; renamed over, at once as mlp.onnx (rows that match)" \
	"first=$first settling=$settling copied=$copied renamed=$renamed reloads=$(grep -c 'model file "swap.onnx" changed in the model directory since it was loaded' "$tmp/w.log")" \
	'^first=25 settling=25 copied=25 renamed=25 reloads=2$'

# --- (e) models that do not fit ----------------------------------------------
worker_up
out=$(q -v VERBOSITY=verbose <<'EOF' 2>&1
\set ON_ERROR_STOP 0
SELECT infer.create_model('int_out', 'int_out.onnx', 'raw');
SELECT infer.create_model('wrong_size', 'first_identity.onnx', 'raw', input_height => 16, input_width => 8);
SELECT infer.create_model('gray', 'gray.onnx', 'raw');
SELECT infer.predict('gray', data) FROM img WHERE n = 1;
SELECT infer.create_model('fixed_b4', 'fixed_b4.onnx', 'raw');
SELECT infer.predict('fixed_b4', data) FROM img WHERE n = 1;
SELECT infer.create_model('mlp_cls5', 'mlp.onnx', 'classify', labels => '{a,b,c,d,e}');
SELECT infer.create_model('mlp_cls4', 'mlp.onnx', 'classify', labels => '{a,b,c,d}');
SELECT infer.classify('mlp_cls5', data) FROM img WHERE n = 1;
SELECT 'cls4 ' || count(*) || ' ' || count(*) FILTER (WHERE l IN ('a', 'b', 'c', 'd'))
  FROM (SELECT infer.classify('mlp_cls4', data) AS l FROM img) s;
SELECT infer.predict('int_out', data) FROM img WHERE n = 1;
SELECT infer.predict('wrong_size', data) FROM img WHERE n = 1;
SELECT infer.predict('first_identity', data), infer.predict('int_out', data) FROM img WHERE n <= 2;
SELECT infer.create_model('mlp_clsf', 'mlp.onnx', 'classify', labels_file => 'labels4.txt');
SELECT infer.create_model('mlp_clsf5', 'mlp.onnx', 'classify', labels_file => 'labels5.txt');
SELECT infer.create_model('mlp_clsnf', 'mlp.onnx', 'classify', labels_file => 'nope.txt');
SELECT infer.create_model('mlp_both', 'mlp.onnx', 'classify', labels => '{a,b,c,d}', labels_file => 'labels4.txt');
SELECT 'clsf ' || count(*) || ' ' || count(DISTINCT c) || ' ' ||
	   count(*) FILTER (WHERE f = (ARRAY['cat', 'dog', 'bird', 'fish'])[ascii(c) - 96])
  FROM (SELECT infer.classify('mlp_cls4', data) AS c, infer.classify('mlp_clsf', data) AS f FROM img) s;
SELECT infer.classify('mlp_clsf5', data) FROM img WHERE n = 1;
SELECT infer.classify('mlp_clsnf', data) FROM img WHERE n = 1;
SELECT infer.create_model('reshape_100', 'reshape_100.onnx', 'raw');
SELECT infer.predict('reshape_100', data) FROM img WHERE n = 1;
SELECT infer.create_model('cast_bf16', 'cast_bf16.onnx', 'raw');
SELECT infer.predict('cast_bf16', data) FROM img WHERE n = 1;
SELECT infer.create_model('bad_attr', 'bad_attr.onnx', 'raw');
SELECT infer.predict('bad_attr', data) FROM img WHERE n = 1;
SELECT infer.load_model('bad_attr', 'w');
SELECT infer.create_model('int32_shape', 'int32_shape.onnx', 'raw');
SELECT infer.predict('int32_shape', data) FROM img WHERE n = 1;
SELECT infer.create_model('u8_add', 'u8_add.onnx', 'raw');
SELECT infer.predict('u8_add', data) FROM img WHERE n = 1;
SELECT infer.create_model('named_oom', 'named_oom.onnx', 'raw');
SELECT infer.predict('named_oom', data) FROM img WHERE n = 1;
SELECT infer.create_model('f16_add', 'f16_add.onnx', 'raw');
SELECT infer.predict('f16_add', data) FROM img WHERE n = 1;
SELECT infer.create_model('f16_dyn', 'f16_dyn.onnx', 'raw');
SELECT infer.predict('f16_dyn', data) FROM img WHERE n <= 3;
SET infer.on_error = 'null';
SELECT 'f16_dyn null ' || count(*) FROM (SELECT infer.predict('f16_dyn', data) FROM img WHERE n <= 3) s;
RESET infer.on_error;
SELECT infer.create_model('reshape_dyn', 'reshape_dyn.onnx', 'raw');
SELECT infer.predict('reshape_dyn', data) FROM img WHERE n = 1;
SET infer.on_error = 'null';
SELECT 'reshape_dyn null ' || count(*) || ' ' || count(v) FROM (SELECT infer.predict('reshape_dyn', data) AS v FROM img WHERE n <= 3) s;
RESET infer.on_error;
SELECT infer.create_model('expand_huge', 'expand_huge.onnx', 'raw');
SELECT infer.predict('expand_huge', data) FROM img WHERE n = 1;
SELECT 'after ' || count(*) FROM (SELECT infer.predict('mlp', data) FROM img) s;
SELECT infer.create_model('det_f16', 'f16_dyn.onnx', 'detect_text');
SET infer.ocr_detector = 'det_f16';
SELECT infer.detect_text(data) FROM img WHERE n = 1;
RESET infer.ocr_detector;
SELECT infer.create_model('txt_pos8', 'txt_pos8/model.onnx', 'embed_text');
CREATE TEMP TABLE t8 (n int, t text);
INSERT INTO t8 VALUES (1, 'one two'), (2, 'one two three four five six seven eight nine'),
	(3, 'three four five'), (4, 'a b c d e f');
SELECT n, infer.embed('txt_pos8', t) FROM t8 ORDER BY n;
SET infer.on_error = 'null';
SELECT 'txt_pos8 ' || string_agg(n || ':' || coalesce(array_length(e, 1)::text, 'null'), ' ' ORDER BY n)
  FROM (SELECT n, infer.embed('txt_pos8', t) AS e FROM t8) s;
RESET infer.on_error;
EOF
)
check "(e) an int64 output: 22023 naming the output and the model" "$out" \
	'ERROR:  22023: first output "y" of model "int_out.onnx" is int64; infer.predict and infer.classify read a float output'
check "(e) a registered size the model's fixed input refuses: 22023 naming both" "$out" \
	'ERROR:  22023: model "wrong_size" is registered with input_height 16 and input_width 8, but its input "x" is fixed at height 8 and width 8'
check "(e) a one-channel input: 22023 naming its type and shape and what an image model takes" "$out" \
	'ERROR:  22023: input "x" of model "gray\.onnx" is float \[N, 1, 8, 8\], not an image: an image model.s input is float \[N, 3, H, W\] \(3 channels\)'
check "(e) a batch fixed at 4: 22023 saying so" "$out" \
	'ERROR:  22023: model "fixed_b4.onnx" takes a fixed batch of 4 images \(input "x"\)'
check "(e) 5 labels for 4 scores: 22023; 4 labels: a label for every row" "$out" \
	'ERROR:  22023: classify model "mlp.onnx" gives 4 scores but has 5 labels; register it with one label per score' \
	'^cls4 25 25$'
check "(e) two calls in one request: the context names both" "$out" \
	'CONTEXT:  infer.predict: model "first_identity" \(in one request with infer.predict: model "int_out"\) on inference worker "w"'
check "(l) labels_file: each of 25 rows gets the file's line at the place mlp_cls4's label has in {a,b,c,d}" \
	"$out" '^clsf 25 [2-4] 25$'
check "(l) 5 lines for 4 scores: 22023 naming the file" "$out" \
	'ERROR:  22023: classify model "mlp.onnx" gives 4 scores but has 5 labels \(the lines of "labels5.txt"\); register it with one label per score'
check "(l) a labels file the model directory lacks: 58P01" "$out" \
	'ERROR:  58P01: labels file "nope.txt" not found in model directory'
check "(l) labels and labels_file both: refused" "$out" \
	'ERROR:  22023: model "mlp_both" has both labels and a labels_file'
check "(m) a model the engine fails: XX000 naming it once, with a hint" "$out" \
	'ERROR:  XX000: model "reshape_100.onnx" failed: ' \
	'HINT:  The worker.s log names the request; check the model.s registration'
check_not "(m) ... its message does not repeat the engine's opening" "$out" \
	"model \"[^\"]*\" failed: model '"
# The engine checks attributes at load: a value it lacks is 0A000 there,
# not XX000 at the first run; an attribute the operator's ONNX schema does
# not have makes the model invalid (XX001), as for ONNX Runtime.
check "(m) a Cast to bfloat16: 0A000 at load naming the node, with a hint" "$out" \
	'ERROR:  0A000: could not load model file "cast_bf16\.onnx": .*Cast node .#2.: cast to bfloat16 \(16\) is not supported' \
	'HINT:  Export the model without it'
check "(m) an attribute Relu does not have: XX001 at load naming it" "$out" \
	'ERROR:  XX001: could not load model file "bad_attr\.onnx": .*Relu node .relu_foo.: attribute .foo. is not an attribute of Relu-13 \(opset 13\)' \
	'HINT:  Check the file with onnx\.checker\.check_model\(model, full_check=True\), which names what is wrong: export the model again if it is not valid ONNX'
check_not "(m) ... neither ran" "$out" 'XX000: model "(cast_bf16|bad_attr)\.onnx" failed'
check "(m) ... and infer.load_model finds it before any query: XX001 the same way" \
	"$(grep -c 'ERROR:  XX001: .*could not load model file "bad_attr\.onnx": Relu node .relu_foo.: attribute .foo.' <<<"$out")" '^2$'
# Input types an operator's ONNX schema does not allow, as ONNX Runtime
# refuses them: a constant's at load, a computed one's at the first run.
check "(m) an int32 shape for Reshape (int64 alone): XX001 at load naming node, version and types" "$out" \
	"ERROR:  XX001: could not load model file \"int32_shape\\.onnx\": Reshape node 'reshape_i32' \\(Reshape-13, opset 13\\): input 1 'shape32' \\(shape\\) is int32, which Reshape-13 does not allow \\(int64\\)"
check "(m) a uint8 Add at opset 13 (Add-14 takes it): XX000 at its run naming the types T allows" "$out" \
	"ERROR:  XX000: model \"u8_add\\.onnx\" failed: Add node 'add_u8' \\(Add-13, opset 13\\): input 0 'u' \\(A\\) is uint8, which T does not allow \\(float, int32, int64, float16, double, uint32, uint64, bfloat16\\)"
# At run time the engine returns the kind of its failure; the names in the
# file (here "out of memory", "image too small", "not supported") play no
# part in the SQLSTATE.
check "(m) a Reshape that cannot be done, named \"out of memory\": XX000, not 53200" "$out" \
	"ERROR:  XX000: model \"named_oom\\.onnx\" failed: Reshape node 'out of memory': "
check "(m) float16 arithmetic at run time: 0A000 naming the node" "$out" \
	"ERROR:  0A000: model \"f16_add\\.onnx\" failed: Add node 'image too small': element type float16 is not supported"
check "(m) ... with the image's own size too: 0A000 for the request, not 22023 for each row" "$out" \
	"ERROR:  0A000: model \"f16_dyn\\.onnx\" failed: Add node 'image too small': element type float16 is not supported"
check_not "(m) ... no row error: the model, not the image's size" "$out" 'f16_dyn\.onnx. cannot take'
check "(m) ... infer.on_error = null leaves it an ERROR (both queries)" \
	"$(grep -c 'ERROR:  0A000: model "f16_dyn\.onnx" failed' <<<"$out")" '^2$'
check_not "(m) ... and gives no NULL rows" "$out" '^f16_dyn null'
check "(m) an image at its own size the model cannot take: 22023 for the row, naming its size and the node, with a hint" "$out" \
	"ERROR:  22023: model \"reshape_dyn\\.onnx\" cannot take the row's image at its own size, [0-9]+x[0-9]+: Reshape node '#0': " \
	'HINT:  The model is registered without an input size, so each image goes in at its own: register the size it was made for'
check "(m) ... a row's own error: infer.on_error = null gives NULL for each row" "$out" '^reshape_dyn null 3 0$'
check "(m) 2^50 floats at run time, more than the host's memory, the node named \"not supported\": 54000 naming the tensor, with a hint" "$out" \
	"ERROR:  54000: model \"expand_huge\\.onnx\" failed: Expand node 'not supported': over the tensor limit for the output \\(type float, rank 4\\): a float tensor of shape \\[1, 33554432, 33554432, 1\\] is 4503599627370496 bytes, more than the [0-9]+ bytes a tensor may take" \
	'HINT:  The message names the limit: send smaller input, or, for a tensor of a model \(a weight, or one of its run\), start the worker with a larger --max-tensor-bytes\.'
check "(m) ... and the worker answers the next query, every row" "$out" '^after 25$'
check "(m) a text detector that needs float16 arithmetic: 0A000 for the call, from the OCR pipeline's run, naming the model and the node" "$out" \
	"ERROR:  0A000: text detection failed: model 'f16_dyn\\.onnx': Add node 'image too small': element type float16 is not supported"
check "(m) a text of 11 tokens a text model's 8 positions cannot take: 22023 for its row, naming the tokens and the node, with a hint" "$out" \
	"ERROR:  22023: text model \"txt_pos8/model\\.onnx\" cannot take the row's text of 11 tokens: Add node 'add_positions': shapes \\[1, 11, 4\\] and \\[8, 4\\] do not broadcast" \
	'HINT:  Check the model.s max_seq_length in its model\.json' \
	'CONTEXT: .*input row 2'
check "(m) ... infer.on_error = null: NULL for that row alone, the others embedded (the batch ran again row by row)" \
	"$out" '^txt_pos8 1:4 2:null 3:4 4:4$'
check "(e) ... and the worker is the one started" \
	"alive=$(kill -0 "$FIRST_PID" 2>/dev/null && echo 1 || echo 0)" '^alive=1$'

# --- (n) the worker's log names who sent each request -----------------------
worker_up
pid=$(q -c "SELECT pg_backend_pid() || ' ' || cardinality(infer.predict('mlp', data)) FROM img WHERE n = 1")
check "(n) the worker's line about a request names the database, the role and the backend's pid" \
	"$pid $(grep -c "request [0-9]*: predict over 1 rows (1 ok, 0 failed) in [0-9.]* ms; from db=postgres user=postgres pid=${pid% *}$" "$tmp/w.log")" \
	'^[0-9]+ 4 1$'
out=$(q -c "CREATE ROLE pginfer_logtest; GRANT infer_user TO pginfer_logtest; GRANT SELECT ON img TO pginfer_logtest" \
	-c "SET ROLE pginfer_logtest" \
	-c "SELECT pg_backend_pid() || ' ' || cardinality(infer.predict('mlp', data)) FROM img WHERE n = 2" \
	-c "RESET ROLE" -c "REVOKE SELECT ON img FROM pginfer_logtest; DROP ROLE pginfer_logtest")
check "(n) ... and under SET ROLE, the session user and the role" \
	"$(grep -c "request [0-9]*: predict over 1 rows (1 ok, 0 failed) in [0-9.]* ms; from db=postgres user=postgres pid=${out% *} role=pginfer_logtest$" "$tmp/w.log")" '^1$'
check "(n) ... and so does its error line" \
	"$(grep -c "request [0-9]*: error 0A000: model \"f16_add\.onnx\" failed: .*; from db=postgres user=postgres pid=[0-9]*$" "$tmp/w.log")" '^1$'

# --- (o) a worker that lacks the files -------------------------------------
# add_up NAME PORT: registers the worker NAME started on PORT (or
# HOST:PORT) and waits
# until the pool holds it up.
add_up() {
	local ep=$2
	case $ep in *:*) ;; *) ep=127.0.0.1:$ep ;; esac
	q -c "SELECT infer.add_worker('$1', 'tcp://$ep')" >/dev/null
	for _ in $(seq 100); do
		[ "$(q -c "SELECT status FROM infer.workers WHERE name = '$1'" 2>/dev/null)" = up ] && return
		sleep 0.05
	done
}
# mlp_round_robin LABEL: mlp over the 25 images in batches of 3 under
# round_robin; prints "LABEL ROWS DIFFERING" (rows unlike ref_mlp's).
mlp_round_robin() {
	q -v VERBOSITY=verbose 2>&1 <<EOF
\set ON_ERROR_STOP 0
SET infer.placement = round_robin;
SET infer.batch_size = 3;
SELECT '$1 ' || count(*) || ' ' || count(*) FILTER (WHERE differ(b.v, r.v))
  FROM (SELECT n, infer.predict('mlp', data) AS v FROM img) b JOIN ref_mlp r USING (n);
EOF
}
worker_up
mkdir -p "$tmp/empty_models"
chmod a+rx "$tmp/empty_models"
port2=$(testenv_free_port)
start_named_worker w2 "$port2" --model-dir "$tmp/empty_models" || exit 1
add_up w2 "$port2"
out=$(mlp_round_robin lack)
check "(o) round_robin over w and w2, which lacks mlp.onnx: all 25 rows, each as alone" "$out" '^lack 25 0$'
check "(o) ... w2 answered 58P01 once, then got none of the query's batches" \
	"$(grep -c 'error 58P01' "$tmp/w2.log")" '^1$'
out=$(q -v VERBOSITY=verbose <<'EOF' 2>&1
\set ON_ERROR_STOP 0
SET infer.placement = round_robin;
SET infer.enable_batching = off;
SELECT 'row ' || count(*) || ' ' || count(*) FILTER (WHERE differ(b.v, r.v))
  FROM (SELECT n, infer.predict('mlp', data) AS v FROM img WHERE n <= 6) b
  JOIN ref_mlp r USING (n);
EOF
)
check "(o) one row at a time over w and w2: all 6 rows, each as alone" "$out" '^row 6 0$'
check "(o) ... the rows w2 got (58P01) went to w" \
	"$(grep -c 'error 58P01' "$tmp/w2.log")" '^[2-9]$'
out=$(q -v VERBOSITY=verbose <<'EOF' 2>&1
\set ON_ERROR_STOP 0
SET infer.placement = round_robin;
SELECT infer.create_model('nowhere', 'nowhere.onnx', 'raw');
SELECT infer.predict('nowhere', data) FROM img WHERE n <= 4;
EOF
)
check "(o) a model file no worker has: 58P01" "$out" \
	'ERROR:  58P01: model file "nowhere.onnx" of model "nowhere" not found in model directory'
locked=$tmp/locked_models
mkdir -p "$locked"
cp "$MODELS/mlp.onnx" "$locked/mlp.onnx"
chmod a+rx "$locked"
chmod 000 "$locked/mlp.onnx"
port3=$(testenv_free_port)
worker_prefix=("${testenv_as_pg[@]}")
start_named_worker w3 "$port3" --model-dir "$locked" || exit 1
worker_prefix=()
add_up w3 "$port3"
check "(o) w3, uploads on, its model directory not writable by its user: a WARNING at start" \
	"$(cat "$tmp/w3.log")" \
	"WARNING: uploads are on, but \"${locked//./\\.}\" is not writable by this worker's user \(uid [0-9]+\): Permission denied; .*--uploads off"
check_not "(o) ... w, whose directory its user may write, logs none" "$(cat "$tmp/w.log" 2>/dev/null)" 'uploads are on, but'
out=$(mlp_round_robin locked)
check "(o) round_robin over w, w2 and w3, whose mlp.onnx its user may not read: all 25 rows, each as alone" \
	"$out" '^locked 25 0$'
check "(o) ... w3 answered 58P01, saying the file cannot be read" "$(cat "$tmp/w3.log")" \
	'error 58P01: model file "mlp\.onnx" of model "mlp" in model directory ".*" cannot be read by the worker \(user id [0-9]+\): Permission denied'
# a worker whose --gpu-memory cap is smaller than mlp.onnx (12870 bytes):
# the batches it gets answer 53200 and go to a worker that can hold it
port4=$(testenv_free_port)
start_named_worker w4 "$port4" --model-dir "$MODELS" --gpu-memory 4K || exit 1
add_up w4 "$port4"
out=$(mlp_round_robin small)
check "(o) round_robin over w, w2, w3 and w4, whose cap mlp.onnx passes: all 25 rows, each as alone" \
	"$out" '^small 25 0$'
check "(o) ... w4 answered 53200 naming the cap, and the backend sent its rows on" \
	"$(grep -c 'error 53200: model "mlp\.onnx" needs [0-9]* bytes, more than the 4096 bytes this worker may hold' "$tmp/w4.log") $(grep -c 'inference worker "w4" at .* cannot run the request (53200: model "mlp\.onnx" needs' "$tmp/pg/postgres.log")" \
	'^[1-9][0-9]* [1-9][0-9]*$'
# the same under a slow scan (its rows come 0.2 s apart, 5 s in all): w4 is
# avoided for 2 s after each 53200 (its memory may be taken only for a
# while), tried again after that, and passed over again
before=$(grep -c 'error 53200' "$tmp/w4.log")
out=$(q -v VERBOSITY=verbose 2>&1 <<'EOF'
\set ON_ERROR_STOP 0
SET infer.placement = round_robin;
SET infer.batch_size = 3;
SELECT 'slow ' || count(*) || ' ' || count(*) FILTER (WHERE differ(b.v, r.v))
  FROM (SELECT n, infer.predict('mlp', data) AS v
          FROM (SELECT n, data, pg_sleep(0.2) FROM img OFFSET 0) s) b
  JOIN ref_mlp r USING (n);
EOF
)
check "(o) ... a slow scan over the same workers: all 25 rows, each as alone" "$out" '^slow 25 0$'
n53=$(($(grep -c 'error 53200' "$tmp/w4.log") - before))
if [ "$n53" -ge 2 ]; then
	pass "(o) ... w4 was tried again 2 s after its 53200, and passed over again ($n53 times)"
else
	fail "(o) ... w4 was tried again 2 s after its 53200, and passed over again ($n53 times)" "$out"
fi
# the same worker registered again under another spelling of its address:
# the pool monitor logs that the two are one process
add_up w4c "localhost:$port4"
for _ in $(seq 50); do
	grep -q 'inference workers "w4c" at tcp://localhost:[0-9]* and "w4" at tcp://127\.0\.0\.1:[0-9]* are one process' "$tmp/pg/postgres.log" && break
	sleep 0.1
done
check "(o) ... w4 registered again as tcp://localhost: the server's log says they are one process, with a hint" \
	"$(grep -A3 'inference workers "w4c" at tcp://localhost:[0-9]* and "w4" at tcp://127\.0\.0\.1:[0-9]* are one process' "$tmp/pg/postgres.log")" \
	'are one process, [^ ]+:'"$PID_w4"'$' 'HINT:  Keep one of them: infer\.drop_worker'
q -c "SELECT infer.drop_worker('w4')" -c "SELECT infer.drop_worker('w4c')" >/dev/null
# load_at NAME ENDPOINT TIMEOUT_MS: registers NAME at ENDPOINT and loads
# mlp there under infer.timeout TIMEOUT_MS; prints what psql said (verbose)
load_at() {
	q -v VERBOSITY=verbose -c "SELECT infer.add_worker('$1', '$2')" \
		-c "SET infer.timeout = $3" -c "SELECT infer.load_model('mlp', '$1')" 2>&1
}
# a worker registered at an address where something else listens (this
# PostgreSQL): 08006 saying the handshake failed and what to give
out=$(load_at notaworker "tcp://127.0.0.1:$PGPORT" 3000)
q -c "SELECT infer.drop_worker('notaworker')" >/dev/null
check "(o) a worker registered at PostgreSQL's own port: 08006, the detail says no worker protocol answers there" "$out" \
	'ERROR:  08006: could not connect to inference worker "notaworker"' \
	"DETAIL:  .* Connections were made, but what listens there did not complete the worker's ZeroMQ handshake \\(failed handshakes: [1-9][0-9]*\\): check that this is the worker's --listen address"
# a worker at an ipc:// socket this server's operating-system user may not
# open (mode 000: refused to any user but root, and the server never runs
# as root), then one registered at a socket file that does not exist:
# 08006 whose detail says which
"$WORKER" --listen "ipc://$tmp/wipc.sock" --model-dir "$MODELS" 2>"$tmp/wipc.log" &
ipc_pid=$!
pids+=("$ipc_pid")
for _ in $(seq 100); do [ -S "$tmp/wipc.sock" ] && break; sleep 0.05; done
chmod 000 "$tmp/wipc.sock"
out=$(load_at wipc "ipc://$tmp/wipc.sock" 2000)
for _ in $(seq 100); do
	grep -q 'inference worker "wipc" at ipc://.* is down' "$tmp/pg/postgres.log" && break
	sleep 0.05
done
down=$(grep -A2 'inference worker "wipc" at ipc://.* is down' "$tmp/pg/postgres.log")
q -c "SELECT infer.drop_worker('wipc')" >/dev/null
kill "$ipc_pid" 2>/dev/null
wait "$ipc_pid" 2>/dev/null
check "(o) a worker at an ipc:// socket the server's user may not open: 08006, the detail says so" "$out" \
	'ERROR:  08006: could not connect to inference worker "wipc"' \
	"DETAIL:  .* The socket file .*/wipc\\.sock exists, but this server's operating-system user \\(user id [0-9]+\\) may not open it \\(Permission denied\\)"
check "(o) ... and the pool monitor's line for it going down says so too" "$down" \
	"DETAIL:  It has not answered since the pool took it in, [0-9]+ ms ago\\. The socket file .*/wipc\\.sock exists, but this server's operating-system user"
out=$(load_at wipc2 "ipc://$tmp/nothing.sock" 2000)
q -c "SELECT infer.drop_worker('wipc2')" >/dev/null
check "(o) a worker at an ipc:// socket file that does not exist: 08006, the detail says so" "$out" \
	'ERROR:  08006: could not connect to inference worker "wipc2"' \
	"DETAIL:  .* The socket file .*/nothing\\.sock cannot be found by this server \\(No such file or directory\\)"
mkdir -p "$tmp/closed_models"
chmod 000 "$tmp/closed_models"
out=$(timeout 20 ${testenv_as_pg[@]+"${testenv_as_pg[@]}"} "$WORKER" \
	--listen "tcp://127.0.0.1:$(testenv_free_port)" --model-dir "$tmp/closed_models" 2>&1; echo "exit $?")
chmod 755 "$tmp/closed_models"
check "(o) a model directory the worker's user may not open: no start" "$out" \
	'could not start: model directory ".*closed_models" cannot be read by the worker \(user id [0-9]+\): Permission denied' \
	'^exit 1$'

# --- (p) a worker with --max-tensor-bytes ----------------------------------
# wl allows tensors of 8 MiB, and the others leave the pool.  dyn_concat
# takes each image at its own size and makes a tensor twice its input's:
# the 340x140 image (1.1 MB after the Concat) runs; the 900x400 one
# (8.6 MB after it) fails its row at the Concat, the 1600x1000 one (a
# 19.2 MB input) before the model runs: 54000 for those rows alone, each
# naming the tensor.  On a worker without the setting all three run.
portl=$(testenv_free_port)
start_named_worker wl "$portl" --model-dir "$MODELS" --max-tensor-bytes 8M --log-level debug || exit 1
q -c "SELECT infer.drop_worker(name) FROM infer.workers WHERE name IN ('w2', 'w3')" >/dev/null
add_up wl "$portl"
q -c "SELECT infer.drop_worker('w')" >/dev/null
check "(p) the worker logs its tensor limit" "$(cat "$tmp/wl.log")" 'largest tensor: 8388608 bytes$'
q -c "SELECT infer.create_model('dyn_concat', 'dyn_concat.onnx', 'raw')" \
	-c "CREATE TABLE pick AS SELECT n, f FROM img, unnest(ARRAY['p21_curl_desc_small.png', 'p01_web_docs.png', 'p08_doc_on_desk.jpg']) AS f WHERE data = pg_read_binary_file('$OCR_DATA/' || f)" >/dev/null
out=$(q -v VERBOSITY=verbose <<'EOF' 2>&1
\set ON_ERROR_STOP 0
SELECT 'picked ' || count(*) FROM pick;
SELECT f, cardinality(infer.predict('dyn_concat', data)) FROM img JOIN pick USING (n) WHERE f LIKE 'p01%';
SELECT f, cardinality(infer.predict('dyn_concat', data)) FROM img JOIN pick USING (n) WHERE f LIKE 'p08%';
SET infer.on_error = 'null';
SELECT string_agg(f || ':' || coalesce(cardinality(v)::text, 'null'), ' ' ORDER BY f)
  FROM (SELECT f, infer.predict('dyn_concat', data) AS v FROM img JOIN pick USING (n)) s;
EOF
)
check "(p) three images picked" "$out" '^picked 3$'
check "(p) a row whose tensor in the model is over the limit: 54000 for the row, naming the node, the tensor and the limit, with a hint" "$out" \
	"ERROR:  54000: model \"dyn_concat\\.onnx\" needs a tensor larger than the worker allows for the row's image at its own size, 900x400: Concat node '#0': over the tensor limit for the output \\(type float, rank 4\\): a float tensor of shape \\[1, 6, 400, 900\\] is 8640000 bytes, more than the 8388608 bytes a tensor may take" \
	'HINT:  Pass a smaller image, register the input size the model was made for'
check "(p) a row whose input alone is over the limit: 54000 for the row, before the model runs" "$out" \
	"ERROR:  54000: the row's 1600x1000 input to model \"dyn_concat\\.onnx\" is larger than the worker allows: a float tensor of shape \\[1, 3, 1000, 1600\\] is 19200000 bytes, more than the 8388608 bytes a tensor may take" \
	'HINT:  Pass a smaller image, register a smaller input size'
check "(p) infer.on_error = null: NULL for those two rows, the small image's 6 values" "$out" \
	'^p01_web_docs\.png:null p08_doc_on_desk\.jpg:null p21_curl_desc_small\.png:6$'
check "(p) at the debug level, the worker's log says why each row failed (each of the two rows failed in two queries)" \
	"$(grep -c "request [0-9]*: row [1-3] of [1-3] (row id [0-9]*): 54000 model \"dyn_concat\.onnx\" needs a tensor larger than the worker allows for the row's image at its own size, 900x400: Concat node" "$tmp/wl.log") $(grep -c "request [0-9]*: row [1-3] of [1-3] (row id [0-9]*): 54000 the row's 1600x1000 input" "$tmp/wl.log")" \
	'^2 2$'
# dyn_convt's tensors fit the limit where its ConvTranspose's column
# buffer does not: the 900x400 image's [25, 360000] floats (36 MB; its
# input is 4.3 MB, its output 1.5 MB) fail its row with 54000 naming the
# buffer; the small image's (4.8 MB) runs.
q -c "SELECT infer.create_model('dyn_convt', 'dyn_convt.onnx', 'raw')" >/dev/null
out=$(q -v VERBOSITY=verbose <<'EOF' 2>&1
\set ON_ERROR_STOP 0
SELECT f, cardinality(infer.predict('dyn_convt', data)) FROM img JOIN pick USING (n) WHERE f LIKE 'p01%';
SET infer.on_error = 'null';
SELECT string_agg(f || ':' || coalesce(cardinality(v)::text, 'null'), ' ' ORDER BY f)
  FROM (SELECT f, infer.predict('dyn_convt', data) AS v FROM img JOIN pick USING (n)) s;
EOF
)
check "(p) a row whose operator's scratch buffer (no tensor) is over the limit: 54000 for the row, naming the node, the buffer and the limit" "$out" \
	"ERROR:  54000: model \"dyn_convt\\.onnx\" needs a tensor larger than the worker allows for the row's image at its own size, 900x400: ConvTranspose node '#0': over the tensor limit for the col2im buffer: a float buffer of shape \\[25, 360000\\] is 36000000 bytes, more than the 8388608 bytes a tensor may take"
check "(p) ... infer.on_error = null: NULL for that row and the one whose input is over the limit, the small image's value" "$out" \
	'^p01_web_docs\.png:null p08_doc_on_desk\.jpg:null p21_curl_desc_small\.png:1$'
# A text model whose batches fail for a shape (a batch of 1 fixed inside)
# where its rows alone run: the first batch runs again row by row and the
# verdict is kept; later batches run their rows alone at once.
out=$(q -v VERBOSITY=verbose <<'EOF' 2>&1
\set ON_ERROR_STOP 0
SELECT infer.create_model('txt_b1', 'txt_b1/model.onnx', 'embed_text');
CREATE TABLE tb1 (n int, t text);
INSERT INTO tb1 VALUES (1, 'one two'), (2, 'three four five'), (3, 'a b c d e f'), (4, 'six');
SELECT 'first ' || string_agg(n || ':' || array_length(e, 1), ' ' ORDER BY n)
  FROM (SELECT n, infer.embed('txt_b1', t) AS e FROM tb1) s;
SELECT 'second ' || string_agg(n || ':' || array_length(e, 1), ' ' ORDER BY n)
  FROM (SELECT n, infer.embed('txt_b1', t) AS e FROM tb1) s;
CREATE TABLE tb1_batched AS SELECT n, infer.embed('txt_b1', t) AS e FROM tb1;
SET infer.enable_batching = off;
SELECT 'alike ' || count(*) FILTER (WHERE a.e = b.e) FROM tb1_batched a
  JOIN (SELECT n, infer.embed('txt_b1', t) AS e FROM tb1) b USING (n);
EOF
)
check "(p) a text model with a batch of 1 fixed inside: every row embedded, in both queries" "$out" \
	'^first 1:4 2:4 3:4 4:4$' '^second 1:4 2:4 3:4 4:4$'
check "(p) ... each row as it is one row at a time" "$out" '^alike 4$'
check "(p) ... one batch failed and ran again row by row, and the verdict was kept: later batches run their rows alone" \
	"$(grep -c 'text model "txt_b1/model\.onnx": a [0-9]*-row batch failed' "$tmp/wl.log") $(grep -c 'text model "txt_b1/model\.onnx": a batch failed where its rows alone run; rows run one at a time' "$tmp/wl.log")" \
	'^1 1$'
worker_up
add_up w "$port"
q -c "SELECT infer.drop_worker('wl')" >/dev/null
out=$(q -c "SELECT string_agg(f || ':' || coalesce(cardinality(v)::text, 'null'), ' ' ORDER BY f)
  FROM (SELECT f, infer.predict('dyn_concat', data) AS v FROM img JOIN pick USING (n)) s" 2>&1)
check "(p) ... on a worker without the setting, all three run" "$out" \
	'^p01_web_docs\.png:6 p08_doc_on_desk\.jpg:6 p21_curl_desc_small\.png:6$'
out=$(q -c "SELECT string_agg(f || ':' || coalesce(cardinality(v)::text, 'null'), ' ' ORDER BY f)
  FROM (SELECT f, infer.predict('dyn_convt', data) AS v FROM img JOIN pick USING (n)) s" 2>&1)
check "(p) ... dyn_convt's too" "$out" \
	'^p01_web_docs\.png:1 p08_doc_on_desk\.jpg:1 p21_curl_desc_small\.png:1$'

# --- (k) infer.load_model runs a test row -----------------------------------
# A load that succeeds is a pre-flight check: the model is run once on a
# synthetic row of its task (a grey image, the text "pg_infer"), so that
# what the first real row would meet fails the load, with that row's
# SQLSTATE and message and " (a test row at load)".  A second worker over
# the bundled models ($MODEL_DIR) loads them: the text models and the
# three OCR tasks.
worker_up
runs_before=$(grep -c 'request [0-9]*: [a-z_]* over [0-9]* rows' "$tmp/w.log")
out=$(q -v VERBOSITY=verbose <<'EOF' 2>&1
\set ON_ERROR_STOP 0
SELECT 'ok raw ' || infer.load_model('mlp', 'w')::text;
SELECT 'ok classify ' || infer.load_model('mlp_cls4', 'w')::text;
SELECT 'ok labels_file ' || infer.load_model('mlp_clsf', 'w')::text;
SELECT infer.create_model('two_in', 'two_inputs.onnx', 'raw');
SELECT infer.load_model('two_in', 'w');
SELECT infer.create_model('mlp_nolabels', 'mlp.onnx', 'classify');
SELECT infer.load_model('mlp_nolabels', 'w');
SELECT infer.load_model('mlp_cls5', 'w');
SELECT infer.load_model('f16_add', 'w');
SELECT infer.load_model('u8_add', 'w');
SELECT infer.load_model('bad_attr', 'w');
EOF
)
runs_after=$(grep -c 'request [0-9]*: [a-z_]* over [0-9]* rows' "$tmp/w.log")
first=$(q -v VERBOSITY=verbose <<'EOF' 2>&1
\set ON_ERROR_STOP 0
SELECT infer.predict('two_in', data) FROM img WHERE n = 1;
SELECT infer.classify('mlp_nolabels', data) FROM img WHERE n = 1;
EOF
)
check "(k) load_model of valid raw and classify models (labels, labels_file) succeeds" "$out" \
	'^ok raw $' '^ok classify $' '^ok labels_file $'
check "(k) two inputs: 22023 at load, the first row's message with the test row's context" "$out" \
	'ERROR:  22023: inference worker "w" at tcp://127\.0\.0\.1:[0-9]+ could not load model "two_in": model "two_inputs\.onnx" has 2 inputs; an image model needs exactly 1 \(a test row at load\)'
check "(k) ... the message the first row gets" "$first" \
	'ERROR:  22023: model "two_inputs\.onnx" has 2 inputs; an image model needs exactly 1$'
check "(k) a classify model without labels fails at load with the first row's SQLSTATE and message" \
	"$(grep 'could not load model "mlp_nolabels": ' <<<"$out" | sed 's/^ERROR:  \([0-9A-Z]*\): .*could not load model "mlp_nolabels": /\1: /; s/ (a test row at load)$//')|$(grep 'ERROR:' <<<"$first" | sed -n 2p | sed 's/^ERROR:  //')" \
	'^([0-9A-Z]{5}: .+)\|\1$'
check "(k) 5 labels for 4 scores: 22023 at load" "$out" \
	'ERROR:  22023: .*could not load model "mlp_cls5": classify model "mlp\.onnx" gives 4 scores but has 5 labels; register it with one label per score \(a test row at load\)'
check "(k) float16 arithmetic: 0A000 at load naming the node" "$out" \
	"ERROR:  0A000: .*could not load model \"f16_add\": model \"f16_add\\.onnx\" failed: Add node 'image too small': element type float16 is not supported \\(a test row at load\\)"
check "(k) a uint8 Add at opset 13: XX000 at load, as at its first run" "$out" \
	"ERROR:  XX000: .*could not load model \"u8_add\": model \"u8_add\\.onnx\" failed: Add node 'add_u8' \\(Add-13, opset 13\\): input 0 'u' \\(A\\) is uint8, which T does not allow .* \\(a test row at load\\)"
check "(k) a file that does not load: the load's error as before, no test row" "$out" \
	'ERROR:  XX001: .*could not load model "bad_attr": could not load model file "bad_attr\.onnx": '
check_not "(k) ... which names no test row" "$(grep 'bad_attr' <<<"$out")" 'a test row at load'
check "(k) the test rows are no requests: the worker logged no run for them" \
	"runs=$((runs_after - runs_before)) tests=$(grep -c 'failed its test row at load' "$tmp/w.log")" '^runs=0 tests=[1-9]'
check "(k) models that failed their test row stay resident (the load itself succeeded)" \
	"$(q -c "SELECT array_to_string(ARRAY(SELECT m FROM unnest(resident_models) AS m WHERE m IN ('two_inputs.onnx', 'f16_add.onnx') ORDER BY m), ',') FROM infer.workers WHERE name = 'w'")" \
	'^f16_add\.onnx,two_inputs\.onnx$'
bport=$(testenv_free_port)
start_named_worker wb "$bport" --model-dir "$MODEL_DIR" || exit 1
q -c "SELECT infer.add_worker('wb', 'tcp://127.0.0.1:$bport')" >/dev/null
out=$(q -v VERBOSITY=verbose <<'EOF' 2>&1
\set ON_ERROR_STOP 0
SELECT m || ' ok ' || infer.load_model(m, 'wb')::text
  FROM unnest(ARRAY['minilm', 'prompt_task', 'ppocr_det', 'ppocr_cls', 'ppocr_rec']) AS m;
SELECT infer.create_model('rec_nodict', 'ch_PP-OCRv4_rec_infer.onnx', 'recognize_text');
SELECT infer.load_model('rec_nodict', 'wb');
EOF
)
check "(k) the bundled text models and the three OCR tasks pass load_model" "$out" \
	'^minilm ok $' '^prompt_task ok $' '^ppocr_det ok $' '^ppocr_cls ok $' '^ppocr_rec ok $'
check "(k) a recognizer registered without its dictionary: 22023 at load, as infer.ocr's" "$out" \
	'ERROR:  22023: .*could not load model "rec_nodict": recognizer model "ch_PP-OCRv4_rec_infer\.onnx" has no labels_file \(its dictionary\) \(a test row at load\)'
q -c "SELECT infer.drop_worker('wb')" >/dev/null

echo "user_models: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
