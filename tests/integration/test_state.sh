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
# a request whose model fits the cap but not beside the resident models
# that queued requests need waits (younger runnable work goes first) and
# then runs, evicting one model, instead of failing with 53200;
# two-model requests that each wait for a model the other's queued
# request pins both run (the oldest evicts what only queued work needs);
# unload works; a cancel of a running request abandons it (no reply);
# a stop (SIGSTOP, SIGCONT) during a run after its model loaded drops the
# run's time and keeps the load's; SIGTERM abandons a simulated run (57P01) and the worker
# exits 0 at once; the residency counters (model_loads, model_evictions,
# model_hits, model_misses) count a load, a hit, and a miss after an
# eviction exactly; bad --gpu-memory and --simulate values are refused; a
# real (not simulated) worker evicts by the engine's weight bytes, and a
# model it never loaded waits for room by its file's size; a real
# worker's timings hold each model call at its own rows (OCR: detector at
# 1 row, classifier and recognizer at the lines; predict 16 + 4 rows;
# embed by length), within the run's compute time.
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
    "huge.onnx": {"bytes": 2000000000, "compute_ms": [[1, 10]]},
    "late.onnx": {"bytes": 300000000, "compute_ms": [[1, 1500]]}
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
check "... and the result counts itself the worker's first answer (served=1)" "$out" \
	'^RESULT rows=1 frames=1 request_id=[0-9]+ served=1$'
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
check "... the first sent answered second and third (served=2, served=3)" \
	"$(grep -ho ' served=[0-9]*' "$tmp/slow1.out" "$tmp/slow2.out" | tr -d '\n')" '^ served=2 served=3$'

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

# Two models that differ in name only (one file, kind and labels) share a
# run: both requests queue behind a slow one, then run as one group, and
# each row's answer names its own request's model.
merges() { grep -c 'INFO merged 2 requests (2 rows) into one classify run' "$tmp/sim.log"; }
m0=$(merges)
"${C[@]}" --timeout-ms 5000 predict slow.onnx "$R1" >/dev/null &
c1=$!
pids+=("$c1")
sleep 0.3
out=$("${C[@]}" --timeout-ms 5000 --names name_x,name_y classify a.onnx yes,no "$R1" + "$R2")
wait "$c1"
check "two models of one file, named apart, run as one group (the log: one more merge)" \
	"$m0 $(merges)" "^$m0 $((m0 + 1))\$"
check "... each row answered under its own model's name" \
	"$(grep -o 'text=.*' <<<"$out" | tr '\n' ' ')" \
	"^text=${h1/a.onnx/name_x} text=${h2/a.onnx/name_y} \$"

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

# A stop of the process during a run, after the run's model has loaded
# (late.onnx: 100 ms to load, then 1500 ms to run; stopped 600 ms after
# the send, for 1 s): the run's time is not kept, the load's is (it ended
# before the stop; every load of the job lost its time before).
"${C[@]}" --timeout-ms 8000 predict late.onnx "$R1" >"$tmp/late.out" &
c1=$!
pids+=("$c1")
sleep 0.6
kill -STOP "$WPID"
sleep 1
kill -CONT "$WPID"
wait "$c1"
out=$("${C[@]}" ping)
check "a stop during a run, after its model loaded: the run's time is dropped, the load's kept" \
	"$(cat "$tmp/late.out") $out load_lines=$(grep -c 'late\.onnx": a load of' "$tmp/sim.log") run_lines=$(grep -c 'a run of 1 rows took .* across a stop' "$tmp/sim.log")" \
	'^ROW 0 id=100 ok=1 ' 'late\.onnx:resident:300000000:(9[0-9]|1[0-4][0-9])\.[0-9]:' \
	' load_lines=0 run_lines=1$'

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

# --- residency counters: a load, a hit, a miss after an eviction ---------------
start_worker "$tmp/count.log" --model-dir "$SIM" --simulate "$SIM/profile.json" \
	--gpu-memory 500M --max-queue-delay-us 0 || exit 1
C=("$CLIENT" --endpoint "$EP")
check "a fresh worker: no loads, evictions, hits or misses" "$("${C[@]}" ping)" \
	' model_loads=0 model_evictions=0 model_hits=0 model_misses=0 '
