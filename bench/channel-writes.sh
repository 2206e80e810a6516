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
# Targets (issue 30): persistent 30,000/s, transient 100,000/s.
#   bench/channel-writes.sh [client flags...] [-- reso flags...]
#   e.g. bench/channel-writes.sh -phases notify@32,persistent@32,notify@256,transient@256 -window 16 -d 3s
#        bench/channel-writes.sh -keys 100      (replace 100 resources per connection instead of creating)
# Client flags: go run ./bench/channel writes -h. RESO=path uses a reso
# binary built elsewhere.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
source bench/channel-lib.sh
channel_bench writes -read-buf 16384 -sqlite "${TMPDIR:-/tmp}" -- "$@"
