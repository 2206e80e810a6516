#!/usr/bin/env bash
# reso's channel against a bare gorilla/websocket broadcaster that does
# nothing else (bench/wsbare: the practical limit), measured in one run in
# alternating rounds (the side that goes first alternates), with the load
# client (bench/channel) in its own process. reso runs with -admin-addr and
# -pprof (metrics on, as operators run it) and -channel-max-connections
# 20000. The loads, each against every side:
#   fanout    1 publisher -> 1,000 subscribers of one resource, 32 NOTIFYs
#             in flight, 100 bytes of data
#   latency   the same with 1 NOTIFY in flight
#   channels  1,000 channels, one subscriber and one publisher each, 4
#             NOTIFYs in flight per publisher
#   idle      10,000 WebSockets, each subscribed to its own resource: RSS
#             (and heap, goroutines) per connection against a baseline
#             measured first, each side in a fresh server process
# It prints, per load, the median of each side (deliveries/s, server CPU
# µs per delivery and the system time's share of it, latency p50/p99,
# notifications missing) and the ratio reso ÷ bare (for idle: RSS per
# connection, reso ÷ bare). Targets (issue 30): fan-out >= 0.95, latency
# and channels >= 0.85, idle RSS <= 1.2. With ISOLATED=1 a third side runs
# reso -isolate all, and idle also prints isolated ÷ compiled (RSS and
# goroutines per connection; target <= 2); for fanout, latency and
# channels the isolated ÷ compiled line also gives the p50 and p99 ratios
# (targets, issue 38: deliveries >= 0.5, p99 <= 2). ISO_BEFORE=path adds a
# side more: reso -isolate all of another binary (the one before a change),
# measured in the same rounds, with its own isolated ÷ compiled line. The
# default run takes 3 to 5 minutes on two cores.
#   bench/channel-vs-bare.sh [-rounds 5] [-idle-rounds 3] [-d 2s] [-warmup 500ms]
#                            [-n 10000] [-only fanout,latency,channels,idle] [-- reso flags...]
#   e.g. bench/channel-vs-bare.sh -only idle -idle-rounds 3
#        ISOLATED=1 bench/channel-vs-bare.sh -only idle
#        bench/channel-vs-bare.sh -- -isolate all      # the reso side isolated
#        ISOLATED=1 ISO_BEFORE=/tmp/reso-old bench/channel-vs-bare.sh -only fanout,latency,channels
# RESO=path uses a reso binary built elsewhere; SERVER_FLAGS adds reso flags
# as -- does.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
source bench/channel-lib.sh

rounds=5 idle_rounds=3 dur=2s warmup=500ms idle_n=10000 only=fanout,latency,channels,idle
usage() {
  echo "usage: bench/channel-vs-bare.sh [-rounds N] [-idle-rounds N] [-d DUR] [-warmup DUR] [-n CONNS] [-only LOADS] [-- reso flags...]" >&2
  exit 2
}
while [ $# -gt 0 ]; do
  case $1 in
    -rounds) rounds=${2:?}; shift 2 ;;
    -idle-rounds) idle_rounds=${2:?}; shift 2 ;;
    -d) dur=${2:?}; shift 2 ;;
    -warmup) warmup=${2:?}; shift 2 ;;
    -n) idle_n=${2:?}; shift 2 ;;
    -only) only=${2:?}; shift 2 ;;
    --) shift; break ;;
    *) usage ;;
  esac
done
for v in "$rounds" "$idle_rounds" "$idle_n"; do
  [[ $v =~ ^[1-9][0-9]*$ ]] || usage
done
split_args -- "$@"
reso_args=(-channel-max-connections 20000 "${server_args[@]}")
sides=(reso bare)
if [ -n "${ISOLATED:-}" ]; then
  sides+=(iso)
fi
if [ -n "${ISO_BEFORE:-}" ]; then
  [ -x "$ISO_BEFORE" ] || { echo "ISO_BEFORE=$ISO_BEFORE is not an executable" >&2; exit 2; }
  sides+=(isob)
fi
wants() { [[ ,$only, == *,$1,* ]]; }

out=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null; rm -rf "$out"' EXIT
raise_nofile
mkdir -p "$out/bin"
if [ -n "${RESO:-}" ]; then
  cp "$RESO" "$out/bin/reso"
else
  go build -o "$out/bin/reso" ./cmd/reso
