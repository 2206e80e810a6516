#!/usr/bin/env bash
# Disconnect hygiene: K cycles (default 10,000, 64 at once) of connect,
# SUBSCRIBE /hyg, transient PUT /hyg/h<n>, then the TCP connection closed
# without a close frame; then, up to -wait (default 60s: set it to the
# dead-peer timeout plus a margin), polls until the server's goroutines are
# back to the baseline taken before the cycles (within -slack, printed), GET
# /hyg?deep=0 counts 0 children and a NOTIFY to /hyg reaches no subscriber,
# from a fresh connection (the baseline is taken after one priming cycle on
# /hyg-prime that ends cleanly; -prime=false to skip it). Prints the time
# that took and the counts; exits non-zero if the server was not clean in
# time.
# Target (issue 9): back to baseline, every transient resource gone, within
# the dead-peer timeout.
#   bench/channel-hygiene.sh [client flags...] [-- reso flags...]
#   e.g. bench/channel-hygiene.sh -k 10000 -conc 64 -wait 60s
#        bench/channel-hygiene.sh -rst        (reset instead of FIN)
#        bench/channel-hygiene.sh -silent -k 1000 -wait 2m
#                                  (sockets left open and unread: only the ping timeout finds them)
# Client flags: go run ./bench/channel hygiene -h. RESO=path uses a reso
# binary built elsewhere.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
source bench/channel-lib.sh
channel_bench hygiene -- "$@"
