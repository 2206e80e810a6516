#!/usr/bin/env bash
# The fleet's soak (issue 29): the churn of bench/channel-soak.sh (clients
# that loop on open a WebSocket, SUBSCRIBE a room, PUT a transient member,
# PUT a persistent record, NOTIFY the room, GET the room, close with a close
# frame or by dropping TCP; every 10th loop a GET kept open of the room,
# dropped after its status line) spread over the three reso nodes of a
# fleet on a three-server NATS JetStream cluster (bench/fleetup), each
# client's GETs kept open on the node after its own. It prints every 15 s
# the loops per second, the errors (target: 0) and, per node, its RSS, heap
# in use, goroutines (go_goroutines of its admin metrics) and open
# descriptors (/proc/PID/fd); before the churn, and once more when every
# node is back within -slack of those (or after -cooldown); then a summary
# per node: RSS at the start, end of the warm-up, middle and end (target:
# flat), goroutines and descriptors before and after (target: back).
#   bench/fleet-soak.sh [client flags...]
#   e.g. bench/fleet-soak.sh                       (1 min warm-up, 10 min measured)
#        bench/fleet-soak.sh -warmup 10s -d 1m -c 12
# Client flags: go run ./bench/channel soak -h. RESO=path uses a reso
# binary built elsewhere; HEARTBEAT (default 10s) is the nodes'
# -fleet-heartbeat. Loopback only; bounded by -warmup + -d + -cooldown.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/channel-lib.sh
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
raise_nofile
build_channel "$out"
go build -o "$out/fleetup" ./bench/fleetup
# -c 12: four clients per node, the single node's 8 plus half again.
"$out/fleetup" -reso "$out/reso" -heartbeat "${HEARTBEAT:-10s}" -timeout 2h \
  bash -c '"$0" soak -url "$FLEET_URLS" -pid "$FLEET_PIDS" -debug "$FLEET_ADMINS" -c 12 -prefix /fleetsoak "$@"' "$out/chload" "$@"
