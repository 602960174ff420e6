#!/usr/bin/env bash
# test_state.sh: process-level test of the worker's state publication,
# model residency and simulated device (DESIGN.md "Placement").
#
# Starts real infer-worker processes on 127.0.0.1, most of them with
# --simulate (a profile written here: models that "compute" by sleeping)
# and drives them with worker-client, checking: a PONG names the state
# endpoint (an ephemeral port on the request endpoint's host, or
# --state-listen); a subscriber gets MSG_STATE at 10 Hz or more with seq
# rising by one; queue length, backlog and busy threads rise while a slow
# request runs and another waits, and fall to 0 after; measured timings
# and load times appear; simulated rows get their placeholder answers;
# under --gpu-memory, loading a second model that does not fit beside the
# first evicts it, a model a queued request needs is neither evicted (the
# load that would need it fails with 53200 naming it) nor unloaded
# (55006), a model larger than the cap fails with 53200 (load and run);
# unload works; a cancel of a running request abandons it (no reply);
# SIGTERM abandons a simulated run (57P01) and the worker
# exits 0 at once; bad --gpu-memory and --simulate values are refused; a
# real (not simulated) worker evicts by the engine's weight bytes.
#
# Prints "state: N passed, M failed"; exits 1 on any failure.  Every
# process it starts is killed by pid on exit.
set -u
cd "$(dirname "$0")/../.."

# shellcheck source=tests/integration/testlib.sh
. tests/integration/testlib.sh
require_bins state "$WORKER" "$CLIENT"

# The simulated models: sizes in bytes, [batch, ms] points; 3 GB/s loads.
SIM=$tmp/sim
mkdir -p "$SIM"
cat >"$SIM/profile.json" <<'EOF'
{
  "load_bandwidth": 3e9,
  "output_values": 4,
  "comment": "unknown keys are ignored",
  "models": {
    "slow.onnx": {"bytes": 100000000, "compute_ms": [[1, 1500]]},
    "a.onnx":    {"bytes": 300000000, "compute_ms": [[1, 20], [8, 90]]},
    "b.onnx":    {"bytes": 300000000, "compute_ms": [[1, 30]]},
    "huge.onnx": {"bytes": 2000000000, "compute_ms": [[1, 10]]}
  }
}
EOF
printf 'row one' >"$SIM/r1"
printf 'row two' >"$SIM/r2"
R1=$SIM/r1
R2=$SIM/r2

# --- command line -----------------------------------------------------------
out=$("$WORKER" --help 2>&1)
check "--help explains the new flags" "$out" '--state-listen ENDPOINT' \
	'--gpu-memory BYTES' '--simulate PROFILE.json'
out=$("$WORKER" --listen 'tcp://127.0.0.1:*' --model-dir "$SIM" --gpu-memory 12Q 2>&1)
check "a bad --gpu-memory is refused (exit 2)" "$out rc=$?" 'rc=2' 'gpu-memory must be a byte count'
echo '{"models": {"x.onnx": {"bytes": 1}}}' >"$tmp/bad.json"
out=$("$WORKER" --listen 'tcp://127.0.0.1:*' --model-dir "$SIM" --simulate "$tmp/bad.json" 2>&1)
check "a profile model without compute_ms is refused (exit 1)" "$out rc=$?" 'rc=1' \
	'bad.json": a model needs compute_ms points'

# --- state publication ------------------------------------------------------
start_worker "$tmp/sim.log" --model-dir "$SIM" --simulate "$SIM/profile.json" \
	--gpu-memory 500M --max-queue-delay-us 0 || exit 1