"${C[@]}" predict a.onnx "$R1" >/dev/null
check "the first use of a.onnx loads it: a miss" "$("${C[@]}" ping)" \
	' model_loads=1 model_evictions=0 model_hits=0 model_misses=1 '
"${C[@]}" predict a.onnx "$R2" >/dev/null
check "the second finds it resident: a hit" "$("${C[@]}" ping)" \
	' model_loads=1 model_evictions=0 model_hits=1 model_misses=1 '
"${C[@]}" predict b.onnx "$R1" >/dev/null
check "b.onnx (300 MB beside a's 300 MB, over 500M) evicts a.onnx: a load, an eviction, a miss" \
	"$("${C[@]}" ping)" ' model_loads=2 model_evictions=1 model_hits=1 model_misses=2 '
"${C[@]}" predict a.onnx "$R1" "$R2" >/dev/null
out=$("${C[@]}" --timeout-ms 1000 state 1)
check "a.onnx again after its eviction: a miss, and b.onnx evicted (in the published state)" \
	"$out" '^STATE .* model_loads=3 model_evictions=2 model_hits=1 model_misses=3 '
check "a request of two rows is one use (one run)" "$("${C[@]}" ping)" \
	' model_hits=1 model_misses=3 ' 'served=4 '
testenv_stop_pid "$WPID" TERM

# --- a request whose model needs room that queued work holds waits ------------
# wa, wb, wc: 200 MB each, two fit under 500M.  wa (resident, 1.2 s) runs;
# a request for wc queues, then one for wa and one for wb: both resident
# models are pinned when wa's run ends, so wc waits (the one for wa runs
# first), then runs evicting wa, the least recently used model no queued
# request needs.  A second request for wc, cancelled while it waits, is
# dropped.  wbig (600 MB) never fits: it fails at once.
cat >"$SIM/wait.json" <<'EOF'
{
  "load_bandwidth": 3e9,
  "output_values": 4,
  "models": {
    "wa.onnx":   {"bytes": 200000000, "compute_ms": [[1, 1200]]},
    "wb.onnx":   {"bytes": 200000000, "compute_ms": [[1, 300]]},
    "wc.onnx":   {"bytes": 200000000, "compute_ms": [[1, 50]]},
    "wbig.onnx": {"bytes": 600000000, "compute_ms": [[1, 10]]}
  }
}
EOF
start_worker "$tmp/wait.log" --model-dir "$SIM" --simulate "$SIM/wait.json" \
	--gpu-memory 500M --max-queue-delay-us 0 || exit 1
C=("$CLIENT" --endpoint "$EP")
"${C[@]}" --timeout-ms 3000 load wa.onnx >/dev/null
check "wa.onnx and wb.onnx resident (400 of 500 MB)" \
	"$("${C[@]}" --timeout-ms 3000 load wb.onnx)" '^PONG .*resident=(wb\.onnx,wa\.onnx|wa\.onnx,wb\.onnx) ' \
	' model_loads=2 model_evictions=0 '
h1=$(printf 'row one' | sha256sum | cut -c1-16)
h2=$(printf 'row two' | sha256sum | cut -c1-16)
"${C[@]}" --timeout-ms 8000 classify wa.onnx yes,no "$R1" >"$tmp/wa1.out" &
pids+=("$!")
w1=$!
sleep 0.2
"${C[@]}" --timeout-ms 8000 classify wc.onnx yes,no "$R1" >"$tmp/wc.out" &
pids+=("$!")
w2=$!
sleep 0.1
"${C[@]}" --timeout-ms 8000 classify wa.onnx yes,no "$R2" >"$tmp/wa2.out" &
pids+=("$!")
w3=$!
sleep 0.1
"${C[@]}" --timeout-ms 8000 classify wb.onnx yes,no "$R2" >"$tmp/wb.out" &
pids+=("$!")
w4=$!
sleep 0.3
before=$("${C[@]}" --timeout-ms 1000 state 1)
"${C[@]}" --timeout-ms 1000 --cancel-after-ms 300 classify wc.onnx yes,no "$R2" >"$tmp/wc2.out" &
pids+=("$!")
w5=$!
# wa's first run ends at about 1.2 s; its second runs until about 2.4 s
sleep 0.9
during=$("${C[@]}" --timeout-ms 1000 state 1)
wait "$w1" "$w2" "$w3" "$w4" "$w5"
check "while wa.onnx runs: 4 requests held, wc.onnx known (not resident) and needed once" \
	"$before" '^STATE .*queue=4 ' ' busy=1 ' 'wc\.onnx:known:200000000:[0-9.]+:1:' \
	'wa\.onnx:resident:200000000:[0-9.]+:2:' 'wb\.onnx:resident:200000000:[0-9.]+:1:'
