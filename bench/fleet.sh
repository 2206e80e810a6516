#!/usr/bin/env bash
# The fleet's figures (issue 21, docs/fleet.md): a three-server NATS
# JetStream cluster (in the load program's process), three reso nodes on it
# and one reso alone on SQLite, measured in one run: persistent and
# transient PUTs per second over 32 connections, one connection's PUTs one at
# a time and 64 in flight, fan-out to 1,000
# subscribers at 1,000 NOTIFY/s (deliveries per second, p50/p99), and the
# time from kill -9 of a node to the last DELETE of its 1,000 transient
# resources on another node.
#   bench/fleet.sh [-d 3s] [-conns 32] [-depth 64] [-subs 1000] [-rate 1000] [-transients 1000] [-heartbeat 10s]
# RESO=path uses a reso binary built elsewhere.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
if [ -n "${RESO:-}" ]; then
  cp "$RESO" "$out/reso"
else
  go build -o "$out/reso" ./cmd/reso
fi
go build -o "$out/fleet" ./bench/fleet
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
"$out/fleet" -reso "$out/reso" "$@"
