#!/usr/bin/env bash
# Issue 36's figure (docs/fleet.md §13): what a connection's transient
# resource costs every node of a fleet. A three-server NATS JetStream
# cluster (in a child process of the load program), three reso nodes on it
# and one reso alone on SQLite, measured in one run: -conns WebSockets (default
# 5,000), each subscribed to a shared room and owning a transient entry,
# on the single node, then on node 1 of the fleet: the RSS growth per
# connection of the single node and of node 1, and per transient of node
# 0 and node 2, which only apply them from the log.
#   bench/fleet-memory.sh [-conns 5000] [-history N] [-settle 3s] [-timeout 3m] [-heap-profile FILE]
# (-history N: every node with -channel-history N, which leaves the bounded
# history of notifications out of the figures; -settle D: how long the
# nodes settle after the last entry before their RSS is read)
# RESO=path uses a reso binary built elsewhere; BASE=commit also measures
# the reso of that commit first (built from `git archive`), for a before
# and after in one invocation. Loopback only; every step bounded by
# -timeout.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
source bench/lib.sh
build_with_reso "$out" fleetmem
if [ -n "${BASE:-}" ]; then
  mkdir "$out/base"
  git archive "$BASE" | tar -x -C "$out/base"
  (cd "$out/base" && go build -o "$out/reso-base" ./cmd/reso)
  echo "== before: $BASE"
  "$out/fleetmem" -reso "$out/reso-base" "$@"
  echo "== after: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . || echo ' (with changes not committed)')"
fi
"$out/fleetmem" -reso "$out/reso" "$@"