C=("$CLIENT" --endpoint "$EP")
port=${EP##*:}
out=$("${C[@]}" ping)
check "PONG names the state endpoint: another port of the same host" "$out" \
	'state_endpoint=tcp://127\.0\.0\.1:[0-9]+ ' 'cap=524288000 ' 'device=cpu '
check_not "... not the request port" "$out" "state_endpoint=tcp://127\.0\.0\.1:$port "
check "PONG lists the profile's models as known, with expected load times" "$out" \
	'models=.*a\.onnx:known:300000000:100\.0:0:0' 'huge\.onnx:known:2000000000'

out=$("${C[@]}" --timeout-ms 2000 state 12)
check "a subscriber gets 12 state messages" "$out $(grep -c '^STATE ' <<<"$out") messages" \
	'^STATE .*seq=' ' 12 messages$'
rate=$(awk '/^STATE/ { sub("t_ms=", "", $2); if (n == 0) first = $2; last = $2; n++ }
	END { if (n > 1) printf "%.1f", (n - 1) * 1000 / (last - first); else print 0 }' <<<"$out")
seqs=$(grep -o ' seq=[0-9]*' <<<"$out" | cut -d= -f2 | awk 'NR > 1 && $1 != prev + 1 { bad = 1 } { prev = $1 } END { print bad ? "gaps" : "consecutive" }')
check "... at 10 Hz or more (measured $rate Hz), seq rising by one" \
	"rate=$rate seq=$seqs" 'rate=(1[0-9]|[2-9][0-9]|[0-9]{3,})\.' 'seq=consecutive'

# --- queue, backlog and timings ---------------------------------------------
out=$("${C[@]}" --timeout-ms 5000 predict slow.onnx "$R1")
check "a simulated predict answers with a zero vector of output_values floats" "$out" \
	'^ROW 0 id=100 ok=1 n_values=4 frame_bytes=16 values=0,0,0,0 '
out=$("${C[@]}" ping)
check "the run's timing appears (slow.onnx, batch 1, about 1500 ms)" "$out" \
	'timings=(.*;)?slow\.onnx@1=(149[0-9]|15[0-9][0-9])\.[0-9]/1' \
	'models=slow\.onnx:resident:100000000:3[0-9]\.[0-9]:0:'
check "... and the counters" "$out" 'served=1 batches=1 rows=1 ' 'queue=0 backlog_ms=0\.000'

"${C[@]}" --timeout-ms 5000 predict slow.onnx "$R1" >"$tmp/slow1.out" &
c1=$!
pids+=("$c1")
sleep 0.2
"${C[@]}" --timeout-ms 5000 predict slow.onnx "$R2" >"$tmp/slow2.out" &
c2=$!
pids+=("$c2")
sleep 0.3
during=$("${C[@]}" --timeout-ms 1000 state 1)
wait "$c1" "$c2"
after=$("${C[@]}" --timeout-ms 1000 state 1)
check "while one slow request runs and one waits: queue=2, backlog over 1.5 s, busy" \
	"$during" '^STATE .*queue=2 backlog_ms=(1[5-9][0-9]{2}|[2-9][0-9]{3})\.' ' busy=1 ' \
	'models=slow\.onnx:resident:100000000:[0-9.]+:2:'
check "after both: queue=0, backlog 0, idle" "$after" \
	'^STATE .*queue=0 backlog_ms=0\.000 served=3 ' ' busy=0 ' 'slow\.onnx:resident:100000000:[0-9.]+:0:'
check "both slow requests got their rows" "$(cat "$tmp/slow1.out" "$tmp/slow2.out")" \
	'^ROW 0 id=100 ok=1 n_values=4' "$(printf 'ok=1.*\n.*\n.*ok=1')"

out=$("${C[@]}" classify a.onnx yes,no "$R1" "$R2")
check "simulated classify answers sim:MODEL:HASH per row" "$out" \
	'^ROW 0 id=100 ok=1 .*text=sim:a\.onnx:[0-9a-f]{16}$' '^ROW 1 id=101 ok=1 .*text=sim:a\.onnx:[0-9a-f]{16}$'
h1=$(grep '^ROW 0' <<<"$out" | grep -o 'sim:.*')
h2=$(grep '^ROW 1' <<<"$out" | grep -o 'sim:.*')
again=$("${C[@]}" classify a.onnx yes,no "$R2" | grep -o 'sim:.*')
check "... distinct rows give distinct answers, the same row the same" \
	"$h1 $h2 $again" "^sim:a\.onnx:[0-9a-f]+ $h2 $h2$"
check_not "..." "$h1" "^$h2$"
out=$("${C[@]}" ping)
# (a sleep can only overrun: on a loaded machine by tens of ms)
check "timings of a.onnx at batch 2 (interpolated profile: 30 ms)" "$out" \
	'a\.onnx@2=(2[89]|[3-7][0-9])\.[0-9]/1' 'a\.onnx@1=(19|[2-6][0-9])\.[0-9]/1'

# --- residency under --gpu-memory 500M ---------------------------------------
check "unload of a model not in use" "$("${C[@]}" unload slow.onnx)" \
	'^PONG .*resident=a\.onnx request_id' 'slow\.onnx:known:100000000:'
check "load b.onnx (300 MB beside a.onnx's 300 MB: over 500M) evicts a.onnx" \
	"$("${C[@]}" --timeout-ms 3000 load b.onnx)" '^PONG .*resident=b\.onnx request_id' \
	'a\.onnx:known:300000000:' 'b\.onnx:resident:300000000:(9[0-9]|1[0-9][0-9])\.[0-9]:0:'
check "the log says so" "$(cat "$tmp/sim.log")" 'evicting model "a\.onnx" \(300000000 bytes'

# slow.onnx runs; a request for b.onnx waits; a.onnx would need b's room.
"${C[@]}" --timeout-ms 5000 predict slow.onnx "$R1" >"$tmp/run.out" &
c1=$!
pids+=("$c1")
sleep 0.3
"${C[@]}" --timeout-ms 5000 predict b.onnx "$R2" >"$tmp/queued.out" &
c2=$!
pids+=("$c2")
sleep 0.2
"${C[@]}" --timeout-ms 5000 load a.onnx >"$tmp/load.out" &
c3=$!
pids+=("$c3")
sleep 0.1
unload=$("${C[@]}" unload b.onnx)
wait "$c1" "$c2" "$c3"
check "unloading a model a queued request needs is refused (55006)" "$unload" \
	'^ERROR sqlstate=55006 message=model "b\.onnx" is in use'
check "loading a model that fits only by evicting one in use fails with 53200" \
	"$(cat "$tmp/load.out")" '^ERROR sqlstate=53200 message=model "a\.onnx" needs 300000000 bytes' \
	'in use: .*"b\.onnx" \(300000000 bytes\)' 'hint=.*--gpu-memory \(now 524288000 bytes\)'
check "... and the queued request for b.onnx is answered" "$(cat "$tmp/queued.out")" \
	'^ROW 0 id=100 ok=1 n_values=4'
check "b.onnx stayed resident" "$("${C[@]}" ping)" '^PONG .*resident=(.*,)?b\.onnx[ ,]'

out=$("${C[@]}" load huge.onnx)
check "a model larger than the cap fails with 53200" "$out" \
	'^ERROR sqlstate=53200 message=model "huge\.onnx" needs 2000000000 bytes, more than the 524288000 bytes' \
	'hint=Start the worker with a larger --gpu-memory'
out=$("${C[@]}" predict huge.onnx "$R1")
check "... also when a request needs it" "$out" '^ERROR sqlstate=53200 message=model "huge\.onnx"'
check "a model missing from the profile is a missing model file (58P01)" \
	"$("${C[@]}" predict nope.onnx "$R1")" '^ERROR sqlstate=58P01 message=.*"nope\.onnx" is not in the simulation profile'
check "the worker still answers" "$("${C[@]}" ping)" '^PONG '

# A cancel of a request that is running: no reply, and the run is abandoned.
t0=$(date +%s%N)
out=$("${C[@]}" --timeout-ms 800 --cancel-after-ms 300 predict slow.onnx "$R1")
after=$("${C[@]}" ping)
t1=$(date +%s%N)
check "a cancel of a running request: no reply, the run abandoned, the worker idle at once" \
	"$out $after ms=$(((t1 - t0) / 1000000))" '^NOREPLY' 'queue=0 backlog_ms=0\.000' \
	' busy=0 ' 'ms=([0-9]{1,3}|1[0-3][0-9]{2})$'
check "the log says the cancel dropped the running request" "$(cat "$tmp/sim.log")" \
	'cancel dropped the running request'

"${C[@]}" --timeout-ms 5000 predict slow.onnx "$R1" >"$tmp/term.out" &
c1=$!
pids+=("$c1")
sleep 0.3
t0=$(date +%s%N)
kill -TERM "$WPID"
wait "$WPID"
rc=$?
t1=$(date +%s%N)
wait "$c1"
check "SIGTERM during a simulated run: 57P01, exit 0 within 1 s" \
	"$(cat "$tmp/term.out") rc=$rc ms=$(((t1 - t0) / 1000000))" \
	'^ERROR sqlstate=57P01 message=the worker is shutting down' 'rc=0 ms=[0-9]{1,3}$'

# --- --state-listen, and a real worker under a cap ----------------------------
SP=$(testenv_free_port)
start_worker "$tmp/real.log" --model-dir "$MODEL_DIR" --state-listen "tcp://127.0.0.1:$SP" \
	--gpu-memory 5M || exit 1
C=("$CLIENT" --endpoint "$EP")
check "--state-listen is the endpoint a PONG names" "$("${C[@]}" ping)" \
	"state_endpoint=tcp://127\.0\.0\.1:$SP " 'cap=5242880 '
check "the state socket publishes there" \
	"$("${C[@]}" --state-endpoint "tcp://127.0.0.1:$SP" --timeout-ms 1000 state 2)" \
	'^STATE .*seq=' "$(printf '^STATE.*\n^STATE')"
"${C[@]}" --timeout-ms 20000 load ch_PP-OCRv4_det_infer.onnx >/dev/null
out=$("${C[@]}" --timeout-ms 20000 load ch_ppocr_mobile_v2.0_cls_infer.onnx)
check "real models: the classifier does not fit beside the detector under 5M, which goes" \
	"$out" '^PONG .*resident=ch_ppocr_mobile_v2\.0_cls_infer\.onnx request_id' \
	'ch_PP-OCRv4_det_infer\.onnx:known:[0-9]{7}:'
check "the recognizer (10 MB) is larger than the cap: 53200" \
	"$("${C[@]}" --timeout-ms 20000 load ch_PP-OCRv4_rec_infer.onnx)" \
	'^ERROR sqlstate=53200 message=model "ch_PP-OCRv4_rec_infer\.onnx" needs [0-9]+ bytes, more than the 5242880'

for p in "${workers[@]}"; do
	testenv_stop_pid "$p" TERM
	wait "$p" 2>/dev/null
done
echo "state: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
