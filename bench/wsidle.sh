#!/usr/bin/env bash
# Memory per idle WebSocket connection: for each server (gorilla/websocket
# tuned, coder/websocket, reso's websocket transport), opens N
# connections from a load client in its own process (one small message and
# its echo each, then idle) and prints the server's RSS growth per
# connection, right after and after a forced GC. Target: under 20 KB.
#   bench/wsidle.sh [N (default 10000, at most 10000)] [libs...]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-10000}
shift || true
libs=("$@")
[ ${#libs[@]} -gt 0 ] || libs=(gorilla coder transport)
if [ "$n" -lt 1 ] || [ "$n" -gt 10000 ]; then
  echo "N must be 1..10000" >&2
  exit 2
fi
ulimit -n "$(( n + 1000 > $(ulimit -Hn) ? $(ulimit -Hn) : n + 1000 ))"
out=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null; rm -rf "$out"' EXIT
go build -o "$out/wsidle" ./bench/wsidle
source bench/lib.sh

rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }

printf '%-10s %6s %10s %10s %10s %10s %s\n' server conns base_kb rss_kb kb/conn gc_kb/conn stats
for lib in "${libs[@]}"; do
  start_server "$out/wsidle" "$out/$lib.log" 'wsidle listening addr=' server -lib "$lib" -max "$n"
  spid=$pid
  sleep 0.3
  kill -USR1 "$spid"
  sleep 0.3
  base=$(rss_kb "$spid")
  # The client holds its connections until its stdin (a fifo) closes.
  mkfifo "$out/hold.$lib"
  "$out/wsidle" client -addr "$addr" -n "$n" -hold 120s <"$out/hold.$lib" >"$out/client.$lib" 2>&1 &
  cpid=$!
  exec 3>"$out/hold.$lib"
  for _ in $(seq 1 1200); do
    grep -q '^ready' "$out/client.$lib" && break
    kill -0 "$cpid" 2>/dev/null || break
    sleep 0.1
  done
  if ! grep -q '^ready' "$out/client.$lib"; then
    echo "$lib: client did not get ready:" >&2
    cat "$out/client.$lib" >&2
    exit 1
  fi
  ok=$(sed -n 's/^ready ok=\([0-9]*\).*/\1/p' "$out/client.$lib")
  sleep 0.5
  rss=$(rss_kb "$spid")
  kill -USR1 "$spid"
  sleep 1
  gc=$(rss_kb "$spid")
  stats=$(grep '^stats' "$out/$lib.log" | tail -n1 | sed 's/^stats //')
  awk -v l="$lib" -v n="$ok" -v b="$base" -v r="$rss" -v g="$gc" -v s="$stats" \
    'BEGIN { printf "%-10s %6d %10d %10d %10.1f %10.1f %s\n", l, n, b, r, (r-b)/n, (g-b)/n, s }'
  exec 3>&-
  wait "$cpid" || true
  kill "$spid" 2>/dev/null || true
  wait "$spid" 2>/dev/null || true
  rm -f "$out/hold.$lib"
done
