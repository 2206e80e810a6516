#!/usr/bin/env bash
# The fleet's figures (issues 21 and 28, docs/fleet.md §13): a three-server
# NATS JetStream cluster (in a child process: bench/internal/cluster), three
# reso nodes on it and one reso alone on SQLite, measured in one run:
# persistent and transient PUTs per second over 32 connections (16 in
# flight each, and one at a time) with the CPU per write of the processes
# serving them, one connection's PUTs one at a time and 64 in flight, one
# NOTIFY in flight to 100 subscribers, fan-out to 1,000 subscribers at
# 1,000 NOTIFY/s, and the time from kill -9 of a node to the last DELETE of
# its 1,000 transient resources on another node (see bench/fleet/main.go).
# The NATS servers run with sync_interval: always; -nats-sync both adds a
# fleet on a cluster with nats-server's default (fsync every 2 minutes) and
# -db-sync both a single node with -db-sync full, measured beside the
# others by the write loads, with the ratios (issue 35):
#   bench/fleet.sh -only writes -nats-sync both -db-sync both
#   bench/fleet.sh [-d 3s] [-conns 32] [-inflight 16] [-depth 64] [-subs 100] [-fan-subs 1000] [-rate 1000] [-transients 1000] [-heartbeat 10s] [-nats-sync always|default|both] [-db-sync normal|full|both] [-only writes]
# RESO=path uses a reso binary built elsewhere.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
source bench/lib.sh
build_with_reso "$out" fleet
"$out/fleet" -reso "$out/reso" "$@"
