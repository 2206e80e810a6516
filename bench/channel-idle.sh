#!/usr/bin/env bash
# Server memory of N idle WebSocket connections (default 10,000), each
# subscribed to its own resource: RSS in total and per connection against a
# baseline measured first in the same run, heap in use (as found, and after
# a collection) and goroutines, and the load client's own RSS. reso runs with
# -admin-addr (metrics on), as operators run it. Target (issue 20): at most
# 16 KiB of RSS and 8 KiB of heap per connection at 10,000.
#   bench/channel-idle.sh [client flags...] [-- reso flags...]
#   e.g. bench/channel-idle.sh -n 10000 -settle 2s
#        SERVER_FLAGS='-channel-max-connections 20000' bench/channel-idle.sh
# Client flags: bench/channel/main.go, or go run ./bench/channel idle -h.
# RESO=path uses a reso binary built elsewhere.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
source bench/channel-lib.sh
channel_bench idle -- "$@"
