#!/usr/bin/env bash
# Issue 36's figures of many idle nodes on one log (docs/fleet.md §13,
# "Fifty nodes on one log"): for each node count, a three-server NATS
# JetStream cluster (in a child process of the load program) and that many
# reso nodes on it, each with a few subscribed WebSockets; one row per
# count: the time until all are ready, a NOTIFY from node 0 to the last
# node's delivery (p50, p99), the heartbeat messages and bytes per second,
# CPU and RSS per idle node, the NATS process's CPU, a new node's join.
#   bench/fleet-nodes.sh [-nodes 5,10,25,50] [-conns 3] [-writes 100] [-window 20s] [-heartbeat 10s]
# RESO=path uses a reso binary built elsewhere (the figures before a
# change: build the older commit's ./cmd/reso). Loopback only; every step
# bounded by -timeout (default 3m).
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
source bench/lib.sh
build_with_reso "$out" fleetnodes
"$out/fleetnodes" -reso "$out/reso" "$@"
