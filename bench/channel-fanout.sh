#!/usr/bin/env bash
# Fan-out: S subscriber connections (default 1,000) of one resource and one
# publisher sending NOTIFYs of ~100 bytes of data, at most a window of them
# unanswered (default 32); prints notifications delivered per second across
# the subscribers over the measured time, NOTIFYs per second, p50/p99/max
# delivery latency (send time in the data, read by a byte search on
# receipt, same process), server and client CPU per delivered notification,
# and the run's totals (sent_count sum against notifications received,
# subscribers dropped). Target (issue 9): at least 200,000 delivered/s.
#   bench/channel-fanout.sh [client flags...] [-- reso flags...]
#   e.g. bench/channel-fanout.sh -s 1000 -window 32 -d 5s
# Client flags: go run ./bench/channel fanout -h. RESO=path uses a reso
# binary built elsewhere.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$out"' EXIT
source bench/lib.sh
source bench/channel-lib.sh
split_args "$@"
raise_nofile
build_channel "$out"
start_reso "$out"
"$out/chload" fanout -url "ws://$addr/channel" -pid "$pid" -debug "$debug" -read-buf 16384 "${client_args[@]}"
