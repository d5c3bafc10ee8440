#!/bin/sh
# Every dynamic symbol the shared library defines starts with rc_.
set -eu
lib="$1"
syms=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVW]$/ { print $3 }')
[ -n "$syms" ] || { echo "no exported symbols in $lib"; exit 1; }
bad=$(printf '%s\n' "$syms" | grep -v '^rc_' || true)
if [ -n "$bad" ]; then
  echo "symbols without the rc_ prefix:"; printf '%s\n' "$bad"; exit 1
fi
internal=$(printf '%s\n' "$syms" | grep '^rc__' || true)
if [ -n "$internal" ]; then
  echo "internal symbols exported:"; printf '%s\n' "$internal"; exit 1
fi
echo "$(printf '%s\n' "$syms" | wc -l) symbols, all rc_"
