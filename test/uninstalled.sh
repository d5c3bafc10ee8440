#!/bin/sh
# The build tree's pkg-config file (meson-uninstalled/respchain-uninstalled.pc,
# as README says) builds a program against the library before any install,
# and the program runs with the library of the build tree.
set -eu
build="$1"
cc="${2:-cc}"
sanitize="${3:-none}" # the build's b_sanitize: the program needs its runtime too
flags=""
[ "$sanitize" = none ] || flags="-fsanitize=$sanitize"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/use.c" <<'C'
#include <respchain.h>
#include <stdio.h>
#include <string.h>
int main(void)
{
  printf("%s\n", rc_version());
  return strcmp(rc_version(), RC_VERSION) != 0;
}
C
PKG_CONFIG_PATH="$build/meson-uninstalled"
export PKG_CONFIG_PATH
pkg-config --exists respchain-uninstalled ||
  { echo "no respchain-uninstalled.pc in $build/meson-uninstalled"; exit 1; }
# shellcheck disable=SC2086 # flags and pkg-config's output are word lists
"$cc" $flags "$work/use.c" -o "$work/use" $(pkg-config --cflags --libs respchain)
LD_LIBRARY_PATH="$build/lib" "$work/use"
