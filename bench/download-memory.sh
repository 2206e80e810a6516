#!/usr/bin/env bash
# Peak resident memory (VmHWM) of the server and of the files plugin process
# while a 1 GiB file downloads through an isolated files plugin (-isolate
# all), next to the server's with the plugins compiled in. The file is
# sparse (no disk needed); the client (curl) discards the body. A Range
# request checks that ranges still work. Target (issue 4): host and plugin
# each under 64 MiB.
#   bench/download-memory.sh [SIZE]       SIZE for truncate -s, default 1G
set -euo pipefail
cd "$(dirname "$0")/.."
size=${1:-1G}
out=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null; rm -rf "$out"' EXIT
go build -o "$out/reso" ./cmd/reso
source bench/lib.sh
mkdir "$out/data"
truncate -s "$size" "$out/data/big.bin"
bytes=$(stat -c %s "$out/data/big.bin")

hwm() { awk '/^VmHWM/{printf "%.1f MiB", $2/1024}' "/proc/$1/status"; }
rss() { awk '/^VmRSS/{printf "%.1f MiB", $2/1024}' "/proc/$1/status"; }

download() { # URL: prints size and speed of a download discarded by curl
  curl -sS -o /dev/null -w '%{size_download} bytes in %{time_total} s (%{speed_download} B/s)\n' "$1"
}

for mode in compiled isolated; do
  args=(-addr 127.0.0.1:0 -db :memory: -directory "$out/data")
  [ "$mode" = isolated ] && args+=(-isolate all)
  start_server "$out/reso" "$out/$mode.log" 'msg="reso listening" addr=' "${args[@]}"
  pid=$!
  files=""
  [ "$mode" = isolated ] && files=$(pgrep -P "$pid" -f 'reso plugin files')
  echo "== $mode: before: server $(rss "$pid")${files:+, files plugin $(rss "$files")}"
  got=$(download "http://$addr/file/big.bin")
  echo "   download: $got"
  case $got in "$bytes bytes"*) ;; *) echo "   WRONG SIZE (want $bytes)"; exit 1 ;; esac
  range=$(curl -sS -o /dev/null -w '%{http_code} %{size_download}' -r 536870912-537919487 "http://$addr/file/big.bin")
  echo "   Range 512 MiB + 1 MiB: $range (want 206 1048576)"
  echo "   peak resident (VmHWM): server $(hwm "$pid")${files:+, files plugin $(hwm "$files")}"
  kill "$pid"
  wait "$pid" 2>/dev/null || true
done
