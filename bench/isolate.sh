#!/usr/bin/env bash
# GET /users/0 with the bundled plugins compiled in against -isolate all (every
# plugin in a child process, requests over go-plugin's gRPC connection),
# measured in alternating rounds in one run; prints both throughputs and the
# ratio, the per-request overhead of the boundary in wall time (one
# connection: the difference of the round trips) and in CPU time (host and
# plugin processes), bounded in time and requests.
# Target (issue 4): isolated >= 0.5 of compiled in.
# Target (issue 38): isolated >= 0.7 of compiled in, with every request to
# a plugin on its one Requests call.
#   bench/isolate.sh [-c 8] [-d 3s] [-rounds 3]
# RESO=path uses a reso binary built elsewhere (e.g. to compare before and
# after a change).
set -euo pipefail
cd "$(dirname "$0")/.."
conc=8 dur=3s rounds=3
while [ $# -gt 0 ]; do
  case $1 in
    -c) conc=$2; shift 2 ;;
    -d) dur=$2; shift 2 ;;
    -rounds) rounds=$2; shift 2 ;;
    *) echo "usage: bench/isolate.sh [-c N] [-d D] [-rounds R]" >&2; exit 2 ;;
  esac
done
out=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null; rm -rf "$out"' EXIT
if [ -n "${RESO:-}" ]; then
  cp "$RESO" "$out/reso"
else
  go build -o "$out/reso" ./cmd/reso
fi
go build -o "$out/load" ./bench/load
source bench/lib.sh
cd "$out"
start_server "$out/reso" "$out/compiled.log" 'msg="reso listening" addr=' -addr 127.0.0.1:0 -db :memory:
compiled=$addr compiled_pid=$!
start_server "$out/reso" "$out/isolated.log" 'msg="reso listening" addr=' -addr 127.0.0.1:0 -db :memory: -isolate all
isolated=$addr isolated_pid=$!
users_pid=$(pgrep -P "$isolated_pid" -f 'reso plugin users')

echo "== throughput, $conc connections, $rounds rounds of $dur each"
"$out/load" -c "$conc" -d "$dur" -rounds "$rounds" \
  compiled="http://$compiled/users/0@$compiled_pid" isolated="http://$isolated/users/0@$isolated_pid,$users_pid"

echo "== round trip, 1 connection (the difference is the per-request overhead)"
"$out/load" -c 1 -d 2s -rounds 2 compiled="http://$compiled/users/0" isolated="http://$isolated/users/0" | tee "$out/rtt"
awk '/^compiled/{c=$4} /^isolated/{i=$4} END{printf "per-request overhead (wall): %.1f µs\n", i-c}' "$out/rtt"

# CPU time of a process in clock ticks (user + system).
ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
cpu_run() { # NAME URL PID... : CPU µs per request of each PID during one round
  local name=$1 url=$2; shift 2
  local before=() p i=0
  for p in "$@"; do before+=("$(ticks "$p")"); done
  local rate
  rate=$("$out/load" -c "$conc" -d "$dur" -rounds 1 "$name=$url" | awk '{print $2}')
  local secs=${dur%s}
  for p in "$@"; do
    awk -v t1="$(ticks "$p")" -v t0="${before[$i]}" -v hz="$hz" -v r="$rate" -v s="$secs" -v p="$p" -v n="$name" \
      'BEGIN{printf "%-9s pid %-7s %6.1f µs CPU/request\n", n, p, (t1-t0)/hz*1e6/(r*s)}'
    i=$((i+1))
  done
}
echo "== CPU per request, $conc connections"
cpu_run compiled "http://$compiled/users/0" "$compiled_pid"
cpu_run isolated "http://$isolated/users/0" "$isolated_pid" "$users_pid"
echo "(isolated: the first line is the host, the second the users plugin process)"
