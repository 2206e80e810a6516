#!/usr/bin/env bash
# Connections at scale (issue 36, docs/fleet.md §13): a JetStream cluster
# of three nats-server processes, -nodes reso nodes on it and -conns
# WebSockets spread evenly over them (load clients of at most
# -per-process connections each, child processes of the program, dialing
# from 127.0.0.2 onwards), each subscribed to one shared resource and
# owning one transient resource (a presence entry). Prints the time to set
# them all up, the RSS per connection of each node and each NATS server's
# RSS, for -notifies NOTIFYs to the shared resource the time from the
# publish to the last delivery (p50, p99, max) and the deliveries missing,
# the CPU per delivery summed over every process, the NATS messages and
# bytes per notification, the connections dropped and whether a node was
# taken for dead or rejoined; then the same of one reso alone on SQLite
# with -single connections, and the ratios (see bench/fleetscale/main.go).
#   bench/fleet-scale.sh [-nodes 3] [-conns 3000] [-single 1000] [-heartbeat 4s] [-notifies 20] [-per-process 18000] [-sources 19] [-rate 1000] [-ramp 10s] [-timeout 15m]
#   bench/fleet-scale.sh -nodes 6 -conns 100000 -single 19000
# RESO=path uses a reso binary built elsewhere. Loopback only; every stage
# bounded in time.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
source bench/lib.sh
build_with_reso "$out" fleetscale
"$out/fleetscale" -reso "$out/reso" "$@"
