#!/usr/bin/env bash
# The history checks' long campaign (issue 35, tests/jepsen): runs of a
# minute on a new fleet (three nats-server processes, R3, three reso
# nodes), one kind of fault after another (kill -9 of a node, of the
# stream's leader and of a follower nats-server, a node cut from NATS and
# a nats-server cut from the others by proxies that drop or stall, SIGSTOP
# of a node and of the leader nats-server, the leader moved), then every
# kind mixed, then one reso on SQLite killed with -9, until the runs add
# up to the campaign's length. Each run's history is checked with
# porcupine (register, create-if-absent) and the stream checker. Prints
# per kind of fault: runs, operations, operations per second, unknown
# outcomes, violations, and the time from each fault to the first
# acknowledged write invoked after it (median, max); then where the
# histories of runs with violations are.
#   bench/jepsen.sh [-histories] [-campaign 30m] [-clients 12] [-keys 4] [-run-length 1m] [-hold 3s] [-quiet 2s] [-kinds kill-nats-leader,mixed]
# The histories of runs with a violation are kept (-histories: of every run).
# RESO_JEPSEN_SABOTAGE=1 makes the recorder lie: every run must then fail.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
log=$(mktemp -t reso-jepsen-log.XXXXXX) # kept: the whole go test -v output
args=("$@")
case " ${args[*]-} " in
*" -campaign "* | *" -campaign="*) ;;
*) args=(-campaign 30m "${args[@]}") ;;
esac
status=0
go test ./tests/jepsen -run '^TestCampaign$' -count=1 -timeout 6h -v \
  -args "${args[@]}" -campaign-out "$out/summary.txt" >"$log" 2>&1 || status=$?
grep -E '^(campaign:|=== RUN|\s*--- (PASS|FAIL)|\s+(jepsen_test|campaign_test|report_test)\.go:[0-9]+: (violation|problem))' "$log" | grep -v '=== RUN' || true
echo
if [ -s "$out/summary.txt" ]; then
  cat "$out/summary.txt"
else
  tail -n 50 "$log"
fi
echo "the whole log: $log"
exit "$status"
