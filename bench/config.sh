#!/usr/bin/env bash
# GET /config through reso against a bare net/http handler writing the same
# bytes, measured in alternating rounds in one run; prints the ratio.
# reso runs with metrics on (-admin-addr, as operators run it) and -pprof,
# whose address it prints, so that a profile can be taken under the load.
# Target: reso >= 0.90 of bare. Server CPU per request is printed too, and
# the medians of the rounds' ratios.
#   bench/config.sh [load flags...]      e.g. bench/config.sh -d 1s -rounds 7 -c 16
# RESO=path uses a reso binary built elsewhere (e.g. to compare before and
# after a change).
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null; rm -rf "$out"' EXIT
if [ -n "${RESO:-}" ]; then
  cp "$RESO" "$out/reso"
else
  go build -o "$out/reso" ./cmd/reso
fi
go build -o "$out/bare" ./bench/bare
go build -o "$out/load" ./bench/load
source bench/lib.sh
start_server "$out/bare" "$out/bare.log" 'bare listening addr=' -addr 127.0.0.1:0
bare=$addr
barepid=$pid
cd "$out"
start_server "$out/reso" "$out/reso.log" 'msg="reso listening" addr=' -addr 127.0.0.1:0 -db :memory: \
  -admin-addr 127.0.0.1:0 -pprof
reso=$addr
resopid=$pid
admin=$(grep -o 'msg="reso admin listening" addr=[^ ]*' "$out/reso.log" | head -n1 | sed 's/.*addr=//')
echo "reso admin (metrics, pprof) on http://$admin" >&2
cd - >/dev/null
"$out/load" "$@" bare="http://$bare/config@$barepid" reso="http://$reso/config@$resopid"
