#!/usr/bin/env bash
# Issue 29's figures of a node's death and of idle connections
# (docs/fleet.md §13): a three-server NATS JetStream cluster (in a child
# process of the load program), three reso nodes on it and one reso alone on SQLite,
# measured in one run:
#  - idle: 3,000 subscribed WebSockets, 1,000 per node, against 3,000 on the
#    single node: the nodes' summed RSS growth per connection, and the ratio;
#  - node death: 1,000 clients on one node, each subscribed to a room and
#    owning a transient resource, 50 NOTIFY/s to the rooms from another
#    node; kill -9 of their node: the time to the last DELETE of its
#    transient resources seen on another node, the time for the clients to
#    subscribe again on the other nodes with since, how many replies said
#    recovered, and the notifications missed and duplicated (target: 0).
#   bench/fleet-figures.sh [-idle 3000] [-clients 1000] [-rooms 10] [-rate 50] [-heartbeat 10s]
# RESO=path uses a reso binary built elsewhere. Loopback only; every step
# bounded by -timeout (default 3m).
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
source bench/lib.sh
build_with_reso "$out" fleetfig
"$out/fleetfig" -reso "$out/reso" "$@"
