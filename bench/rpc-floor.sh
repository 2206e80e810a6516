#!/usr/bin/env bash
# The floor of the process boundary for an HTTP request (issue 38): what the
# simplest possible peer pays for what -isolate all pays, against what reso
# pays, measured in one run of alternating rounds with the load client in its
# own process. Four targets, each with the CPU of its processes:
#   inproc    bench/rpcfloor inproc: net/http answering GET /x itself with
#             the 88 bytes reso answers GET /users/0 with;
#   relay     bench/rpcfloor relay: the same server forwarding every request
#             over ONE multiplexed gRPC bidi stream to a child process on a
#             Unix socket that answers each message at once (relay + peer);
#   compiled  reso, GET /users/0 with the users plugin compiled in;
#   isolated  reso -isolate all, GET /users/0 (host + users plugin).
# It prints the throughputs (ratios over all rounds, and load's medians
# against inproc), then relay/inproc (the floor) and isolated/compiled
# (reso), the boundary's CPU per request at the floor, CPU(relay+peer) -
# CPU(inproc), and reso's, CPU(host+plugin) - CPU(compiled), and the
# ceiling the floor allows reso: CPU(compiled) / (CPU(compiled) + the
# floor's boundary), the most isolated/compiled could be if reso's boundary
# cost what the simplest peer's does, where the CPU is the limit (relay's
# line "CPU-bound ratio" checks that premise on the floor itself), and the
# boundary the 0.7 target allows reso, CPU(compiled) x (1/0.7 - 1). The
# line after gives the same with k, the CPU per request outside the servers
# (the load client's, the kernel's), fitted so that the model reproduces the
# floor's measured ratio: (inproc + k) / (relay + k); with it, the ceiling
# is (compiled + k) / (compiled + k + floor boundary), and reso's own
# boundary predicts (compiled + k) / (compiled + k + reso boundary), to set
# against reso's measured ratio. Last, one
# connection's round trips: the boundary's wall time per request. Between
# the two, the read and write system calls and the context switches per
# request of each process (/proc/PID/io, /proc/PID/task/*/status), the
# first answer to why the boundary costs what it does.
# Target (issue 38): isolated >= 0.7 of compiled in.
#   bench/rpc-floor.sh [-c 8] [-d 3s] [-rounds 5]
# RESO=path uses a reso binary built elsewhere.
set -euo pipefail
cd "$(dirname "$0")/.."
conc=8 dur=3s rounds=5
while [ $# -gt 0 ]; do
  case $1 in
    -c) conc=$2; shift 2 ;;
    -d) dur=$2; shift 2 ;;
    -rounds) rounds=$2; shift 2 ;;
    *) echo "usage: bench/rpc-floor.sh [-c N] [-d D] [-rounds R]" >&2; exit 2 ;;
  esac
done
out=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null; rm -rf "$out"' EXIT
source bench/lib.sh
build_with_reso "$out" load
go build -o "$out/rpcfloor" ./bench/rpcfloor
cd "$out"
listening='listening addr='
start_server "$out/rpcfloor" "$out/inproc.log" "$listening" inproc
inproc=$addr inproc_pid=$pid
start_server "$out/rpcfloor" "$out/relay.log" "$listening" relay
relay=$addr relay_pid=$pid
peer_pid=$(grep -o 'peer=[0-9]*' "$out/relay.log" | head -n1 | cut -d= -f2)
start_server "$out/reso" "$out/compiled.log" 'msg="reso listening" addr=' -addr 127.0.0.1:0 -db :memory:
compiled=$addr compiled_pid=$pid
start_server "$out/reso" "$out/isolated.log" 'msg="reso listening" addr=' -addr 127.0.0.1:0 -db :memory: -isolate all
isolated=$addr isolated_pid=$pid
users_pid=$(pgrep -P "$isolated_pid" -f 'reso plugin users')

