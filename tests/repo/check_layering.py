#!/usr/bin/env python3
"""Every #include of the simulator's and the shared libraries' sources keeps to the layering
table of docs/ARCHITECTURE.md.

Reads the table under the heading "Layers" of ROOT/docs/ARCHITECTURE.md: one row per folder
(`systemc/gpu/`, `lib/trace/`, ...) with the project parts and third-party libraries it may
include. A part is named by its folder's last component, which is also how its headers are
included ("gpu/hub.hpp", "trace/trace.hpp"); a part may always include itself. Then scans
every C++ source (.cpp, .hpp, .h, .cc, .cu, .cuh) under systemc/ and lib/ and reports:

- a quoted include of another part the row does not list ("fabric/nvlink_port.hpp" in gpu),
- a quoted include without a part ("moe_plan.hpp"): the one spelling is "<part>/<file>",
- an angle include of a third-party library the row does not list (<systemc> in golden);
  any other angle include counts as the standard library (or the C library),
- a folder under systemc/ or lib/ that has no row (a new part must be placed in the table).

A row may also allow single files an include that its folder may not make, as
"fabric (only gpu/hub.cpp)": an exception the table states. Prints each violation as
FILE:LINE: INCLUDE (why) and exits 1 if there is any, 0 otherwise.

  tests/repo/check_layering.py ROOT
  tests/repo/check_layering.py --planted DIR   # writes a tree with four violations into DIR
                                               # and checks it: must report all four
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
SOURCE_EXT = (".cpp", ".hpp", ".h", ".cc", ".cu", ".cuh")
SCANNED = ("systemc", "lib")
# angle includes of third-party libraries, by the first component of their path
THIRD_PARTY = {"systemc": "SystemC", "systemc.h": "SystemC", "tlm": "SystemC", "tlm.h": "SystemC",
               "tlm_utils": "SystemC", "sysc": "SystemC", "yaml-cpp": "yaml-cpp", "nlohmann": "nlohmann_json",
               "CLI": "CLI11", "gtest": "GoogleTest", "gmock": "GoogleTest", "benchmark": "benchmark"}
ROW = re.compile(r"^\|\s*`([^`]+)/`\s*\|")


class TableError(Exception):
    pass


def read_table(root):
    """{folder: (allowed parts, allowed third-party, {part: files allowed it as an exception})}."""
    doc = os.path.join(root, "docs", "ARCHITECTURE.md")
    rows, in_section = {}, False
    with open(doc, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if line.startswith("#"):
                in_section = re.match(r"^#+\s+Layers\b", line) is not None
                continue
            m = ROW.match(line) if in_section else None
            if not m:
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) < 4:
                raise TableError(f"{doc}:{number}: a layers row needs 4 cells (folder, target, may include, "
                                 f"third-party), got {len(cells)}")
            parts, exceptions = set(), {}
            for item in re.split(r",\s*(?![^()]*\))", cells[2].replace("`", "")):
                item = item.strip()
                if item in ("", "—", "-", "nothing"):
                    continue
                e = re.match(r"^([\w.-]+)\s*\(only\s+([^)]+)\)$", item)
                if e:
                    exceptions[e.group(1)] = {x.strip() for x in e.group(2).split(",")}
                elif re.match(r"^[\w.-]+$", item):
                    parts.add(item)
                else:
                    raise TableError(f"{doc}:{number}: cannot read '{item}' in the 'may include' cell")
            third = {t.strip() for t in cells[3].replace("`", "").split(",")} - {"", "—", "-", "nothing"}
            rows[m.group(1)] = (parts, third, exceptions)
    if not rows:
        raise TableError(f"{doc}: no layers table (rows '| `folder/` | ...' under a heading 'Layers')")
    return rows


def part_of(folder):
    return folder.rstrip("/").rsplit("/", 1)[-1]


def check(root):
    """The violations, as 'FILE:LINE: INCLUDE (why)' lines, and the number of includes read."""
    rows = read_table(root)
    parts = {part_of(f) for f in rows}
    problems, count = [], 0
    for top in SCANNED:
        base = os.path.join(root, top)
        if not os.path.isdir(base):
            continue
        for name in sorted(os.listdir(base)):
            folder = f"{top}/{name}"
            if not os.path.isdir(os.path.join(base, name)):
                continue
            if folder not in rows:
                problems.append(f"{folder}/: folder has no row in the layers table of docs/ARCHITECTURE.md")
                continue
            allowed, third, exceptions = rows[folder]
            own = part_of(folder)
            for dirpath, dirs, files in os.walk(os.path.join(base, name)):
                dirs.sort()
                for fn in sorted(files):
                    if not fn.endswith(SOURCE_EXT):
                        continue
                    path = os.path.join(dirpath, fn)
                    rel = os.path.relpath(path, root)
                    with open(path, encoding="utf-8", errors="replace") as f:
                        for number, line in enumerate(f, 1):
                            m = INCLUDE.match(line)
                            if not m:
                                continue
                            count += 1
                            kind, target = m.groups()
                            why = judge(kind, target, own, allowed, third, exceptions, parts,
                                        os.path.relpath(rel, top))
                            if why:
                                problems.append(f"{rel}:{number}: {kind}{target}{'>' if kind == '<' else kind} ({why})")
    return problems, count


def judge(kind, target, own, allowed, third, exceptions, parts, rel_in_top):
    """Why one include breaks the table (None if it keeps to it)."""
    first = target.split("/", 1)[0]
    if kind == "<":
        lib = THIRD_PARTY.get(first)
        if lib and lib not in third:
            return f"{own} may not include {lib}"
        return None
    if "/" not in target:
        return f"a project include is spelled '<part>/{target}'"
    if first not in parts:
        return f"'{first}' is not a part of the layers table"
    if first == own or first in allowed:
        return None
    if rel_in_top in exceptions.get(first, set()):
        return None
    return f"{own} may not include {first}"


PLANTED_DOC = """# Architecture