fi
if [ -n "${ISO_BEFORE:-}" ]; then
  cp "$ISO_BEFORE" "$out/bin/reso-before"
fi
go build -o "$out/bin/wsbare" ./bench/wsbare
go build -o "$out/bin/chload" ./bench/channel
results=$out/results
: >"$results"

# start_side SIDE NAME: starts a fresh server of SIDE (reso, iso, isob or bare)
# in $out/NAME; sets $addr, $pid and $debug (its admin address).
start_side() {
  local side=$1 dir=$out/$2
  mkdir -p "$dir"
  case $side in
    reso | iso | isob)
      if [ "$side" = isob ]; then
        cp "$out/bin/reso-before" "$dir/reso"
      else
        cp "$out/bin/reso" "$dir/reso"
      fi
      server_args=("${reso_args[@]}")
      if [ "$side" != reso ]; then
        server_args+=(-isolate all)
      fi
      start_reso "$dir" >/dev/null
      ;;
    bare)
      start_server "$out/bin/wsbare" "$dir/bare.log" 'bare listening addr=' -addr 127.0.0.1:0 -admin-addr 127.0.0.1:0
      debug=$(grep -o 'bare admin listening addr=[^ ]*' "$dir/bare.log" | head -n1 | sed 's/.*addr=//')
      ;;
  esac
}

# stop_side PID: stops a server and waits for it.
stop_side() {
  kill "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}

# order ROUND: the sides, rotated by ROUND, so that each goes first in turn.
order() {
  local r=$1 n=${#sides[@]} i
  for ((i = 0; i < n; i++)); do
    echo "${sides[$(((i + r) % n))]}"
  done
}

# measure LOAD SIDE ROUND ARGS...: runs the load client with ARGS against
# the server of SIDE ($addr_SIDE...) and records its figures.
measure() {
  local load=$1 side=$2 round=$3
  shift 3
  local f=$out/$load-$side-$round.txt
  if "$out/bin/chload" "$@" >"$f" 2>&1; then
    echo "$load $side $(sed -n 's/^ *figures *//p' "$f")" >>"$results"
  else
    echo "FAILED: $load against $side, round $round:" >&2
    cat "$f" >&2
  fi
}

declare -A saddr spid sdebug
loads=()
for l in fanout latency channels; do
  if wants "$l"; then
    loads+=("$l")
  fi
done
if [ ${#loads[@]} -gt 0 ]; then
  for side in "${sides[@]}"; do
    start_side "$side" "$side"
    saddr[$side]=$addr spid[$side]=$pid sdebug[$side]=$debug
  done
  echo "servers: $(for s in "${sides[@]}"; do printf '%s %s (pid %s)  ' "$s" "${saddr[$s]}" "${spid[$s]}"; done)"
  echo "reso flags: ${reso_args[*]}"
  for ((r = 0; r < rounds; r++)); do
    for load in "${loads[@]}"; do
      case $load in
        fanout) args=(fanout -s 1000 -window 32 -data 100) ;;
        latency) args=(fanout -s 1000 -window 1 -data 100) ;;
        channels) args=(channels -n 1000 -s 1 -window 4 -data 100) ;;
      esac
      for side in $(order "$r"); do
        measure "$load" "$side" "$r" "${args[@]}" -d "$dur" -warmup "$warmup" -read-buf 16384 \
          -url "ws://${saddr[$side]}/channel" -pid "${spid[$side]}"
      done
    done
    echo "round $((r + 1)) of $rounds done"
  done
  for side in "${sides[@]}"; do
    stop_side "${spid[$side]}"
  done
fi
if wants idle; then
  for ((r = 0; r < idle_rounds; r++)); do
    for side in $(order "$r"); do
      start_side "$side" "idle-$side-$r"
      measure idle "$side" "$r" idle -n "$idle_n" -url "ws://$addr/channel" -pid "$pid" -debug "$debug"
      stop_side "$pid"
    done
    echo "idle round $((r + 1)) of $idle_rounds done"
  done
fi

# median LOAD SIDE KEY: the median of KEY over the rounds, "-" for none.
median() {
  awk -v L="$1" -v S="$2" -v K="$3" '$1 == L && $2 == S {
      for (i = 3; i <= NF; i++) { split($i, kv, "="); if (kv[1] == K) print kv[2] } }' "$results" |
    sort -g | awk '{ v[NR] = $1 } END {
      if (NR == 0) { print "-"; exit }
      if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# ratio A B: A ÷ B with two decimals, "-" when either is unknown.
ratio() {
  awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b == 0) print "-"; else printf "%.2f", a / b }'
}

