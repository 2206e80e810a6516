#!/usr/bin/env bash
# Writes over the channel: persistent PUTs per second (default 32
# connections) and transient PUTs per second (default 256 connections),
# each connection pipelining PUTs to its own new paths with a window of 16
# unanswered, counting success replies; each is preceded by a baseline on
# as many connections, NOTIFY round trips to a resource without subscribers
# (the channel's cost of a request without the tree's work), and printed
# with its ratio to it and the server's CPU per operation. Last, plain
# SQLite inserts in $TMPDIR, where reso's database is too (autocommit, and
# 512 per transaction): the store's floor.
# Each phase's line gives the server's minor page faults per operation.
# -rounds N measures the phases N times over in the same server and prints
# each mode's ratios to notify over the rounds, the first apart: its
# transient phase grows the server's heap into memory the process never
# touched (a fault a page, bench/pagefault), the later ones reuse what the
# connections of the rounds before left, as a server that has run does.
# BARE=1 measures bench/wsbare instead of reso (notify and transient
# phases: a map of the entities PUT, dropped with their connections), what
# the simplest server pays for the same phases on this machine.
# Targets (issue 30): persistent 30,000/s, transient 100,000/s; issue 38:
# transient at least 0.8 of notify.
#   bench/channel-writes.sh [client flags...] [-- reso flags...]
#   e.g. bench/channel-writes.sh -phases notify@32,persistent@32,notify@256,transient@256 -window 16 -d 3s
#        bench/channel-writes.sh -keys 100      (replace 100 resources per connection instead of creating)
#        bench/channel-writes.sh -phases notify@256,transient@256 -rounds 4 -window 16 -d 3s
# Client flags: go run ./bench/channel writes -h. RESO=path uses a reso
# binary built elsewhere.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
source bench/channel-lib.sh
channel_bench writes -read-buf 16384 -sqlite "${TMPDIR:-/tmp}" -- "$@"
