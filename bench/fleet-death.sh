#!/usr/bin/env bash
# Issue 36's figure of a node's death under load (docs/fleet.md §13): a
# three-server NATS JetStream cluster (in a child process of the load
# program), 4 reso nodes on it, and 2,000 clients of node 0 (half the Go
# client, half reso.js on Node, in client processes of their own), each
# given the list of every node's URL, subscribed to a room and owning a
# transient resource; node 1 NOTIFYs the rooms, node 2 PUTs; kill -9 of
# node 0. It prints the time to the last client subscribed again with
# since (and how many said recovered; per kind of client its p50, p99 and
# max, the attempts, the waits between them and what refused them), the
# CPU each process used meanwhile, the time to the last DELETE of node 0's
# transient resources on every survivor (each deleted once), the
# notifications missed and doubled (target: 0), and node 2's PUT p99
# during the storm against before the kill.
#   bench/fleet-death.sh [-clients 2000] [-nodes 4] [-per-process 5000] [-js-per-process N] [-rooms 100] [-rate 50] [-write-rate 50] [-heartbeat 10s] [-node node] [-ws node|ws]
# 20,000 clients: -clients 20000 (each process holds at most -per-process
# clients; node 0 needs a descriptor per client: raise the hard limit
# above 20,000 if you can). RESO=path uses a reso binary built elsewhere.
# Loopback only; every step bounded by -timeout (default 5m).
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
source bench/lib.sh
build_with_reso "$out" fleetdeath
"$out/fleetdeath" -reso "$out/reso" "$@"
