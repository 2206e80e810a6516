# Helpers for the bench/channel-*.sh scripts (sourced after bench/lib.sh).

# split_args ARGS...: the arguments before "--" go to the load client
# (client_args), those after it to reso (server_args), after the words of
# $SERVER_FLAGS (e.g. SERVER_FLAGS='-channel-max-connections 20000').
split_args() {
  client_args=()
  server_args=()
  local a rest=
  if [ -n "${SERVER_FLAGS:-}" ]; then
    read -r -a server_args <<<"$SERVER_FLAGS"
  fi
  for a in "$@"; do
    if [ -z "$rest" ] && [ "$a" = -- ]; then
      rest=1
    elif [ -n "$rest" ]; then
      server_args+=("$a")
    else
      client_args+=("$a")
    fi
  done
}

# raise_nofile: raises the open-files limit of this shell (and so of reso
# and the load client) to the hard limit; each holds one descriptor per
# connection.
raise_nofile() {
  ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
}

# start_reso DIR: starts DIR/reso in DIR with its database in DIR, pprof on
# a free loopback port and server_args; sets $addr, $pid (as start_server)
# and $debug (the -admin-addr address, with -pprof).
start_reso() {
  local dir=$1
  pushd "$dir" >/dev/null
  start_server "$dir/reso" "$dir/reso.log" 'msg="reso listening" addr=' \
    -addr 127.0.0.1:0 -db "$dir/reso.db" -admin-addr 127.0.0.1:0 -pprof "${server_args[@]}"
  popd >/dev/null
  debug=$(grep -o 'msg="reso admin listening" addr=[^ ]*' "$dir/reso.log" | head -n1 | sed 's/.*addr=//')
  if [ -z "$debug" ]; then
    echo "reso did not log its debug address:" >&2
    cat "$dir/reso.log" >&2
    return 1
  fi
  echo "reso $addr (pid $pid, pprof $debug) ${server_args[*]}"
}

# build_channel DIR: builds reso (or copies $RESO, a binary built
# elsewhere) and the load client into DIR.
build_channel() {
  local dir=$1
  if [ -n "${RESO:-}" ]; then
    cp "$RESO" "$dir/reso"
  else
    go build -o "$dir/reso" ./cmd/reso
  fi
  go build -o "$dir/chload" ./bench/channel
}

# start_bare DIR: builds bench/wsbare into DIR and starts it there (the
# bare server of bench/wsbare, for the phases it speaks: NOTIFY, PUT,
# SUBSCRIBE); sets $addr, $pid and $debug as start_reso does.
start_bare() {
  local dir=$1
  go build -o "$dir/wsbare" ./bench/wsbare
  start_server "$dir/wsbare" "$dir/bare.log" 'bare listening addr=' -addr 127.0.0.1:0 -admin-addr 127.0.0.1:0
  debug=$(grep -o 'bare admin listening addr=[^ ]*' "$dir/bare.log" | head -n1 | sed 's/.*addr=//')
  echo "bare $addr (pid $pid, pprof $debug)"
}

# channel_bench CMD [FLAGS...] -- ARGS...: the whole of a
# bench/channel-*.sh script. It builds reso and the load client into a
# temporary directory (removed at exit), starts reso with the server
# arguments of ARGS (after their "--") and runs the load client's CMD
# against it with FLAGS and the client arguments of ARGS. With BARE=1 the
# server is bench/wsbare instead of reso (start_bare).
channel_bench() {
  local cmd=$1
  shift
  local flags=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do
    flags+=("$1")
    shift
  done
  [ $# -gt 0 ] && shift
  out=$(mktemp -d)
  trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null; rm -rf "$out"' EXIT
  split_args "$@"
  raise_nofile
  build_channel "$out"
  if [ -n "${BARE:-}" ]; then
    start_bare "$out"
  else
    start_reso "$out"
  fi
  "$out/chload" "$cmd" -url "ws://$addr/channel" -pid "$pid" -debug "$debug" "${flags[@]}" "${client_args[@]}"
}