## Layers

| folder | target | may include | third-party |
| --- | --- | --- | --- |
| `systemc/common/` | `moehub_common` | — | SystemC |
| `systemc/golden/` | `moehub_golden` | — | — |
| `systemc/gpu/` | `moehub_gpu` | common, golden, fabric (only gpu/hub.cpp) | SystemC |
| `systemc/fabric/` | `moehub_fabric` | common | SystemC |
| `lib/trace/` | `moehub_trace` | — | — |
| `lib/moe_plan/` | `moehub_moe_plan` | — | — |
"""

# (file, text): four violations (marked) among includes that keep to the table
PLANTED_FILES = [
    ("systemc/common/units.hpp", '#include <cstdint>\n#include <systemc>\n'),
    ("systemc/golden/include/golden/aau.hpp", '#include <vector>\n#include <systemc>\n'),  # 1: SystemC in golden
    ("systemc/golden/src/aau.cpp", '#include "golden/aau.hpp"\n'),
    ("systemc/gpu/hub.cpp", '#include "common/units.hpp"\n#include "fabric/port.hpp"\n'),  # the stated exception
    ("systemc/gpu/hbm.cpp", '#include "golden/aau.hpp"\n  #include "fabric/port.hpp"\n'),  # 2: not the exception
    ("systemc/fabric/port.hpp", '#include "common/units.hpp"\n#include <tlm>\n'),
    ("lib/trace/trace.cpp", '#include "trace/trace.hpp"\n#include "moe_plan/moe_plan.hpp"\n'),  # 3: a sibling library
    ("lib/trace/trace.hpp", '#include <string>\n'),
    ("lib/moe_plan/moe_plan.cpp", '#include "moe_plan.hpp"\n'),  # 4: the bare spelling
    ("lib/moe_plan/moe_plan.hpp", '// #include "gpu/hub.hpp" in a comment is no include\n'),
]
PLANTED_EXPECTED = [
    'lib/moe_plan/moe_plan.cpp:1: "moe_plan.hpp" (a project include is spelled \'<part>/moe_plan.hpp\')',
    'lib/trace/trace.cpp:2: "moe_plan/moe_plan.hpp" (trace may not include moe_plan)',
    "systemc/golden/include/golden/aau.hpp:2: <systemc> (golden may not include SystemC)",
    'systemc/gpu/hbm.cpp:2: "fabric/port.hpp" (gpu may not include fabric)',
]


def plant(d):
    os.makedirs(os.path.join(d, "docs"), exist_ok=True)
    with open(os.path.join(d, "docs", "ARCHITECTURE.md"), "w", encoding="utf-8") as f:
        f.write(PLANTED_DOC)
    for rel, text in PLANTED_FILES:
        p = os.path.join(d, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w", encoding="utf-8") as f:
            f.write(text)


def main(argv):
    if len(argv) == 3 and argv[1] == "--planted":
        root = argv[2]
        plant(root)
    elif len(argv) == 2:
        root = argv[1]
    else:
        print(__doc__.strip().split("\n\n")[-1], file=sys.stderr)
        return 2
    try:
        problems, count = check(root)
    except (TableError, OSError) as e:
        print(f"check_layering: error: {e}", file=sys.stderr)
        return 2
    for p in sorted(problems):
        print(p)
    print(f"{count} includes, {len(problems)} against the layers table")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