check "wa.onnx's second request ran before wc.onnx's (which waits, still queued)" \
	"$during" '^STATE .*queue=3 ' ' busy=1 ' 'wc\.onnx:known:200000000:[0-9.]+:1:' \
	'wa\.onnx:resident:200000000:[0-9.]+:1:' 'wb\.onnx:resident:200000000:[0-9.]+:1:'
check "a cancel of a request that waits for memory drops it (no reply)" \
	"$(cat "$tmp/wc2.out")" '^NOREPLY'
check "the request for wc.onnx waited for memory and got its answer (no 53200)" \
	"$(cat "$tmp/wc.out")" "^ROW 0 id=100 ok=1 .*text=sim:wc\\.onnx:$h1\$"
check_not "..." "$(cat "$tmp/wc.out")" 'sqlstate'
check "the others got theirs" "$(cat "$tmp/wa1.out" "$tmp/wa2.out" "$tmp/wb.out")" \
	"^ROW 0 id=100 ok=1 .*text=sim:wa\\.onnx:$h1\$" "^ROW 0 id=100 ok=1 .*text=sim:wa\\.onnx:$h2\$" \
	"^ROW 0 id=100 ok=1 .*text=sim:wb\\.onnx:$h2\$"
out=$("${C[@]}" ping)
check "one eviction (wa.onnx, unpinned once its requests ran), wc.onnx and wb.onnx resident" \
	"$out" ' model_loads=3 model_evictions=1 ' 'served=4 ' 'queue=0 ' \
	'wa\.onnx:known:200000000:' 'wc\.onnx:resident:200000000:[0-9.]+:0:' \
	'wb\.onnx:resident:200000000:[0-9.]+:0:'
check "the log names the eviction" "$(cat "$tmp/wait.log")" \
	'evicting model "wa\.onnx" \(200000000 bytes.* to make room for "wc\.onnx"'
t0=$(date +%s%N)
out=$("${C[@]}" --timeout-ms 3000 classify wbig.onnx yes,no "$R1")
t1=$(date +%s%N)
check "a model larger than the cap still fails at once with 53200" \
	"$out ms=$(((t1 - t0) / 1000000))" \
	'^ERROR sqlstate=53200 message=model "wbig\.onnx" needs 600000000 bytes, more than the 524288000 bytes' \
	'ms=[0-9]{1,3}$'
testenv_stop_pid "$WPID" TERM

# --- two groups that each wait for a model the other pins ---------------------
# Two-model requests (an OCR fragment without classifier: DET + REC).
# Resident: a and b (400 of 500 MB); while s runs, A (a + c) queues, then B
# (b + d): each needs one model beside its own, and the other's is pinned
# by the other's queued request.  Once s is done both wait and nothing
# runs: the oldest (A) runs, evicting s and b (only queued work needs b),
# and B runs after it; neither fails with 53200.
cat >"$SIM/mutual.json" <<'EOF'
{
  "load_bandwidth": 3e9,
  "output_values": 4,
  "models": {
    "a.onnx": {"bytes": 200000000, "compute_ms": [[1, 20]]},
    "b.onnx": {"bytes": 200000000, "compute_ms": [[1, 20]]},
    "c.onnx": {"bytes": 200000000, "compute_ms": [[1, 20]]},
    "d.onnx": {"bytes": 200000000, "compute_ms": [[1, 20]]},
    "s.onnx": {"bytes": 50000000, "compute_ms": [[1, 1200]]}
  }
}
EOF
printf 'x\n' >"$SIM/dict.txt"
start_worker "$tmp/mutual.log" --model-dir "$SIM" --simulate "$SIM/mutual.json" \
	--gpu-memory 500M --max-queue-delay-us 0 || exit 1
