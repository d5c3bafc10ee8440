#!/usr/bin/env python3
"""Writes the program a document shows, as a C file, so that it is built.

Usage: example.py SOURCE OUT

SOURCE is a man page (the EXAMPLE section's text between .nf and .fi, roff
escapes undone) or a Markdown file (the first ```c block that defines
main). Fails when there is no such program.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_man import sections, unescape  # noqa: E402


def from_page(text):
    secs = sections(text.splitlines())
    out, inside = [], False
    for line in secs.get("EXAMPLE", []):
        if line.startswith(".nf"):
            inside = True
        elif line.startswith(".fi"):
            inside = False
        elif inside:
            out.append(unescape(line))
    return "\n".join(out) + "\n"


def from_markdown(text):
    block = None
    for line in text.splitlines():
        if block is None:
            if line.strip() == "```c":
                block = []
        elif line.strip() == "```":
            code = "\n".join(block) + "\n"
            if "int main(" in code:
                return code
            block = None
        else:
            block.append(line)
    return ""


def main(argv):
    src, out = argv[1], argv[2]
    text = open(src, encoding="utf-8").read()
    code = from_markdown(text) if src.endswith(".md") else from_page(text)
    if "int main(" not in code:
        print("%s: no complete program" % src, file=sys.stderr)
        return 1
    with open(out, "w", encoding="utf-8") as f:
        f.write("/* Made by doc/example.py from %s: edit that. */\n"
                % os.path.basename(src))
        f.write(code)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
