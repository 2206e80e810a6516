#!/usr/bin/env bash
# Authenticated GET /private/x (cookie session, and Basic) against open GET
# /config on the same server, in alternating rounds in one run; prints the
# ratios. Target (issue 3): the cookie session >= 0.7 of /config.
#   bench/private.sh [load flags...]
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null; rm -rf "$out"' EXIT
go build -o "$out/reso" ./cmd/reso
go build -o "$out/load" ./bench/load
source bench/lib.sh
# Each server gets its own database: a Basic login replaces the stored token
# with a new one (docs/wire.md#check-order), which would end the cookie
# session measured beside it.
start() {
  cd "$out"
  start_server "$out/reso" "$out/$1.log" 'msg="reso listening" addr=' -addr 127.0.0.1:0 -db "$out/$1.db" -login bench@example.org:pw
  cd - >/dev/null
}
basic="Authorization: Basic $(printf 'bench@example.org:pw' | base64)"

start cookie
# Log in once with Basic; the answer's cookies make the session.
cookies=$(curl -s -D - -o /dev/null -H "$basic" "http://$addr/private/x" |
  awk 'tolower($1)=="set-cookie:" {split($2, kv, ";"); printf "%s; ", kv[1]}' | sed 's/; $//')
[ -n "$cookies" ] || { echo "login failed" >&2; exit 1; }
echo "# cookie session"
"$out/load" "$@" config="http://$addr/config" cookie="http://$addr/private/x|Cookie: $cookies"

start basic
echo "# Basic credentials on every request"
"$out/load" "$@" config="http://$addr/config" basic="http://$addr/private/x|$basic"
