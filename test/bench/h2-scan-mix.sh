#!/bin/sh
# scan's peak memory over a scanner's mixed HTTP/2 targets: N URLs (default
# 5,000) served over TLS on loopback by the nginx fixture (build/test/h2mix:
# bodies of 1 KiB to 8 MiB, plain, br and zstd, bombs, 404s), fetched by
#
#   scan -k --http2 -s -l TARGETS -o OUT [ARGS...]
#
# (default ARGS: -c 200 --budget 64m) under /usr/bin/time -v. Prints the peak
# RSS in MiB, the wall time, and whether every output line is right: each
# target's url, status_code, body_bytes, truncated and failed against what
# h2mix expects of it (the differences, if any, on stderr). Exit status 0
# only when every line is right.
#
#   test/bench/h2-scan-mix.sh BUILD [-n N] [-r RUNS] [-- ARGS...]
#
# BUILD is a build directory configured with -Dbench=true and
# -Dexamples=true (scan and h2mix are in it); built against a curl of
# .ci/curl, it measures that curl (LD_LIBRARY_PATH is not needed: meson
# links with its rpath). -r runs scan RUNS times against one server.
set -eu

build=${1:?usage: h2-scan-mix.sh BUILD [-n N] [-r RUNS] [-- ARGS...]}
shift
n=5000
runs=1
while [ $# -gt 0 ]; do
  case $1 in
  -n) n=$2; shift 2 ;;
  -r) runs=$2; shift 2 ;;
  --) shift; break ;;
  *) echo "h2-scan-mix.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[ $# -gt 0 ] || set -- -c 200 --budget 64m

scan=$build/examples/scan/scan
[ -x "$scan" ] || scan=$build/examples/scan
mix=$build/test/h2mix
for p in "$scan" "$mix" /usr/bin/time jq; do
  command -v "$p" >/dev/null || { echo "h2-scan-mix.sh: $p not found" >&2; exit 2; }
done

dir=$(mktemp -d "${TMPDIR:-/tmp}/h2-scan-mix.XXXXXX")
fifo=$dir/serve
mkfifo "$fifo"
# h2mix serves until its standard input ends: the fifo, held open below.
"$mix" "$dir" "$n" <"$fifo" >"$dir/ready" &
server=$!
exec 3>"$fifo"
cleanup() {
  exec 3>&-
  wait "$server" 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT INT TERM
while [ ! -s "$dir/ready" ]; do
  kill -0 "$server" 2>/dev/null || { echo "h2-scan-mix.sh: h2mix failed" >&2; exit 1; }
  sleep 0.1
done

echo "curl: $("$scan" --version 2>/dev/null | grep -o 'libcurl/[^ ]*' | head -1)," \
  "$n targets, scan -k --http2 $*, load: $(cut -d' ' -f1-3 /proc/loadavg)"
status=0
run=1
while [ "$run" -le "$runs" ]; do
  /usr/bin/time -v -o "$dir/time" "$scan" -k --http2 -s -l "$dir/targets.txt" \
    -o "$dir/out.jsonl" "$@" || true
  rss=$(awk -F': ' '/Maximum resident/ { printf "%.0f", $2 / 1024 }' "$dir/time")
  wall=$(awk '/Elapsed \(wall/ { print $NF }' "$dir/time")
  jq -r '[.url, .status_code, .body_bytes, .truncated, .failed] | @tsv' "$dir/out.jsonl" |
    sort >"$dir/got.tsv"
  sort "$dir/expected.tsv" >"$dir/want.tsv"
  if cmp -s "$dir/got.tsv" "$dir/want.tsv"; then
    verdict="every line right"
  else
    verdict="$(diff "$dir/want.tsv" "$dir/got.tsv" | grep -c '^[<>]') lines differ"
    diff "$dir/want.tsv" "$dir/got.tsv" | head -20 >&2
    status=1
  fi
  echo "run $run: peak RSS $rss MiB, wall $wall, $(wc -l <"$dir/got.tsv") lines, $verdict"
  run=$((run + 1))
done
exit $status
