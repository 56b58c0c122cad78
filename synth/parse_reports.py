"""Parsers of the Yosys `stat -liberty` and OpenSTA `report_checks` reports (stdlib only)."""

import re


def parse_yosys_stat(text):
    """{'module', 'cells': {type: count}, 'chip_area_um2'} of the last module in a stat report."""
    module = None
    cells = {}
    area = None
    in_cells = False
    for line in text.splitlines():
        m = re.match(r"^=== (\S+) ===", line.strip())
        if m:
            module, cells, area, in_cells = m.group(1), {}, None, False
            continue
        m = re.match(r"^\s*Number of cells:\s+(\d+)", line)
        if m:
            in_cells = True
            continue
        if in_cells:
            m = re.match(r"^\s+(\S+)\s+(\d+)\s*$", line)
            if m:
                cells[m.group(1)] = int(m.group(2))
                continue
            in_cells = False
        m = re.match(r"^\s*Chip area for (?:top )?module '([^']+)':\s*([0-9.eE+-]+)", line)
        if m:
            area = float(m.group(2))
    if area is None:
        raise ValueError("no 'Chip area' line in the stat report (was stat run with -liberty?)")
    return {"module": module.lstrip("\\") if module else None, "cells": cells, "chip_area_um2": area}


def parse_sta_report(text):
    """Worst path of an OpenSTA `report_checks -path_delay max` report, plus tns/wns if reported.

    Returns {'startpoint', 'endpoint', 'slack_ps', 'arrival_ps', 'required_ps',
    'path': [{'point', 'incr_ps', 'time_ps'}], 'tns_ps', 'wns_ps'} (times in the
    library's unit, ps for ASAP7)."""
    r = {"path": []}
    m = re.search(r"^Startpoint:\s*(\S+)", text, re.M)
    if not m:
        raise ValueError("no 'Startpoint' in the timing report (no constrained path?)")
    r["startpoint"] = m.group(1)
    m = re.search(r"^Endpoint:\s*(\S+)", text, re.M)
    r["endpoint"] = m.group(1) if m else None
    m = re.search(r"^\s*([-0-9.]+)\s+slack\s+\((MET|VIOLATED)\)", text, re.M)
    if not m:
        raise ValueError("no slack line in the timing report")
    r["slack_ps"] = float(m.group(1))
    m = re.search(r"^\s*([-0-9.]+)\s+data arrival time", text, re.M)
    r["arrival_ps"] = float(m.group(1)) if m else None
    m = re.search(r"^\s*([-0-9.]+)\s+data required time", text, re.M)
    r["required_ps"] = float(m.group(1)) if m else None
    # the data path: lines "  incr  time ^/v  pin (cell)" up to the first "data arrival time"
    start = text.find("Startpoint:")
    end = text.find("data arrival time", start)
    for line in text[start:end].splitlines():
        m = re.match(r"^\s*([-0-9.]+)\s+([-0-9.]+)\s+[\^v]\s+(\S+)\s+\(([^)]+)\)", line)
        if m:
            r["path"].append({"point": "%s (%s)" % (m.group(3), m.group(4)),
                              "incr_ps": float(m.group(1)), "time_ps": float(m.group(2))})
    m = re.search(r"^\s*tns\s+([-0-9.]+)", text, re.M)
    r["tns_ps"] = float(m.group(1)) if m else None
    m = re.search(r"^\s*wns\s+([-0-9.]+)", text, re.M)
    r["wns_ps"] = float(m.group(1)) if m else None
    return r
