#!/usr/bin/env bash
# Reconnect time after a server restart, with the clients' default options
# (issue 27's figures): reso.js on Node's own WebSocket, reso.js on the ws
# package, reso.js in headless Chromium and the Go client, each in a
# process of its own, subscribed to one resource. N times per client, reso
# is killed with -9, left down for -down (default 1s: the client's attempts
# meanwhile are refused) and started again on the same port and database; the
# time runs from the restarted reso listening (it accepts connections) to
# the client reporting "open". Prints p50 and max (and each sample), in ms.
#   bench/reconnect.sh [-n 20] [-down 1s] [-clients node,ws,chromium,go] [-chromium PATH] [-node PATH]
# RESO=path uses a reso binary built elsewhere. ws comes from
# client/js/node_modules: npm ci --prefix client/js (run here when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
source bench/lib.sh
build_with_reso "$out" reconnect
[ -d client/js/node_modules/ws ] || npm ci --prefix client/js >&2
"$out/reconnect" -reso "$out/reso" "$@"
