#!/usr/bin/env bash
# Churn soak (issue 24): 8 clients loop on open a WebSocket, SUBSCRIBE a
# room, PUT a transient member, PUT a persistent record out of 2,000 keys,
# NOTIFY the room, GET the room, close (every other loop with a close
# frame, else by dropping TCP); every 10th loop also opens a GET kept open
# of the room and drops it after its status line (-watch-event: after its
# first event). Runs against each mode in
# turn (default: compiled in, then -isolate all), each on a fresh server
# and database, and prints before the churn and every 15 s the loops per
# second, the errors, the RSS of the server with its plugin processes, the
# host's heap in use and goroutines, and the file descriptors of all the
# processes; then once more when goroutines and descriptors are back
# within -slack of their start (at most -cooldown after the churn), and a
# summary of both modes side by side.
# Target (issue 24): an isolated server's memory stays flat after warm-up
# (no growth between the middle and the end of the measured time).
#   bench/channel-soak.sh [-modes compiled,isolated] [client flags...] [-- reso flags...]
#   e.g. bench/channel-soak.sh                      (1 min warm-up, 10 min measured, per mode)
#        bench/channel-soak.sh -warmup 30s -d 3m
#        bench/channel-soak.sh -modes isolated -c 16
# Client flags: go run ./bench/channel soak -h. RESO=path uses a reso
# binary built elsewhere. Loopback only; bounded by -warmup + -d +
# -cooldown per mode.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
source bench/channel-lib.sh
modes=compiled,isolated
if [ "${1:-}" = -modes ]; then
  modes=$2
  shift 2
fi
out=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null; rm -rf "$out"' EXIT
split_args "$@"
raise_nofile
build_channel "$out"
base_args=("${server_args[@]}")
for m in ${modes//,/ }; do
  case $m in
    compiled) server_args=("${base_args[@]}") ;;
    isolated) server_args=("${base_args[@]}" -isolate all) ;;
    *) echo "unknown mode $m: want compiled or isolated" >&2; exit 2 ;;
  esac
  rm -f "$out"/reso.db*
  echo "== $m"
  start_reso "$out"
  "$out/chload" soak -url "ws://$addr/channel" -pid "$pid" -debug "$debug" "${client_args[@]}" | tee "$out/$m.txt"
  kill "$pid"
  wait "$pid" 2>/dev/null || true
done
echo "== summary"
for m in ${modes//,/ }; do
  printf '%-9s %s\n' "$m" "$(grep '^measured:' "$out/$m.txt")"
  printf '%-9s %s\n' "" "$(grep '^RSS ' "$out/$m.txt")"
  printf '%-9s %s\n' "" "$(grep '^host heap' "$out/$m.txt")"
  printf '%-9s %s\n' "" "$(grep '^goroutines' "$out/$m.txt")"
done