C=("$CLIENT" --endpoint "$EP")
for m in c d a; do "${C[@]}" --timeout-ms 3000 load "$m.onnx" >/dev/null; done
check "a.onnx and b.onnx resident, c.onnx and d.onnx known" \
	"$("${C[@]}" --timeout-ms 3000 load b.onnx)" '^PONG .*resident=(b\.onnx,a\.onnx|a\.onnx,b\.onnx) ' \
	'c\.onnx:known:200000000:' 'd\.onnx:known:200000000:'
"${C[@]}" --timeout-ms 5000 classify s.onnx yes,no "$R1" >"$tmp/ms.out" &
pids+=("$!")
w1=$!
sleep 0.3
"${C[@]}" --timeout-ms 6000 --ocr-models a.onnx,none,c.onnx,dict.txt ocr "$R1" >"$tmp/mA.out" &
pids+=("$!")
w2=$!
sleep 0.1
"${C[@]}" --timeout-ms 6000 --ocr-models b.onnx,none,d.onnx,dict.txt ocr "$R1" >"$tmp/mB.out" &
pids+=("$!")
w3=$!
wait "$w1" "$w2" "$w3"
check "A (a.onnx + c.onnx) and B (b.onnx + d.onnx), each waiting for a model the other pins, both run" \
	"$(cat "$tmp/mA.out" "$tmp/mB.out")" "^ROW 0 id=100 ok=1 .*text=sim:c\\.onnx:$h1\$" \
	"^ROW 0 id=100 ok=1 .*text=sim:d\\.onnx:$h1\$"
check_not "... and neither fails with 53200" "$(cat "$tmp/mA.out" "$tmp/mB.out")" 'sqlstate'
check "the log says why b.onnx went although queued work needs it" "$(cat "$tmp/mutual.log")" \
	'every queued request waits for memory that only queued work holds: running the oldest' \
	'evicting model "b\.onnx" \(200000000 bytes, needed by 1 queued requests\) to make room for "c\.onnx"'
testenv_stop_pid "$WPID" TERM

# --- a waiting group is not starved by a stream for a resident model -----------
# Cap 300 MB: a (resident, 200 MB) and c (200 MB) do not fit together.
# Three clients keep a's queue from ever emptying (--max-batch 1, 200 ms a
# run), so a stays pinned; c waits.  After GATE_AGING_US (2 s) younger
# groups stop starting, a's queue drains and c runs: it answers within
# about 2 s plus a few runs, where it used to wait for as long as the
# stream went on.
cat >"$SIM/starve.json" <<'EOF'
{ "load_bandwidth": 3e9, "output_values": 4,
  "models": { "a.onnx": {"bytes": 200000000, "compute_ms": [[1, 200]]},
              "c.onnx": {"bytes": 200000000, "compute_ms": [[1, 20]]} } }
EOF
start_worker "$tmp/starve.log" --model-dir "$SIM" --simulate "$SIM/starve.json" \
	--gpu-memory 300M --max-queue-delay-us 0 --max-batch 1 || exit 1
C=("$CLIENT" --endpoint "$EP")
"${C[@]}" --timeout-ms 3000 load c.onnx >/dev/null
"${C[@]}" --timeout-ms 3000 load a.onnx >/dev/null
stream_stop=$tmp/stream.stop
stream() {
	while [ ! -e "$stream_stop" ]; do
		"${C[@]}" --timeout-ms 8000 classify a.onnx yes,no "$R1" >/dev/null
	done
}
streams=()
for _ in 1 2 3; do
	stream &
	pids+=("$!")
	streams+=("$!")
done
sleep 0.5
t0=$(date +%s%N)
out=$("${C[@]}" --timeout-ms 8000 classify c.onnx yes,no "$R1")
ms=$(ms_since "$t0")
touch "$stream_stop"
wait "${streams[@]}"
check "c.onnx, waiting for a.onnx's room under a stream of a.onnx requests, runs (${ms} ms)" \
	"$out" "^ROW 0 id=100 ok=1 .*text=sim:c\\.onnx:$h1\$"
if [ "$ms" -lt 6000 ]; then
	pass "... within 6 s (${ms} ms)"
else
	fail "... within 6 s (${ms} ms)"
fi
testenv_stop_pid "$WPID" TERM

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

