#!/bin/sh
# The bench's scenario h2 against several libcurl builds: one markdown
# table, a row per curl version and mode (doc/curl-versions.md).
#
#   test/bench/curl-matrix.sh [-r RUNS] [-o FILE] [-d DIR] [-a ARGS] [PREFIX | system]...
#
# For each PREFIX (a libcurl installed there: PREFIX/lib/pkgconfig/libcurl.pc;
# default: every /var/cache/respchain-curl/*/ and "system", the libcurl
# pkg-config finds), builds the bench of this source tree in DIR/PREFIX's
# name (meson -Dbench=true -Dexamples=false; DIR defaults to
# ${TMPDIR:-/tmp}/respchain-curl-matrix; a build dir that is there is
# reused), runs "bench --scenario h2 --runs RUNS --csv" (RUNS: 2) and
# gathers its h2 rows (ARGS: more bench options, split at blanks, e.g.
# -a --quick for a smoke run). The curl of a row is the one the bench ran with
# (curl_version_info), which is checked against the prefix's libcurl.pc.
# The table goes to FILE (default: stdout), followed by notes on anything
# that did not build or run as expected; each build's and run's output
# stays in DIR. Runs one build or bench at a time: the bench measures wall
# time, so run it on a machine otherwise idle.
#
# Needs meson, ninja, awk (and nginx and openssl, as scenario h2 does).
set -u

runs=2
out=
dir=${TMPDIR:-/tmp}/respchain-curl-matrix
args=
while getopts r:o:d:a: opt; do
  case $opt in
  r) runs=$OPTARG ;;
  o) out=$OPTARG ;;
  d) dir=$OPTARG ;;
  a) args=$OPTARG ;;
  *)
    echo "usage: $0 [-r RUNS] [-o FILE] [-d DIR] [-a ARGS] [PREFIX | system]..." >&2
    exit 2
    ;;
  esac
done
shift $((OPTIND - 1))
src=$(cd "$(dirname "$0")/../.." && pwd) || exit 1
if [ $# -eq 0 ]; then
  set -- system /var/cache/respchain-curl/*/
fi
mkdir -p "$dir/rows" "$dir/load" || exit 1
rm -f "$dir"/rows/* "$dir"/load/* "$dir/notes"

note() {
  echo "$*" >>"$dir/notes"
  echo "curl-matrix: $*" >&2
}

# The version of the libcurl.pc in a pkg-config dir (empty: none).
pc_version() {
  awk -F': *' '$1 == "Version" { print $2 }' "$1/libcurl.pc" 2>/dev/null
}

# A version as a sort key: 8.5.0 -> 008005000.
sort_key() {
  echo "$1" | awk -F'[.-]' '{ printf "%03d%03d%03d\n", $1, $2, $3 }'
}

# The row of a version that did not get as far as the bench's table.
fail_row() {
  v=${want:-$name}
  printf '| %s | | %s | | | | | | | |\n' "${v%-DEV}" "$1" >"$dir/rows/$(sort_key "${want:-0}")"
}

for prefix in "$@"; do
  prefix=${prefix%/}
  if [ "$prefix" = system ]; then
    name=system
    set_pc=
    want=
  else
    name=$(basename "$prefix")
    set_pc=--pkg-config-path=$prefix/lib/pkgconfig
    want=$(pc_version "$prefix/lib/pkgconfig")
    if [ -z "$want" ]; then
      note "$prefix: no lib/pkgconfig/libcurl.pc, skipped"
      continue
    fi
    [ "$name" = "${want%-DEV}" ] || note "$prefix: its libcurl.pc says version $want"
  fi
  b=$dir/$name
  echo "curl-matrix: $name: building in $b" >&2
  if [ -f "$b/build.ninja" ]; then
    # shellcheck disable=SC2086 # set_pc is one word or none
    meson setup --reconfigure "$b" "$src" $set_pc -Dbench=true -Dexamples=false \
      >"$b/setup.log" 2>&1
  else
    mkdir -p "$b"
    # shellcheck disable=SC2086
    meson setup "$b" "$src" $set_pc -Dbench=true -Dexamples=false >"$b/setup.log" 2>&1
  fi || {
    note "$name: meson setup failed (see $b/setup.log): $(grep -m1 -i 'error' "$b/setup.log")"
    fail_row "did not configure"
    continue
  }
  if ! ninja -C "$b" test/bench >"$b/build.log" 2>&1; then
    note "$name: the build failed (see $b/build.log)"
    fail_row "did not build"
    continue
  fi
  echo "curl-matrix: $name: bench --scenario h2 --runs $runs $args" >&2
  # shellcheck disable=SC2086 # args is split on purpose
  "$b/test/bench" --scenario h2 --runs "$runs" $args --csv >"$b/h2.csv" 2>"$b/h2.log"
  rc=$?
  got=$(awk -F, '$1 == "h2" { sub(/^curl /, "", $45); sub(/;.*/, "", $45); print $45; exit }' \
    "$b/h2.csv")
  if [ -z "$got" ]; then
    note "$name: the bench gave no h2 rows (exit $rc; see $b/h2.log)"
    fail_row "did not run"
    continue
  fi
  [ "$rc" -eq 0 ] || note "$name: the bench exited $rc (see $b/h2.log)"
  shown=${got%-DEV}
  [ "$name" = system ] && shown="$shown (system)"
  [ -n "$want" ] && [ "$name" != "${want%-DEV}" ] && shown="$shown (in $name/)"
  load=$(awk -F'loadavg at start: ' 'NF > 1 { print $2 }' "$b/h2.log" |
    awk '{ printf "%s at start, %s at the end", $1, $8 }')
  [ -z "$load" ] || echo "$shown: load average (1 min) $load" >"$dir/load/$(sort_key "$got")"
  [ -z "$want" ] || [ "$got" = "$want" ] ||
    note "$name: ran with curl $got, its libcurl.pc says $want"
  awk -F, -v curl="$shown" -v name="$name" -v notes="$dir/notes" '
    $1 != "h2" { next }
    {
      mode = $2; failed = $4; notes_col = $45
      if (notes_col ~ /FAILED/ || failed > 0)
        print name ": mode " mode ": " notes_col \
          (failed > 0 ? "; " failed " bodies failed" : "") >>notes
      if ($40 > 1)
        print name ": mode " mode ": " $40 " connections" >>notes
      if ($3 == 0) {
        printf "| %s | %s | failed | | | | | | | |\n", (first++ ? "" : curl), mode
        next
      }
      target = $44
      sub(/rss wall/, "RSS and wall", target)
      sub(/rss/, "RSS", target)
      target = target == "" ? "-" : target == "met" ? "met" : "**" target "**"
      if ($44 != "")
        target = target " (" $42 " MiB, " $43 "x)"
      printf "| %s | %s | %.0f | %.0f | %.2f | %.2f | %s | %s | %s |\n",
        (first++ ? "" : curl), mode, $16, $39, $6, $7, $36, $31, target
    }' "$b/h2.csv" >"$dir/rows/$(sort_key "$got")"
done

if [ -n "$out" ]; then
  exec >"$out" || exit 1
fi
{
  echo "| curl | mode | peak RSS MiB | max | wall s | x discard | spills | pauses | targets |"
  echo "|---|---|---:|---:|---:|---:|---:|---:|---|"
  for f in "$dir"/rows/*; do
    [ -f "$f" ] && cat "$f"
  done
  if [ -s "$dir/notes" ]; then
    echo
    sed 's/^/- /' "$dir/notes"
  fi
  echo
  for f in "$dir"/load/*; do
    [ -f "$f" ] && sed 's/^/- /' "$f"
  done
}