# syscalls PID: the read and write system calls PID has made (/proc/PID/io)
# and the context switches of its threads (the kernel putting one to sleep
# or taking it off a core).
syscalls() {
  awk '/^syscr/{r=$2} /^syscw/{w=$2} /ctxt_switches/{c+=$2} END{print r, w, c}' "/proc/$1/io" "/proc/$1"/task/*/status
}
procs="inproc:$inproc_pid relay:$relay_pid peer:$peer_pid compiled:$compiled_pid isolated-host:$isolated_pid isolated-plugin:$users_pid"
declare -A sys0
for p in $procs; do sys0[$p]=$(syscalls "${p#*:}"); done

echo "== throughput, $conc connections, $rounds alternating rounds of $dur each"
"$out/load" -c "$conc" -d "$dur" -rounds "$rounds" \
  inproc="http://$inproc/x@$inproc_pid" relay="http://$relay/x@$relay_pid,$peer_pid" \
  compiled="http://$compiled/users/0@$compiled_pid" isolated="http://$isolated/users/0@$isolated_pid,$users_pid" |
  tee "$out/tput"
# load's lines: NAME RATE req/s µs/req ... server CPU C µs/req ...
awk '
  $3 == "req/s" { rate[$1] = $2; cpu[$1] = $10 }
  END {
    fb = cpu["relay"] - cpu["inproc"]; rb = cpu["isolated"] - cpu["compiled"]
    printf "== the floor and reso (ratios over all rounds)\n"
    printf "floor  relay/inproc       %.3f req/s  (CPU-bound ratio %.3f)\n", rate["relay"] / rate["inproc"], cpu["inproc"] / cpu["relay"]
    printf "reso   isolated/compiled  %.3f req/s  (CPU-bound ratio %.3f)\n", rate["isolated"] / rate["compiled"], cpu["compiled"] / cpu["isolated"]
    printf "boundary CPU per request: floor %.1f µs (relay+peer %.1f - inproc %.1f), reso %.1f µs (host+plugin %.1f - compiled %.1f)\n", fb, cpu["relay"], cpu["inproc"], rb, cpu["isolated"], cpu["compiled"]
    printf "ceiling the floor allows reso: isolated/compiled <= %.3f (compiled %.1f / (%.1f + %.1f))\n", cpu["compiled"] / (cpu["compiled"] + fb), cpu["compiled"], cpu["compiled"], fb
    printf "0.7 allows reso a boundary of at most %.1f µs CPU per request (compiled %.1f x (1/0.7 - 1))\n", cpu["compiled"] * (1 / 0.7 - 1), cpu["compiled"]
    # The same with the CPU per request outside the servers (load client,
    # kernel), k, fitted so that the model gives the floor its measured
    # ratio r: r = (inproc + k) / (relay + k).
    r = rate["relay"] / rate["inproc"]; k = (cpu["relay"] * r - cpu["inproc"]) / (1 - r)
    c = cpu["compiled"] + k
    printf "with k %.1f µs/request outside the servers (fitted on the floor): ceiling %.3f; the boundary reso has gives %.3f (measured %.3f); 0.7 allows a boundary of at most %.1f µs\n", k, c / (c + fb), c / (c + rb), rate["isolated"] / rate["compiled"], c * (1 / 0.7 - 1)
  }' "$out/tput"

# Why: the read and write system calls and the context switches per request
# of each process over the run above (requests: rate x rounds x duration).
secs=$(awk -v d="$dur" 'BEGIN{if (d ~ /ms$/) {sub(/ms$/, "", d); print d / 1000} else {sub(/s$/, "", d); print d}}')
echo "== per request, over the rounds above: system calls, context switches"
for p in $procs; do
  name=${p%%:*} target=${p%%:*}
  case $name in peer) target=relay ;; isolated-*) target=isolated ;; esac
  rate=$(awk -v t="$target" '$1 == t && $3 == "req/s" {print $2}' "$out/tput")
  read -r r0 w0 c0 <<<"${sys0[$p]}"
  read -r r1 w1 c1 <<<"$(syscalls "${p#*:}")"
  awk -v n="$name" -v r="$((r1 - r0))" -v w="$((w1 - w0))" -v c="$((c1 - c0))" -v q="$rate" -v k="$rounds" -v s="$secs" \
    'BEGIN{q *= k * s; printf "%-16s %5.2f reads  %5.2f writes  %5.2f context switches\n", n, r / q, w / q, c / q}'
done

echo "== round trip, 1 connection (the difference is the boundary's wall time per request)"
"$out/load" -c 1 -d 2s -rounds 2 inproc="http://$inproc/x" relay="http://$relay/x" \
  compiled="http://$compiled/users/0" isolated="http://$isolated/users/0" | tee "$out/rtt"
awk '$3 == "req/s" { t[$1] = $4 }
  END { printf "boundary wall time per request: floor %.1f µs, reso %.1f µs\n", t["relay"] - t["inproc"], t["isolated"] - t["compiled"] }' "$out/rtt"