# A model never loaded since the start waits for room as a known one does
# (its file's size the estimate): under 100M, an embed of MiniLM (90 MB)
# sent while an OCR run holds the OCR models (16 MB) waits for the run,
# then evicts them.  (It failed with 53200 "the resident models are in
# use" until the worker had loaded it once: after every restart.)
if start_worker "$tmp/real2.log" --model-dir "$MODEL_DIR" --gpu-memory 100M --threads 1; then
	C2=("$CLIENT" --endpoint "$EP" --timeout-ms 60000)
	OD=${SHARED:-../shared}/data/ocr
	printf 'a first sentence to embed' >"$tmp/first.txt"
	"${C2[@]}" ocr "$OD/p08_doc_on_desk.jpg" "$OD/p38_multi_noticeboard.jpg" >"$tmp/ocr2.out" &
	c1=$!
	pids+=("$c1")
	for _ in $(seq 100); do
		grep -q 'loaded model "ch_PP-OCRv4_rec_infer.onnx"' "$tmp/real2.log" && break
		sleep 0.05
	done
	out=$("${C2[@]}" embed minilm/model.onnx "$tmp/first.txt")
	wait "$c1"
	check "a first load under the cap waits for the run that holds the room, then evicts" \
		"$out $(cat "$tmp/ocr2.out") evicted=$(grep -c 'evicting model "ch_PP-OCRv4_.*to make room for "minilm/model.onnx"' "$tmp/real2.log")" \
		'^ROW 0 id=100 ok=1 n_values=384 ' 'ROW 1 id=101 ok=1 ' 'evicted=[12]$'
	check_not "... no 53200" "$out" 'sqlstate=53200'
else
	fail "real worker under 100M starts"
fi

# --- measured timings of real runs: each model call at its own rows ----------
# A real worker times every engine call (worker/fragment.h "Timings"): an
# OCR image gives one detector call of 1 row and classifier and recogniser
# calls of its detected lines; predict and embed give one call per batch.
# Models are loaded first, so the run's compute time holds no load.
# timing_sum TIMINGS: the sum of MS x RUNS over F@BATCH=MS/RUNS entries.
timing_sum() {
	tr ';' '\n' <<<"$1" | awk -F'[=/]' 'NF == 3 { s += $2 * $3 } END { printf "%.1f", s }'
}
# timing_rows TIMINGS FILE: the rows of FILE's calls (sum of BATCH x RUNS).
timing_rows() {
	tr ';' '\n' <<<"$1" | awk -F'[@=/]' -v f="$2" '$1 == f { s += $2 * $4 } END { print s + 0 }'
}
# compute_ms LOG N: the compute time in the N-th "request ...: KIND over" line of LOG.
compute_ms() {
	grep -o 'over [0-9]* rows ([0-9]* ok, [0-9]* failed) in [0-9.]* ms' "$1" |
		sed -n "${2}p" | sed 's/.* in \([0-9.]*\) ms/\1/'
}
DET=ch_PP-OCRv4_det_infer.onnx
CLS=ch_ppocr_mobile_v2.0_cls_infer.onnx
REC=ch_PP-OCRv4_rec_infer.onnx
IMG=${SHARED:-../shared}/data/ocr/p19_footer_small.png
start_worker "$tmp/timed.log" --model-dir "$MODEL_DIR" || exit 1
C=("$CLIENT" --endpoint "$EP")
for m in "$DET" "$CLS" "$REC"; do
	"${C[@]}" --timeout-ms 20000 load "$m" >/dev/null
