# Helpers for the bench scripts (sourced).

# start_server BINARY LOG PREFIX ARGS...: starts BINARY in the background
# with ARGS, logging to LOG, waits until LOG shows PREFIX<addr>, and sets
# $addr (also written to LOG's directory as <binary name>.addr) and $pid.
start_server() {
  local bin=$1 log=$2 prefix=$3
  shift 3
  "$bin" "$@" >"$log" 2>&1 &
  pid=$!
  for _ in $(seq 1 200); do
    addr=$(grep -o "${prefix}[^ ]*" "$log" 2>/dev/null | head -n1 | sed "s/^${prefix}//") || true
    if [ -n "$addr" ]; then
      echo "$addr" >"$(dirname "$log")/$(basename "$bin").addr"
      return 0
    fi
    sleep 0.05
  done
  echo "server $bin did not start:" >&2
  cat "$log" >&2
  return 1
}

# build_with_reso OUT PROGRAM: builds reso into OUT/reso (or copies $RESO,
# a reso built elsewhere) and the load program ./bench/PROGRAM into
# OUT/PROGRAM, and raises the descriptor limit to its hard limit.
build_with_reso() {
  local out=$1 prog=$2
  if [ -n "${RESO:-}" ]; then
    cp "$RESO" "$out/reso"
  else
    go build -o "$out/reso" ./cmd/reso
  fi
  go build -o "$out/$prog" "./bench/$prog"
  ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
}
