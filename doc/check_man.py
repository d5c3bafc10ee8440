#!/usr/bin/env python3
"""Checks the man pages against the public header.

Usage: check_man.py HEADER PAGE...

- every function the header declares with RC_API has a page of its name
  (a page, or a .so link to one) that lists it under NAME and declares it
  under SYNOPSIS exactly as the header does (white space normalised);
- no SYNOPSIS declares an rc_ function the header does not have;
- every page has the sections its kind needs (the overviews, respchain(3)
  and respchain-*(3), declare no function);
- every page (links aside) renders with man --warnings without a warning.
"""
import os
import re
import shutil
import subprocess
import sys

FUNCTION_SECTIONS = ["NAME", "SYNOPSIS", "DESCRIPTION", "RETURN VALUE",
                     "ERRORS", "EXAMPLE", "SEE ALSO"]
OVERVIEW_SECTIONS = ["NAME", "SYNOPSIS", "DESCRIPTION", "SEE ALSO"]
PROGRAM_SECTIONS = ["NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS",
                    "EXIT STATUS", "SEE ALSO"]


def normalise(decl):
    """One spelling of a declaration: single spaces, none around punctuation."""
    decl = re.sub(r"\s+", " ", decl).strip()
    decl = re.sub(r"\s*([(),*\[\]])\s*", r"\1", decl)
    return decl.rstrip(";")


def header_functions(path):
    """{name: normalised declaration} of every RC_API function."""
    text = open(path, encoding="utf-8").read()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = "\n".join(l for l in text.splitlines()
                     if not l.lstrip().startswith("#"))
    found = {}
    for m in re.finditer(r"\bRC_API\b([^;]*);", text):
        decl = normalise(m.group(1))
        name = re.search(r"(\w+)\(", decl).group(1)
        found[name] = decl
    return found


def unescape(s):
    """Roff escapes of the pages, as the text they stand for."""
    s = re.sub(r"\\f[BIRP]", "", s)
    s = s.replace(r"\&", "").replace(r"\-", "-").replace(r"\(dq", '"')
    return s.replace(r"\e", "\\")


def macro_text(line):
    """The text of a font macro line (.B, .BI, ...) or of a text line."""
    if not line.startswith("."):
        return unescape(line)
    name, _, rest = line[1:].partition(" ")
    args = [a if q == "" else q.replace('""', '"')
            for q, a in re.findall(r'"((?:[^"]|"")*)"|(\S+)', rest)]
    if name in ("B", "I"):
        return unescape(" ".join(args))
    if name in ("BI", "IB", "BR", "RB", "IR", "RI"):
        return unescape("".join(args))
    return None  # .nf, .fi, .PP: layout only


def sections(lines):
    """{section title: [lines]} of a page."""
    out, cur = {}, None
    for line in lines:
        m = re.match(r'\.SH\s+"?([^"]*)"?\s*$', line)
        if m:
            cur = m.group(1)
            out[cur] = []
        elif cur:
            out[cur].append(line)
    return out


def synopsis_declarations(lines):
    """{name: normalised declaration} of the functions in a SYNOPSIS."""
    decls, cur = {}, ""
    for line in lines:
        text = macro_text(line)
        if text is None or text.startswith("#"):
            continue
        cur += " " + text
        if text.rstrip().endswith(";"):
            decl = normalise(cur)
            cur = ""
            m = re.search(r"(\w+)\(", decl)
            if m and not decl.startswith("typedef"):
                decls[m.group(1)] = decl
    return decls


def render_warnings(path):
    """What man --warnings says about a page (empty when clean)."""
    env = dict(os.environ, MANWIDTH="80", LC_ALL="C.UTF-8")
    run = subprocess.run(["man", "--warnings", "-E", "UTF-8", "-l", path],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=env, check=False)
    if run.returncode != 0 or not run.stdout.strip():
        return "man exited with %d: %s" % (run.returncode,
                                           run.stderr.decode(errors="replace"))
    return run.stderr.decode(errors="replace").strip()


def main(argv):
    header, pages = argv[1], argv[2:]
    funcs = header_functions(header)
    by_name = {os.path.basename(p): p for p in pages}
    errors = []
    if shutil.which("man") is None:
        errors.append("man (man-db) is not installed: sh .ci/deps")

    parsed = {}  # basename -> sections, for real pages
    for base, path in sorted(by_name.items()):
        lines = open(path, encoding="utf-8").read().splitlines()
        if lines and lines[0].startswith(".so "):
            target = os.path.basename(lines[0].split()[1])
            if target not in by_name:
                errors.append("%s: links to missing %s" % (base, target))
            continue
        secs = sections(lines)
        parsed[base] = secs
        need = (PROGRAM_SECTIONS if base.endswith(".1") else
                OVERVIEW_SECTIONS if base.startswith("respchain") else
                FUNCTION_SECTIONS)
        for s in need:
            if s not in secs:
                errors.append("%s: no %s section" % (base, s))
        for name, decl in synopsis_declarations(secs.get("SYNOPSIS", [])).items():
            if name.startswith("rc_") and name not in funcs:
                errors.append("%s: declares %s, which the header does not"
                              % (base, name))
        if errors and errors[0].startswith("man "):
            continue
        said = render_warnings(path)
        if said:
            errors.append("%s: renders with warnings:\n%s" % (base, said))

    for name, decl in sorted(funcs.items()):
        page = name + ".3"
        if page not in by_name:
            errors.append("%s: no man page %s" % (name, page))
            continue
        first = open(by_name[page], encoding="utf-8").readline()
        if first.startswith(".so "):
            page = os.path.basename(first.split()[1])
        secs = parsed.get(page)
        if secs is None:
            errors.append("%s: page %s is missing" % (name, page))
            continue
        names = " ".join(secs.get("NAME", []))
        if not re.search(r"\b%s\b" % re.escape(name), names.split("\\-")[0]):
            errors.append("%s: not listed under NAME in %s" % (name, page))
        got = synopsis_declarations(secs.get("SYNOPSIS", [])).get(name)
        if got != decl:
            errors.append("%s: SYNOPSIS of %s says\n  %s\nthe header says\n  %s"
                          % (name, page, got, decl))

    for e in errors:
        print(e)
    print("%d functions, %d pages: %s" % (len(funcs), len(pages),
                                         "FAILED" if errors else "all good"))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
