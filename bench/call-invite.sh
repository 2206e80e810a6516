#!/usr/bin/env bash
# Invitations: N users (default 1,000), registered in the database with
# `reso user add` before reso starts, each logged in (POST /login/<email>)
# and each with one GET kept open, GET /login/<email>?watch=diff
# (newline-delimited JSON); then one sender, with a few SENDs in flight
# (one per goroutine, default 8), SENDs invitations {"command": "invite",
# ...} to users picked at random for the measured time (default 5s after
# 1s of warm-up). Prints invitations delivered per second on the receiving
# GETs, p50/p99/max time from SEND to delivery (send time in the
# invitation's data, read on receipt, same process), server CPU per
# delivered invitation, and the run's counts (sent, 200 OK, 202 waiting,
# failed, delivered). It fails if a SEND fails, a stream ends early or an
# invitation answered 200 OK never arrives. The figure of issue 11:
# invitations delivered per second to 1,000 logged-in users with a GET
# kept open each, and the p99 time from SEND to delivery.
#   bench/call-invite.sh [client flags...] [-- reso flags...]
#   e.g. bench/call-invite.sh -n 1000 -senders-conc 8 -d 5s
# Client flags: go run ./bench/callload -h (-n, the users, at most 1,000;
# the script registers as many). RESO=path uses a reso binary built
# elsewhere. `reso user add` (one process per user, as an operator would
# run it) took 14 to 28 s for 1,001 users on two shared cores.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
source bench/channel-lib.sh
out=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null; rm -rf "$out"' EXIT
split_args "$@"
raise_nofile
# -n N among the client flags says how many users to register.
n=1000
for ((i = 0; i < ${#client_args[@]}; i++)); do
  case ${client_args[i]} in
    -n | --n) n=${client_args[i + 1]:-1000} ;;
    -n=* | --n=*) n=${client_args[i]#*=} ;;
  esac
done
if [ -n "${RESO:-}" ]; then
  cp "$RESO" "$out/reso"
else
  go build -o "$out/reso" ./cmd/reso
fi
go build -o "$out/callload" ./bench/callload
# A secret of this run, and one password for the users and the sender. The
# state directory of `reso user add` is the run's own.
od -An -N16 -tx1 /dev/urandom | tr -d ' \n' >"$out/secret"
chmod 600 "$out/secret"
pw=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
start=$(date +%s%N)
for ((i = 0; i < n; i++)); do
  echo "$pw" | XDG_STATE_HOME="$out/state" "$out/reso" user add "u$i@bench.example" -db "$out/reso.db" >/dev/null
done
echo "$pw" | XDG_STATE_HOME="$out/state" "$out/reso" user add "sender@bench.example" -db "$out/reso.db" >/dev/null
echo "registered $((n + 1)) users with reso user add in $((($(date +%s%N) - start) / 1000000)) ms"
server_args=(-secret-file "$out/secret" "${server_args[@]}")
start_reso "$out"
"$out/callload" -addr "$addr" -pid "$pid" -users u -password "$pw" \
  -sender "sender@bench.example:$pw" "${client_args[@]}"
