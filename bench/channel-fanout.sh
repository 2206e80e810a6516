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
source bench/lib.sh
source bench/channel-lib.sh
channel_bench fanout -read-buf 16384 -- "$@"