# pct SHARE: a share (0.45) as a percentage (45%).
pct() {
  awk -v s="$1" 'BEGIN { if (s == "-") print "-"; else printf "%.0f%%", 100 * s }'
}

name() {
  case $1 in
    reso) echo "reso" ;;
    bare) echo "bare" ;;
    iso) echo "reso -isolate all" ;;
    isob) echo "isolated, before" ;;
  esac
}

echo
for load in "${loads[@]}"; do
  case $load in
    fanout) echo "fan-out: 1 publisher -> 1,000 subscribers, 32 in flight, 100 B (medians of $rounds rounds, $dur each)" ;;
    latency) echo "latency: 1 publisher -> 1,000 subscribers, 1 in flight, 100 B (medians of $rounds rounds, $dur each)" ;;
    channels) echo "channels: 1,000 channels, one subscriber each, 4 in flight per publisher, 100 B (medians of $rounds rounds, $dur each)" ;;
  esac
  printf '  %-20s %13s %12s %7s %9s %9s %8s\n' side deliveries/s "µs/delivery" system "p50 µs" "p99 µs" missing
  for side in "${sides[@]}"; do
    printf '  %-20s %13s %12s %7s %9s %9s %8s\n' "$(name "$side")" \
      "$(median "$load" "$side" deliveries_per_s)" "$(median "$load" "$side" server_us_per_delivery)" \
      "$(pct "$(median "$load" "$side" sys_share)")" "$(median "$load" "$side" p50_us)" \
      "$(median "$load" "$side" p99_us)" "$(median "$load" "$side" missing)"
  done
  printf '  %-20s %13s %12s\n' "reso ÷ bare" \
    "$(ratio "$(median "$load" reso deliveries_per_s)" "$(median "$load" bare deliveries_per_s)")" \
    "$(ratio "$(median "$load" reso server_us_per_delivery)" "$(median "$load" bare server_us_per_delivery)")"
  for iso in iso isob; do
    if [[ " ${sides[*]} " == *" $iso "* ]]; then
      label="isolated ÷ compiled"
      [ "$iso" = isob ] && label="before ÷ compiled"
      printf '  %-20s %13s %12s %7s %9s %9s\n' "$label" \
        "$(ratio "$(median "$load" $iso deliveries_per_s)" "$(median "$load" reso deliveries_per_s)")" \
        "$(ratio "$(median "$load" $iso server_us_per_delivery)" "$(median "$load" reso server_us_per_delivery)")" "" \
        "$(ratio "$(median "$load" $iso p50_us)" "$(median "$load" reso p50_us)")" \
        "$(ratio "$(median "$load" $iso p99_us)" "$(median "$load" reso p99_us)")"
    fi
  done
done
if wants idle; then
  echo "idle: $idle_n WebSockets, each subscribed to its own resource, a fresh server per side and round (medians of $idle_rounds rounds)"
  printf '  %-20s %14s %15s %16s\n' side "RSS KiB/conn" "heap KiB/conn" "goroutines/conn"
  for side in "${sides[@]}"; do
    printf '  %-20s %14s %15s %16s\n' "$(name "$side")" "$(median idle "$side" rss_kib_per_conn)" \
      "$(median idle "$side" heap_kib_per_conn)" "$(median idle "$side" goroutines_per_conn)"
  done
  printf '  %-20s %14s %15s %16s\n' "reso ÷ bare" \
    "$(ratio "$(median idle reso rss_kib_per_conn)" "$(median idle bare rss_kib_per_conn)")" \
    "$(ratio "$(median idle reso heap_kib_per_conn)" "$(median idle bare heap_kib_per_conn)")" \
    "$(ratio "$(median idle reso goroutines_per_conn)" "$(median idle bare goroutines_per_conn)")"
  if [ -n "${ISOLATED:-}" ]; then
    printf '  %-20s %14s %15s %16s\n' "isolated ÷ compiled" \
      "$(ratio "$(median idle iso rss_kib_per_conn)" "$(median idle reso rss_kib_per_conn)")" \
      "$(ratio "$(median idle iso heap_kib_per_conn)" "$(median idle reso heap_kib_per_conn)")" \
      "$(ratio "$(median idle iso goroutines_per_conn)" "$(median idle reso goroutines_per_conn)")"
  fi
fi
