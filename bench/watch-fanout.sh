#!/usr/bin/env bash
# GETs kept open of the channel's HTTP door, fanned out: W watchers
# (Server-Sent Events) of one resource, PUTs to it P at a time, measured
# against reso compiled in and reso -isolate all in alternating rounds in
# one run, with the load client (bench/watchfan) in its own process. Prints
# each side's median deliveries/s and server CPU per delivery (reso and
# its plugin processes), and each ratio to compiled in. With -isolate all
# the watches run in the server (docs/plugins.md, notifications of isolated
# plugins; issue 38): isolated should hold close to compiled.
# ISO_BEFORE=path adds a side: reso -isolate all of another binary (the one
# before a change), measured in the same rounds.
#   bench/watch-fanout.sh [-w 200] [-n 200] [-p 4] [-rounds 3]
# RESO=path uses a reso binary built elsewhere.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
w=200 n=200 p=4 rounds=3
while [ $# -gt 0 ]; do
  case $1 in
    -w) w=$2; shift 2 ;;
    -n) n=$2; shift 2 ;;
    -p) p=$2; shift 2 ;;
    -rounds) rounds=$2; shift 2 ;;
    *) echo "usage: bench/watch-fanout.sh [-w N] [-n N] [-p N] [-rounds R]" >&2; exit 2 ;;
  esac
done
out=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null; rm -rf "$out"' EXIT
build_with_reso "$out" watchfan
cd "$out"
start_server "$out/reso" "$out/compiled.log" 'msg="reso listening" addr=' -addr 127.0.0.1:0 -db :memory:
sides=("compiled=http://$addr@$pid")
start_server "$out/reso" "$out/isolated.log" 'msg="reso listening" addr=' -addr 127.0.0.1:0 -db :memory: -isolate all
sides+=("isolated=http://$addr@$pid")
if [ -n "${ISO_BEFORE:-}" ]; then
  cp "$ISO_BEFORE" "$out/reso-before"
  start_server "$out/reso-before" "$out/before.log" 'msg="reso listening" addr=' -addr 127.0.0.1:0 -db :memory: -isolate all
  sides+=("iso-before=http://$addr@$pid")
fi
"$out/watchfan" -w "$w" -n "$n" -p "$p" -rounds "$rounds" "${sides[@]}"
