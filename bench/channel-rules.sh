#!/usr/bin/env bash
# Cost of the permission checks: the fan-out of bench/channel-fanout.sh to
# two rooms of one reso, in alternating rounds of the same run: the open
# room /bench/open/room has no rule of its own (the default open rules);
# the ruled room /bench/ruled/room gets, with RULES before measuring, the
# rule group:rs and a group of 1,000 e-mails. S subscribers (default 1,000),
# all logged in as the -login user bob@example.com (last in the group),
# subscribe to both rooms; the publisher, the administrator, sends NOTIFYs
# to one room per round with at most a window of them unanswered (default
# 32), in rounds of 0.5s after 0.2s of warm-up, 10 per room, in the order
# open ruled ruled open open ruled... Prints delivered notifications per
# second of each round and each room, latency, server and client CPU per
# notification, and the ratio ruled/open: the median of the ratios of the
# 10 pairs of adjacent rounds (a round now and then runs slow on two shared
# cores), then that of the totals. Target (issue 10): at least 0.90.
# It also checks that the rule is in force, and fails otherwise: an
# anonymous subscriber of both rooms (subscribed before the rule) receives
# none of the ruled room's notifications and some of the open room's,
# every member receives the ruled room's, and a new anonymous SUBSCRIBE of
# the ruled room is forbidden.
#   bench/channel-rules.sh [client flags...] [-- reso flags...]
#   e.g. bench/channel-rules.sh -s 1000 -window 32 -rounds 10 -d 500ms
#   bench/channel-rules.sh -rule ''   (no rule: the noise of the comparison)
# Client flags: go run ./bench/channel rules -h. RESO=path uses a reso
# binary built elsewhere.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
source bench/channel-lib.sh
out=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null; rm -rf "$out"' EXIT
split_args "$@"
raise_nofile
build_channel "$out"
# A secret of this run, the administrator's token derived from it by reso
# itself, and a password for bob.
od -An -N16 -tx1 /dev/urandom | tr -d ' \n' >"$out/secret"
chmod 600 "$out/secret"
"$out/reso" admin-token -secret-file "$out/secret" >"$out/admin-token"
pw=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
server_args=(-secret-file "$out/secret" -login "bob@example.com:$pw" "${server_args[@]}")
start_reso "$out"
"$out/chload" rules -url "ws://$addr/channel" -pid "$pid" -debug "$debug" -read-buf 16384 \
  -login "bob@example.com:$pw" -admin-token-file "$out/admin-token" "${client_args[@]}"
