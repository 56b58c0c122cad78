"""Merging the ASAP7 liberty libraries into one file, and reading cell areas.

ABC (through Yosys' `abc -liberty`) takes one library and OpenSTA 2.0.17
cannot read gzipped files, so the flow unzips the standard-cell groups it
maps to and merges them: the header (units, operating conditions, table
templates) of the first library, the table templates the others add (the SEQ
library names its templates differently), then the cell groups of all of
them. Cells that the ASAP7 platform of OpenROAD-flow-scripts marks as not to
be used (*x1p*, *xp*, SDF*, ICG*) are left out, since Yosys 0.23 has no
dont_use option for abc or dfflibmap.
"""

import fnmatch
import gzip
import re

# ORFS flow/platforms/asap7/config.mk, DONT_USE_CELLS
DONT_USE = ["*x1p*_ASAP7*", "*xp*_ASAP7*", "SDF*", "ICG*"]

_CELL_RE = re.compile(r"^\s*cell\s*\(\s*\"?([A-Za-z0-9_]+)\"?\s*\)\s*\{", re.M)
_TEMPLATE_RE = re.compile(r"^\s*(lu_table_template|power_lut_template)\s*\(\s*([A-Za-z0-9_]+)\s*\)\s*\{", re.M)
_AREA_RE = re.compile(r"^\s*area\s*:\s*([0-9.eE+-]+)", re.M)


def _group_end(text, open_brace):
    """Index just past the '}' matching the '{' at open_brace."""
    depth = 0
    for i in range(open_brace, len(text)):
        c = text[i]
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i + 1
    raise ValueError("unbalanced braces in liberty text")


def split_library(text):
    """(header, {template name: text}, [(cell name, cell text)]) of one library."""
    first = _CELL_RE.search(text)
    if not first:
        raise ValueError("no cell group in liberty text")
    header = text[: first.start()]
    templates = {}
    for m in _TEMPLATE_RE.finditer(header):
        end = _group_end(header, m.end() - 1)
        templates[m.group(2)] = header[m.start():end]
    cells = []
    pos = first.start()
    while True:
        m = _CELL_RE.search(text, pos)
        if not m:
            break
        end = _group_end(text, m.end() - 1)
        cells.append((m.group(1), text[m.start():end]))
        pos = end
    return header, templates, cells


def usable(cell):
    return not any(fnmatch.fnmatchcase(cell, p) for p in DONT_USE)


def merge(paths, name="moehub_asap7_merged"):
    """Text of one library holding the usable cells of all `paths` (.lib or .lib.gz)."""
    header = None
    known = set()
    extra_templates = []
    cells = []
    for p in paths:
        opener = gzip.open if p.endswith(".gz") else open
        with opener(p, "rt") as f:
            text = f.read()
        h, templates, c = split_library(text)
        if header is None:
            header = re.sub(r"library\s*\(\s*[A-Za-z0-9_]+\s*\)", "library (%s)" % name, h, count=1)
            known = set(templates)
        else:
            for t, body in templates.items():
                if t not in known:
                    known.add(t)
                    extra_templates.append(body)
        cells.extend((n, body) for n, body in c if usable(n))
    out = [header.rstrip() + "\n"]
    out.extend("  " + t.strip() + "\n" for t in extra_templates)
    out.extend("  " + body.strip() + "\n" for _, body in cells)
    out.append("}\n")
    return "".join(out)


def cell_areas(text):
    """{cell name: area in um^2} of a liberty text."""
    areas = {}
    for m in _CELL_RE.finditer(text):
        a = _AREA_RE.search(text, m.end())
        if a:
            areas[m.group(1)] = float(a.group(1).rstrip(";"))
    return areas
