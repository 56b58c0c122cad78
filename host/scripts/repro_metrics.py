"""The reducers of the reproduction runner: how an experiment's number is computed from its
runs' results (imported by reproduce.py, not run).

A point is one run: its grid coordinates (dimension -> value as text) and the results JSON
it wrote. The numerator selector picks points; each is paired with the denominator point
that has the same coordinates but the denominator's values on the selected dimensions.
The ratio of a pair is quantity(numerator) / quantity(denominator); a reducer turns the
ratios into one number:

  mean_ratio            arithmetic mean of the ratios
  geomean_ratio         geometric mean
  min_ratio, max_ratio  the smallest, the largest
  mean_one_minus_ratio  mean of (1 - ratio): a share lost, e.g. 1 - ideal / baseline
  ratio_trend           the ratios' mean at the largest x over their mean at the smallest
                        (> 1: the ratio grows along x; x: metric.x)
  min_efficiency_ratio  scaling efficiency eff(G) = (t(G0) / t(G)) / (G / G0) along x (the
                        GPU count), of the numerator over each denominator at the largest
                        x; the smallest of those (>= 1: closer to linear than every one)
"""
import math

from repro_spec import QUANTITIES


class MetricError(Exception):
    """The runs do not give what the metric needs (no pair matched, a quantity missing)."""


def quantity(results, name):
    v = results
    for k in QUANTITIES[name]:
        if not isinstance(v, dict) or k not in v or v[k] is None:
            raise MetricError(f"results have no {'.'.join(QUANTITIES[name])}")
        v = v[k]
    return float(v)


def _key(coords):
    return tuple(sorted(coords.items()))


def _selected(coords, sel):
    return all(coords[d] in vals for d, vals in sel.items())


def pairs(points, metric):
    """(numerator coords, ratio) for every numerator point (within metric.where) with its
    denominator point; sorted by coordinates."""
    q = metric["quantity"]
    by_key = {_key(c): r for c, r in points}
    out = []
    for c, r in points:
        if not _selected(c, metric["where"]) or not _selected(c, metric["numerator"]):
            continue
        for dvals in _denominator_choices(metric):
            dc = dict(c)
            dc.update(dvals)
            if dc == c:
                continue
            dr = by_key.get(_key(dc))
            if dr is None:
                raise MetricError(f"no run for the denominator of {_show(c)} ({_show(dc)})")
            den = quantity(dr, q)
            if den <= 0:
                raise MetricError(f"{q} of {_show(dc)} is {den}, not > 0")
            out.append((c, dc, quantity(r, q) / den))
    if not out:
        raise MetricError("the numerator selects no run")
    out.sort(key=lambda t: (_key(t[0]), _key(t[1])))
    return out


def _denominator_choices(metric):
    den = metric["denominator"]
    dims = list(den)
    choices = [{}]
    for d in dims:
        choices = [dict(ch, **{d: v}) for ch in choices for v in den[d]]
    return choices


def _show(coords):
    return ", ".join(f"{k}={v}" for k, v in coords.items())


def _num(v):
    """A grid value as a number, for ordering along x."""
    try:
        return float(v)
    except ValueError:
        raise MetricError(f"x value {v!r} is not a number")


def reduce(points, metric):
    """Our number for an experiment, and the per-pair detail (for the page): a dict with
    'value' and 'detail' (list of (label, number))."""
    red = metric["reducer"]
    if red == "min_efficiency_ratio":
        return _efficiency(points, metric)
    ps = pairs(points, metric)
    ratios = [r for _, _, r in ps]
    if red == "mean_ratio":
        value = sum(ratios) / len(ratios)
    elif red == "geomean_ratio":
        if min(ratios) <= 0:
            raise MetricError("geomean_ratio needs ratios > 0")
        value = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    elif red == "min_ratio":
        value = min(ratios)
    elif red == "max_ratio":
        value = max(ratios)
    elif red == "mean_one_minus_ratio":
        value = sum(1 - r for r in ratios) / len(ratios)
    elif red == "ratio_trend":
        x = metric["x"]
        by_x = {}
        for c, _, r in ps:
            by_x.setdefault(c[x], []).append(r)
        if len(by_x) < 2:
            raise MetricError(f"ratio_trend needs at least two values of {x} (got {len(by_x)})")
        xs = sorted(by_x, key=_num)
        means = {v: sum(by_x[v]) / len(by_x[v]) for v in xs}
        value = means[xs[-1]] / means[xs[0]]
        return {"value": value, "n": len(ps),
                "detail": [(f"{x}={v}", means[v]) for v in xs]}
    else:  # the spec's checks allow no other
        raise MetricError(f"unknown reducer {red}")
    return {"value": value, "n": len(ps), "detail": _labels(ps)}


