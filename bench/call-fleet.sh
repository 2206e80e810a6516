#!/usr/bin/env bash
# SEND delivery across the nodes of a fleet against one node (issue 29,
# docs/call.md#on-a-fleet): a three-server NATS JetStream cluster (in the
# load program's process), three reso nodes on it and one reso alone on
# SQLite, measured in one run. On each side N users (default 100) have a
# contact and GET /login/<email>?watch=diff open; invitations are SENT to
# users picked at random at a fixed rate (default 100 SEND/s) for the
# measured time (default 10s after 1s of warm-up). On the fleet the GETs
# are on node A and the SENDs go to node B. Prints p50/p99 from SEND to
# delivery per side and the ratios.
#   bench/call-fleet.sh [-n 100] [-rate 100] [-d 10s] [-warmup 1s] [-heartbeat 10s]
# RESO=path uses a reso binary built elsewhere.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
source bench/lib.sh
build_with_reso "$out" callfleet
"$out/callfleet" -reso "$out/reso" "$@"
