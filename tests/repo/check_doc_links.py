#!/usr/bin/env python3
"""Every relative link of the project's Markdown resolves.

Checks every Markdown file of the tree (folders whose names start with '.', 'build' or
'out' left out; fenced code blocks left out): the
target file or folder of each relative link exists, and a link's #anchor names a heading
of its target (GitHub's rule: lower case, punctuation other than '-' and '_' dropped,
spaces to '-'). Prints each broken link as FILE:LINE: TARGET (why) and exits 1 if there
is any, 0 otherwise.

  tests/repo/check_doc_links.py ROOT
  tests/repo/check_doc_links.py --planted DIR   # writes a tree with two broken links into
                                                # DIR and checks it: must report both
"""
import os
import re
import sys

LINK = re.compile(r"\]\(([^)\s]+)\)")
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


def anchors(path, cache={}):
    if path not in cache:
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
        cache[path] = found
    return cache[path]


def markdown_files(root):
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "build", "out")))
        for name in sorted(files):
            if name.endswith(".md"):
                yield os.path.join(folder, name)


def plant(folder):
    """A tree with one good link, a link to a missing file and one to a missing heading."""
    os.makedirs(os.path.join(folder, "docs"), exist_ok=True)
    with open(os.path.join(folder, "docs", "a.md"), "w", encoding="utf-8") as f:
        f.write("# A page\n\n## The `moehub-sim` options (2026)\n\nBack to [the start](../README.md).\n")
    with open(os.path.join(folder, "README.md"), "w", encoding="utf-8") as f:
        f.write("# Planted\n\nSee [a](docs/a.md#the-moehub-sim-options-2026),\n"
                "[missing](docs/missing.md) and [no heading](docs/a.md#nowhere).\n"
                "```\n[in code](docs/not-checked.md)\n```\n")


def check(root):
    broken = []
    count = 0
    for md in markdown_files(root):
        if not os.path.isfile(md):
            broken.append(f"{os.path.relpath(md, root)}: missing")
            continue
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
    print(f"{count} relative links, {len(broken)} broken")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