def _order(v):
    """A coordinate's value for sorting: numbers as numbers."""
    try:
        return (0, float(v), "")
    except ValueError:
        return (1, 0.0, v)


def _labels(ps):
    """(label, ratio) per pair, in the grid's order: the coordinates that vary among the
    pairs, and which two points the ratio divides."""
    dims = [d for d in ps[0][0] if len({c[d] for c, _, _ in ps}) > 1]
    sel = [d for d in ps[0][0] if ps[0][0][d] != ps[0][1][d]]
    rows = sorted(ps, key=lambda t: [_order(t[0][d]) for d in dims])
    out = []
    for c, dc, r in rows:
        where = ", ".join(f"{d}={c[d]}" for d in dims if d not in sel)
        how = " / ".join([", ".join(c[d] for d in sel), ", ".join(dc[d] for d in sel)])
        out.append((f"{where}{': ' if where else ''}{how}", r))
    return out


def _efficiency(points, metric):
    """min over (denominator series, other coordinates) of eff_num(Gmax) / eff_den(Gmax)."""
    q, x = metric["quantity"], metric["x"]
    (sdim, svals), = metric["numerator"].items()
    subject = svals[0]
    refs = metric["denominator"][sdim]
    series = {}
    for c, r in points:
        if not _selected(c, metric["where"]):
            continue
        rest = tuple((k, v) for k, v in sorted(c.items()) if k not in (sdim, x))
        series.setdefault((c[sdim], rest), {})[c[x]] = quantity(r, q)
    detail, effs = [], []
    rests = sorted({rest for (s, rest) in series if s == subject})
    if not rests:
        raise MetricError("the numerator selects no run")
    for rest in rests:
        def eff(s):
            t = series.get((s, rest))
            if t is None or len(t) < 2:
                raise MetricError(f"min_efficiency_ratio needs {s} at two or more values of {x} ({_show(dict(rest))})")
            xs = sorted(t, key=_num)
            g0, g1 = _num(xs[0]), _num(xs[-1])
            return (t[xs[0]] / t[xs[-1]]) / (g1 / g0)
        es = eff(subject)
        for ref in refs:
            e = es / eff(ref)
            effs.append(e)
            detail.append((f"{_show(dict(rest))}, over {ref}", e))
    return {"value": min(effs), "n": len(effs), "detail": detail}


def verdict(spec, value):
    """('reproduced' | 'differs', text of the comparison) for our number against the paper's."""
    e, paper = spec["expect"], spec["paper_number"]
    c = e["compare"]
    if c == "within":
        rel = abs(value - paper) / abs(paper) if paper else abs(value)
        ok = rel <= e["tolerance"]
        how = f"{rel * 100:.1f} % from the paper's (tolerance {e['tolerance'] * 100:.0f} %)"
    elif c == "at_least":
        ok = value >= paper
        how = f"{'at least' if ok else 'below'} the paper's bound {paper:g}"
    elif c == "at_most":
        ok = value <= paper
        how = f"{'at most' if ok else 'above'} the paper's bound {paper:g}"
    elif c == "increasing":
        ok = value > 1
        how = "grows along the sweep" if ok else "does not grow along the sweep"
    else:
        ok = value < 1
        how = "shrinks along the sweep" if ok else "does not shrink along the sweep"
    return ("reproduced" if ok else "differs"), how