done
out=$("${C[@]}" --timeout-ms 120000 ocr "$IMG")
tim=$("${C[@]}" ping | grep -o ' timings=[^ ]*' | cut -d= -f2-)
boxes=$("${C[@]}" --timeout-ms 120000 detect "$IMG" | grep -o '"box"' | wc -l)
ms=$(compute_ms "$tmp/timed.log" 1)
sum=$(timing_sum "$tim")
check "OCR of one image: text, and the detector timed once at 1 row" "$out
$tim" '^ROW 0 id=100 ok=1 ' "(^|;)${DET//./\\.}@1=[0-9]+\.[0-9]/1(;|$)"
check "... classifier and recogniser timed at the image's $boxes detected lines, not at 1 row" \
	"boxes=$boxes cls=$(timing_rows "$tim" "$CLS") rec=$(timing_rows "$tim" "$REC") $tim" \
	'^boxes=([2-9]|[1-9][0-9]+) ' "cls=$boxes rec=$boxes " \
	"${CLS//./\\.}@$((boxes < 6 ? boxes : 6))=" "${REC//./\\.}@$((boxes < 6 ? boxes : 6))="
check_not "... each call its own time (an equal split gives one figure thrice)" \
	"$(tr ';' '\n' <<<"$tim" | cut -d= -f2 | cut -d/ -f1 | sort -u | wc -l)" '^[12]$'
if awk -v s="$sum" -v m="$ms" 'BEGIN { exit !(s > 0 && m != "" && s <= m) }'; then
	pass "... the calls' times ($sum ms) lie within the run's compute time ($ms ms)"
else
	fail "... the calls' times ($sum ms) lie within the run's compute time ($ms ms)" "$tim"
fi

# predict: 20 rows go 16 a call, so two calls of 16 and 4 rows (not a mean
# of 10), and one of 1 row: after the load, the first batch's last row run
# alone (the classifier's output [-1, 2] does not say where its rows are:
# docs/sql.md, "Models")
start_worker "$tmp/timed2.log" --model-dir "$MODEL_DIR" || exit 1
C=("$CLIENT" --endpoint "$EP")
"${C[@]}" --timeout-ms 20000 load "$CLS" >/dev/null
imgs=()
for _ in $(seq 20); do imgs+=("$IMG"); done
out=$("${C[@]}" --timeout-ms 120000 --input-size 48x192 predict "$CLS" "${imgs[@]}")
pong=$("${C[@]}" ping)
tim=$(grep -o ' timings=[^ ]*' <<<"$pong" | cut -d= -f2-)
ms=$(compute_ms "$tmp/timed2.log" 1)
sum=$(timing_sum "$tim")
check "predict over 20 rows: model calls timed at 16 and 4 rows, and the layout check's 1 row" \
	"$(grep -c '^ROW .* ok=1 ' <<<"$out") rows ok; $pong" '^20 rows ok' ' model_runs=3 ' \
	"timings=(.*;)?${CLS//./\\.}@16=[0-9]+\.[0-9]/1(;|$)" "(=|;)${CLS//./\\.}@4=[0-9]+\.[0-9]/1(;| |$)" \
	"(=|;)${CLS//./\\.}@1=[0-9]+\.[0-9]/1(;| |$)"
check_not "... and no mean call at 10 rows" "$tim" '@10='
if awk -v s="$sum" -v m="$ms" 'BEGIN { exit !(s > 0 && m != "" && s <= m) }'; then
	pass "... the calls' times ($sum ms) lie within the run's compute time ($ms ms)"
else
	fail "... the calls' times ($sum ms) lie within the run's compute time ($ms ms)" "$tim"
fi

# embed: three 4-token texts batch together; a 42-token one runs alone
if [ -f "$MODEL_DIR/minilm/model.onnx" ]; then
	printf 'red fox' >"$tmp/e1"
	printf 'blue sky' >"$tmp/e2"
	printf 'green sea' >"$tmp/e3"
	printf 'word %.0s' $(seq 40) >"$tmp/e4"
	"${C[@]}" --timeout-ms 20000 load minilm/model.onnx >/dev/null
	out=$("${C[@]}" --timeout-ms 120000 embed minilm/model.onnx "$tmp/e1" "$tmp/e4" "$tmp/e2" "$tmp/e3")
	tim=$("${C[@]}" ping | grep -o ' timings=[^ ]*' | cut -d= -f2-)
	# at 1 row: the long text, and the first batch's check after the load
	# (its shortest row and one other run again alone: docs/text.md)
	check "embed of 3 short texts and a long one: calls of 3 rows and 1 row (3 times)" \
		"$(grep -c '^ROW .* ok=1 ' <<<"$out") rows ok; $tim" '^4 rows ok' \
		'(^|;| )minilm/model\.onnx@3=[0-9]+\.[0-9]/1(;|$)' '(^|;| )minilm/model\.onnx@1=[0-9]+\.[0-9]/3(;|$)'
	check_not "... and no mean call at 2 rows" "$tim" 'minilm/model\.onnx@2='
else
	echo "skip - embed timings: $MODEL_DIR/minilm/model.onnx is missing (make models)"
fi

for p in "${workers[@]}"; do
	testenv_stop_pid "$p" TERM
	wait "$p" 2>/dev/null
done
echo "state: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
