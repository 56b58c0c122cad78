#!/usr/bin/env python3
"""Every relative link and every path named in code of the project's Markdown resolves.

Checks every Markdown file of the tree (folders whose names start with '.', 'build' or
'out' left out; fenced code blocks left out): the
target file or folder of each relative link exists, and a link's #anchor names a heading
of its target (GitHub's rule: lower case, punctuation other than '-' and '_' dropped,
spaces to '-'); and every inline code span that is a path in the tree (it starts with one
of the top folders, e.g. `systemc/gpu/hub.cpp`, or with `data/` in docs/results) names a
file or folder that exists, or the stem of one (`systemc/gpu/sm_array` for its .hpp and
.cpp, a test binary by its source). Prints each broken one as FILE:LINE: TARGET (why) and
exits 1 if there is any, 0 otherwise.

  tests/repo/check_doc_links.py ROOT
  tests/repo/check_doc_links.py --planted DIR   # writes a tree with three broken references
                                                # into DIR and checks it: must report all three
"""
import functools
import os
import re
import sys

LINK = re.compile(r"\]\(([^)\s]+)\)")
TOP_FOLDERS = ("bench", "cmake", "configs", "docs", "formal", "host", "kernels", "lib", "rtl", "scripts", "synth",
               "systemc", "tb", "tests")
CODE_PATH = re.compile(r"`((?:" + "|".join(TOP_FOLDERS) + r"|data)/[A-Za-z0-9_./-]*)`")
FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")


def slug(heading):
    text = re.sub(r"`|\*\*|\*|\[|\]\([^)]*\)", "", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def lines_outside_code(path):
    """(line number, text) of the lines outside fenced code blocks."""
    fenced = False
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if FENCE.match(line):
                fenced = not fenced
                continue
            if not fenced:
                yield number, line


@functools.lru_cache(maxsize=None)
def anchors(path):
    """The anchors of a page's headings (a repeated heading's later ones end in -1, -2, ...)."""
    seen = {}
    found = set()
    for _, line in lines_outside_code(path):
        m = HEADING.match(line)
        if not m:
            continue
        s = slug(m.group(1))
        n = seen.get(s, 0)
        seen[s] = n + 1
        found.add(s if n == 0 else f"{s}-{n}")
    return frozenset(found)


def path_exists(root, md, span):
    """Whether a code span's path names something: from the root, or (data/...) from the
    page's folder; a name without its extension counts (a module's stem, a test binary)."""
    rel = span.rstrip("/.")
    for base in (root, os.path.dirname(md)):
        p = os.path.normpath(os.path.join(base, rel))
        if os.path.exists(p):
            return True
        folder, stem = os.path.split(p)
        if os.path.isdir(folder) and any(n.startswith(stem + ".") for n in os.listdir(folder)):
            return True
    return False


def markdown_files(root):
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "build", "out")))
        for name in sorted(files):
            if name.endswith(".md"):
                yield os.path.join(folder, name)


def plant(folder):
    """A tree with one good link, a link to a missing file, one to a missing heading and a
    path in code that names no file."""
    os.makedirs(os.path.join(folder, "docs"), exist_ok=True)
    with open(os.path.join(folder, "docs", "a.md"), "w", encoding="utf-8") as f:
        f.write("# A page\n\n## The `moehub-sim` options (2026)\n\nBack to [the start](../README.md).\n")
    with open(os.path.join(folder, "README.md"), "w", encoding="utf-8") as f:
        f.write("# Planted\n\nSee [a](docs/a.md#the-moehub-sim-options-2026),\n"
                "[missing](docs/missing.md) and [no heading](docs/a.md#nowhere).\n"
                "The code of `docs/a` and of `scripts/gone.sh`.\n"
                "```\n[in code](docs/not-checked.md)\n```\n")


def check(root):
    broken = []
    count = 0
    for md in markdown_files(root):
        for number, line in lines_outside_code(md):
            for m in LINK.finditer(line):
                target = m.group(1)
                if re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*:", target):
                    continue  # https:, mailto: and the like
                count += 1
                path, _, anchor = target.partition("#")
                dest = os.path.normpath(os.path.join(os.path.dirname(md), path)) if path else md
                where = f"{os.path.relpath(md, root)}:{number}: {target}"
                if not os.path.exists(dest):
                    broken.append(f"{where} (no such file)")
                elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                    broken.append(f"{where} (no heading '{anchor}' in {os.path.relpath(dest, root)})")
            for m in CODE_PATH.finditer(line):
                span = m.group(1)
                if span.startswith("data/") and os.path.basename(os.path.dirname(md)) != "results":
                    continue
                count += 1
                if not path_exists(root, md, span):
                    broken.append(f"{os.path.relpath(md, root)}:{number}: `{span}` (no such file)")
    return count, broken


def main():
    args = sys.argv[1:]
    if len(args) == 2 and args[0] == "--planted":
        plant(args[1])
        args = args[1:]
    if len(args) != 1 or not os.path.isdir(args[0]):
        print("usage: check_doc_links.py [--planted] ROOT (the project's root folder)", file=sys.stderr)
        return 2
    count, broken = check(args[0])
    for b in broken:
        print(b)
    print(f"{count} relative links and paths in code, {len(broken)} broken")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
