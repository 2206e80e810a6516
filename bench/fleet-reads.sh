#!/usr/bin/env bash
# The read barrier's cost (issue 35, docs/fleet.md §13): GETs per second and
# p50/p99 on one node of a three-node fleet (32 connections, each GET sent
# once the one before is answered), for reso built at REV (default: the
# commit before the read marks) and at the work tree, in alternating
# rounds of bench/fleet's reads load; prints each round and the medians.
# -nats-sync always|default is the NATS servers' sync_interval (bench/fleet's
# flag; always, as docs/fleet.md §14 runs them, by default).
#   bench/fleet-reads.sh [-rounds 5] [-d 5s] [-nats-sync always] [REV]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=5 d=5s sync=always
while [ $# -gt 0 ]; do
  case $1 in
    -rounds) rounds=$2; shift 2 ;;
    -d) d=$2; shift 2 ;;
    -nats-sync) sync=$2; shift 2 ;;
    *) break ;;
  esac
done
rev=${1:-75b935f}
out=$(mktemp -d)
trap 'git worktree remove --force "$out/src" >/dev/null 2>&1 || true; rm -rf "$out"' EXIT
git worktree add --detach -q "$out/src" "$rev"
(cd "$out/src" && go build -o "$out/reso-before" ./cmd/reso)
go build -o "$out/reso-after" ./cmd/reso
go build -o "$out/fleet" ./bench/fleet
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
for i in $(seq 1 "$rounds"); do
  for side in before after; do
    line=$(cd "$out" && ./fleet -reso "./reso-$side" -only reads -d "$d" -nats-sync "$sync" | grep '^GETs')
    echo "round $i $side: $line"
    echo "$line" | sed -E 's/.*fleet ([0-9]+) GET\/s, p50 ([^,]+), p99 ([^,]+),.*/\1 \2 \3/' >>"$out/$side"
  done
done
# median of a column of durations or numbers, in the unit of its values
med() { awk -v c="$2" '{print $c}' "$1" | python3 -c '
import sys,statistics
def v(s):
    for u,m in (("µs",1e-3),("ms",1),("s",1e3)):
        if s.endswith(u): return float(s[:-len(u)])*m
    return float(s)
print(statistics.median(v(l.strip()) for l in sys.stdin))'; }
b=$(med "$out/before" 1) a=$(med "$out/after" 1)
bp=$(med "$out/before" 3) ap=$(med "$out/after" 3)
echo "median over $rounds rounds (sync_interval $sync): before ($rev) $b GET/s, p99 $bp ms; after $a GET/s, p99 $ap ms; ratio $(python3 -c "print(round($a/$b,2))"), p99 after - before $(python3 -c "print(round($ap-$bp,2))") ms"
