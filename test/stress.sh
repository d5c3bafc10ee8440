#!/bin/sh
# Runs the whole suite of one build directory RUNS times in a row (default
# 10) while two busy loops keep both cores loaded, and stops at the first
# run that fails, saying which run and which tests. Run by hand, not by CI:
# a suite that passes here does not depend on an idle machine.
#
#   sh test/stress.sh BUILD_DIR [RUNS [MESON-TEST-ARGS...]]
#
#   sh test/stress.sh build                  the whole suite, 10 times
#   sh test/stress.sh build-curl-8.5.0 3     3 times
#   sh test/stress.sh build 5 uvscan scan    only those tests, 5 times
#
# The busy loops are started here and killed when the script ends, however
# it ends. Each run's output is kept in BUILD_DIR/meson-logs/stress-N.txt
# (meson's own testlog.txt holds the last run's). Exit status: 0 when every
# run passed, 1 at the first failing run, 2 for bad arguments.
set -u

usage() {
  echo "usage: sh test/stress.sh BUILD_DIR [RUNS [MESON-TEST-ARGS...]]" >&2
  exit 2
}
[ $# -ge 1 ] || usage
build=$1
shift
runs=10
if [ $# -ge 1 ]; then
  runs=$1
  shift
fi
case $runs in '' | *[!0-9]* | 0) usage ;; esac
[ -d "$build/meson-logs" ] || {
  echo "stress: $build is not a meson build directory" >&2
  exit 2
}

burners=
stop_burners() {
  for pid in $burners; do
    kill "$pid" 2>/dev/null
  done
  burners=
}
trap stop_burners EXIT
trap 'stop_burners; exit 130' INT
trap 'stop_burners; exit 143' TERM
for _ in 1 2; do # one per core
  sh -c 'while :; do :; done' &
  burners="$burners $!"
done

echo "stress: $build, $runs runs, load: busy loops$burners"
bad='^ *[0-9]+/[0-9]+ .* (FAIL|TIMEOUT|ERROR|UNEXPECTEDPASS) '
run=1
while [ "$run" -le "$runs" ]; do
  log="$build/meson-logs/stress-$run.txt"
  start=$(date +%s)
  meson test -C "$build" --print-errorlogs "$@" >"$log" 2>&1
  status=$?
  took=$(($(date +%s) - start))
  if [ "$status" -eq 0 ] && ! grep -Eq '^Ok: +[1-9]' "$log"; then
    echo "stress: run $run of $runs ran no test (output: $log)"
    exit 1
  fi
  if [ "$status" -ne 0 ]; then
    # "N/M project:suite / name STATUS ...", again in meson's summary: the
    # name is the field before the status.
    failed=$(grep -E "$bad" "$log" | awk '!seen[$0]++' | tee "$log.failed" |
      awk '{ for (i = 2; i <= NF; i++) if ($i ~ /^(FAIL|TIMEOUT|ERROR|UNEXPECTEDPASS)$/) {
               print $(i - 1); break } }' | tr '\n' ' ')
    echo "stress: run $run of $runs FAILED after $took s: ${failed:-see the log} (output: $log)"
    cat "$log.failed"
    rm -f "$log.failed"
    # Check's lines for a failed or erroring test: FILE:LINE:F|E:CASE:TEST:...
    grep -E '^[^ :]+:[0-9]+:[FE]:' "$log" | head -n 20
    exit 1
  fi
  echo "stress: run $run of $runs passed in $took s"
  run=$((run + 1))
done
echo "stress: all $runs runs passed"
