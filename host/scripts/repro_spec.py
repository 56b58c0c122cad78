"""Experiment files of the reproduction runner (configs/experiments/<id>.yaml): loading and
strict validation (imported by reproduce.py, not run).

An experiment is one quantitative claim of a paper the project implements: what the paper
says, the moehub-sim runs that answer it, how our number is computed from their results and
how close it must come. The format is documented in docs/reproduction-format.md. A file that
does not follow it raises SpecError naming the file, the key and what is allowed; the runner
then exits with status 2 before it runs or writes anything."""
import itertools
import os
import re

import yaml

PAPERS = {
    "moehub": "MoE-Hub (ISCA 2026)",
    "relaymoe": "RelayMoE",
}
STATUSES = ("run", "cannot-run")
# How our number is computed from the per-point ratio value(numerator) / value(denominator);
# reproduce_metrics.py implements each.
REDUCERS = ("mean_ratio", "geomean_ratio", "min_ratio", "max_ratio", "mean_one_minus_ratio",
            "ratio_trend", "min_efficiency_ratio")
# What a run's results.json contributes to a point (name: path in the JSON).
QUANTITIES = {
    "layer_time_us": ("layer_time_us",),
    "window_us": ("routing_to_gemm1", "mean_us"),
    "window_end_us": ("routing_to_gemm1", "end_mean_us"),
}
COMPARES = ("within", "at_least", "at_most", "increasing", "decreasing")
PLOT_KINDS = ("lines", "bars")
PLOT_Y = ("ratio", "normalized_throughput") + tuple(QUANTITIES)
GRANULARITIES = ("packet", "row")
# The grid's dimensions (scalar or list in the file) and the flag each becomes.
GRID_DIMS = ("system", "model", "schedule", "tokens", "imbalance_std", "seed")
RUN_KEYS = GRID_DIMS + ("granularity", "set", "vary")

TOP_REQUIRED = ("id", "paper", "figure", "section", "claim", "paper_text", "status")
TOP_OPTIONAL = ("paper_number", "unit", "reason", "setup", "runs", "small", "medium", "metric", "expect", "plot")
METRIC_KEYS = ("reducer", "quantity", "numerator", "denominator", "where", "x")
EXPECT_KEYS = ("compare", "tolerance")
PLOT_KEYS = ("kind", "x", "y", "series", "panels", "logx", "logy", "title")
SET_RE = re.compile(r"^(system|model|schedule)\.[A-Za-z0-9_.]+=\S+$")
ID_RE = re.compile(r"^[a-z0-9][a-z0-9-]*$")


class SpecError(Exception):
    """A bad experiment file: the message names the file, the key and what is allowed."""


def _fail(path, key, what):
    raise SpecError(f"{path}: key '{key}': {what}")


def _check_keys(path, prefix, d, required, optional):
    if not isinstance(d, dict):
        _fail(path, prefix or "(top level)", "must be a map")
    for k in d:
        if k not in required and k not in optional:
            allowed = ", ".join(list(required) + list(optional))
            _fail(path, f"{prefix}{k}", f"unknown key (allowed: {allowed})")
    for k in required:
        if k not in d:
            _fail(path, f"{prefix}{k}", "missing (required)")


def _text(path, key, v):
    if not isinstance(v, str) or not v.strip():
        _fail(path, key, f"must be a non-empty string (got {v!r})")
    return v.strip()


def _number(path, key, v):
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        _fail(path, key, f"must be a number (got {v!r})")
    return float(v)


def _as_list(v):
    return v if isinstance(v, list) else [v]


def _check_dim(path, key, dim, v):
    vals = _as_list(v)
    if not vals:
        _fail(path, key, "must hold at least one value")
    for x in vals:
        if dim in ("tokens", "seed"):
            if isinstance(x, bool) or not isinstance(x, int) or x < (1 if dim == "tokens" else 0):
                _fail(path, key, f"values must be integers >= {1 if dim == 'tokens' else 0} (got {x!r})")
        elif dim == "imbalance_std":
            if isinstance(x, bool) or not isinstance(x, (int, float)) or not 0 <= x <= 1:
                _fail(path, key, f"values must be numbers in [0, 1] (got {x!r})")
        elif not isinstance(x, str) or not x:
            _fail(path, key, f"values must be non-empty strings (got {x!r})")
    if len(set(map(str, vals))) != len(vals):
        _fail(path, key, "a value is given twice")
    return vals


def _check_runs(path, prefix, runs, partial):
    """The grid: every dimension a scalar or a list; granularity; fixed --set's; varied keys.
    `partial` (the small variant) may leave keys out; the full grid gets defaults."""
    _check_keys(path, prefix, runs, () if partial else ("system", "model", "schedule", "tokens"), RUN_KEYS)
    out = {}
    for dim in GRID_DIMS:
        if dim in runs:
            out[dim] = _check_dim(path, prefix + dim, dim, runs[dim])
    if "granularity" in runs:
        if runs["granularity"] not in GRANULARITIES:
            _fail(path, prefix + "granularity", f"must be one of {', '.join(GRANULARITIES)} (got {runs['granularity']!r})")
        out["granularity"] = runs["granularity"]
    if "set" in runs:
        sets = _as_list(runs["set"])
        for s in sets:
            if not isinstance(s, str) or not SET_RE.match(s):
                _fail(path, prefix + "set", f"each entry must be system.KEY=VALUE, model.KEY=VALUE or schedule.KEY=VALUE (got {s!r})")
        out["set"] = sets
    if "vary" in runs:
        vary = runs["vary"]
        if not isinstance(vary, dict) or not vary:
            _fail(path, prefix + "vary", "must be a map of system.KEY / model.KEY / schedule.KEY to a list of values")
        vout = {}
        for k, vals in vary.items():
            if not isinstance(k, str) or not re.match(r"^(system|model|schedule)\.[A-Za-z0-9_.]+$", k):
                _fail(path, f"{prefix}vary.{k}", "must be system.KEY, model.KEY or schedule.KEY")
            vals = _as_list(vals)
            if not vals or any(isinstance(x, (dict, list)) or x is None for x in vals):
                _fail(path, f"{prefix}vary.{k}", "must be a non-empty list of scalar values")
            if len(set(map(str, vals))) != len(vals):
                _fail(path, f"{prefix}vary.{k}", "a value is given twice")
            vout[k] = [_yaml_scalar(x) for x in vals]
        out["vary"] = vout
    return out


def _yaml_scalar(x):
    """A value as moehub-sim's --set reads it (YAML scalars: true/false, numbers, text)."""
    if isinstance(x, bool):
        return "true" if x else "false"
    return str(x)


def _check_selector(path, key, sel, dims, single):
    if not isinstance(sel, dict) or not sel:
        _fail(path, key, f"must be a map of a grid dimension ({', '.join(dims)}) to a value or a list")
    out = {}
    for d, v in sel.items():
        if d not in dims:
            _fail(path, f"{key}.{d}", f"not a dimension of this grid (allowed: {', '.join(dims)})")
        vals = [_yaml_scalar(x) if not isinstance(x, str) else x for x in _as_list(v)]
        if single and len(vals) != 1:
            _fail(path, f"{key}.{d}", "must be a single value")
        out[d] = vals
    return out


def dims_of(runs):
    return list(GRID_DIMS) + list(runs.get("vary", {}))


def grid_values(runs):
    """Each dimension's values as strings, in the order given (how points are keyed)."""
    vals = {d: [_yaml_scalar(x) if not isinstance(x, str) else x for x in runs[d]] for d in GRID_DIMS}
    vals.update(runs.get("vary", {}))
    return vals


def with_defaults(runs):
    r = dict(runs)
    r.setdefault("imbalance_std", [0.0])
    r.setdefault("seed", [1])
    r.setdefault("granularity", "row")
    r.setdefault("set", [])
    r.setdefault("vary", {})
    return r


SIZES = ("small", "medium", "full")


def sized_runs(spec, size):
    """The grid of `spec` at `size`: 'full' (runs), 'small' (the small block's keys replace
    the full grid's) or 'medium' (the medium block's, where the file has one; else full)."""
    runs = dict(spec["runs"])
    if size in ("small", "medium"):
        runs.update(spec.get(size) or {})
    return with_defaults(runs)


def load(path):
    """Reads and checks one experiment file; returns it as a dict with normalised values."""
    try:
        with open(path) as f:
            doc = yaml.safe_load(f)
    except OSError as e:
        raise SpecError(f"{path}: cannot read: {e.strerror}")
    except yaml.YAMLError as e:
        raise SpecError(f"{path}: not valid YAML: {e}")
    _check_keys(path, "", doc, TOP_REQUIRED, TOP_OPTIONAL)
    spec = {}
    spec["id"] = _text(path, "id", doc["id"])
    stem = os.path.splitext(os.path.basename(path))[0]
    if not ID_RE.match(spec["id"]) or spec["id"] != stem:
        _fail(path, "id", f"must be the file's name without .yaml ('{stem}'), lower case, digits and '-' (got {doc['id']!r})")
    if doc["paper"] not in PAPERS:
        _fail(path, "paper", f"must be one of {', '.join(PAPERS)} (got {doc['paper']!r})")
    spec["paper"] = doc["paper"]
    for k in ("figure", "section", "claim", "paper_text"):
        spec[k] = _text(path, k, doc[k])
    if doc["status"] not in STATUSES:
        _fail(path, "status", f"must be one of {', '.join(STATUSES)} (got {doc['status']!r})")
    spec["status"] = doc["status"]
    spec["paper_number"] = _number(path, "paper_number", doc["paper_number"]) if "paper_number" in doc else None
    spec["unit"] = _text(path, "unit", doc["unit"]) if "unit" in doc else ""
    spec["reason"] = _text(path, "reason", doc["reason"]) if "reason" in doc else None
    spec["setup"] = _text(path, "setup", doc["setup"]) if "setup" in doc else None
    run_only = ("runs", "small", "medium", "metric", "expect", "plot")
    if spec["status"] == "cannot-run":
        if spec["reason"] is None:
            _fail(path, "reason", "missing (required with status: cannot-run: why the claim cannot be produced yet)")
        for k in run_only:
            if k in doc:
                _fail(path, k, "not allowed with status: cannot-run (only with status: run)")
        return spec
    for k in ("runs", "small", "metric", "expect"):
        if k not in doc:
            _fail(path, k, "missing (required with status: run)")
    spec["runs"] = _check_runs(path, "runs.", doc["runs"], partial=False)
    spec["small"] = _check_runs(path, "small.", doc["small"], partial=True)
    if not spec["small"]:
        _fail(path, "small", "must change at least one key of runs (the CI pass is to be cheaper)")
    if "medium" in doc:
        spec["medium"] = _check_runs(path, "medium.", doc["medium"], partial=True)
        if not spec["medium"]:
            _fail(path, "medium", "must change at least one key of runs")
    for size in SIZES:
        if size == "medium" and "medium" not in spec:
            continue
        r = sized_runs(spec, size)
        if set(r["vary"]) & {s.partition("=")[0] for s in r["set"]}:
            _fail(path, "runs.vary", "a key both varied and set")
    dims = dims_of(with_defaults(spec["runs"]))
    for size in ("small", "medium"):
        if "vary" in spec.get(size, {}) and set(spec[size]["vary"]) != set(spec["runs"].get("vary", {})):
            _fail(path, f"{size}.vary", "must vary the same keys as runs.vary")

    m = doc["metric"]
    _check_keys(path, "metric.", m, ("reducer", "quantity", "numerator", "denominator"), ("where", "x"))
    if m["reducer"] not in REDUCERS:
        _fail(path, "metric.reducer", f"must be one of {', '.join(REDUCERS)} (got {m['reducer']!r})")
    if m["quantity"] not in QUANTITIES:
        _fail(path, "metric.quantity", f"must be one of {', '.join(QUANTITIES)} (got {m['quantity']!r})")
    metric = {"reducer": m["reducer"], "quantity": m["quantity"]}
    metric["numerator"] = _check_selector(path, "metric.numerator", m["numerator"], dims, single=False)
    metric["denominator"] = _check_selector(path, "metric.denominator", m["denominator"], dims,
                                            single=m["reducer"] != "min_efficiency_ratio")
    if m["reducer"] == "min_efficiency_ratio":
        metric["numerator"] = _check_selector(path, "metric.numerator", m["numerator"], dims, single=True)
    if set(metric["numerator"]) != set(metric["denominator"]):
        _fail(path, "metric.denominator", f"must select on the same dimensions as metric.numerator ({', '.join(metric['numerator'])})")
    metric["where"] = _check_selector(path, "metric.where", m["where"], dims, single=False) if "where" in m else {}
    if m["reducer"] in ("ratio_trend", "min_efficiency_ratio"):
        if "x" not in m:
            _fail(path, "metric.x", f"missing (required with reducer {m['reducer']}: the dimension along which it is taken)")
    if "x" in m:
        if m["x"] not in dims:
            _fail(path, "metric.x", f"must be a dimension of this grid (allowed: {', '.join(dims)})")
        metric["x"] = m["x"]
    spec["metric"] = metric
    # every value the selectors name must be in both grids (metric.where's: in the full one,
    # and one of them at least in the small one), so that the CI pass selects what the full
    # one does and a misspelt value cannot select nothing
    for size in SIZES:
        if size == "medium" and "medium" not in spec:
            continue
        gv = grid_values(sized_runs(spec, size))
        where = "runs" if size == "full" else f"{size} (with runs)"
        for part in ("numerator", "denominator", "where"):
            for d, vals in metric[part].items():
                missing = [v for v in vals if v not in gv[d]]
                if missing and (part != "where" or size == "full" or len(missing) == len(vals)):
                    _fail(path, f"metric.{part}.{d}", f"value {missing[0]!r} is not in the grid of {where} ({', '.join(gv[d])})")

    e = doc["expect"]
    _check_keys(path, "expect.", e, ("compare",), ("tolerance",))
    if e["compare"] not in COMPARES:
        _fail(path, "expect.compare", f"must be one of {', '.join(COMPARES)} (got {e['compare']!r})")
    expect = {"compare": e["compare"]}
    if e["compare"] == "within":
        if "tolerance" not in e:
            _fail(path, "expect.tolerance", "missing (required with compare: within: the relative tolerance, e.g. 0.10)")
        tol = _number(path, "expect.tolerance", e["tolerance"])
        if not 0 < tol <= 1:
            _fail(path, "expect.tolerance", f"must be in (0, 1] (got {e['tolerance']!r})")
        expect["tolerance"] = tol
    elif "tolerance" in e:
        _fail(path, "expect.tolerance", "only with compare: within")
    if e["compare"] in ("within", "at_least", "at_most") and spec["paper_number"] is None:
        _fail(path, "paper_number", f"missing (required with compare: {e['compare']})")
    if e["compare"] in ("increasing", "decreasing") and m["reducer"] != "ratio_trend":
        _fail(path, "expect.compare", f"{e['compare']} needs reducer ratio_trend")
    if m["reducer"] == "ratio_trend" and e["compare"] not in ("increasing", "decreasing"):
        _fail(path, "expect.compare", "reducer ratio_trend needs compare increasing or decreasing")
    spec["expect"] = expect

    if "plot" not in doc:
        _fail(path, "plot", "missing (required with status: run: the shape of the paper's figure)")
    p = doc["plot"]
    _check_keys(path, "plot.", p, ("kind", "x", "y"), ("series", "panels", "logx", "logy", "title"))
    if p["kind"] not in PLOT_KINDS:
        _fail(path, "plot.kind", f"must be one of {', '.join(PLOT_KINDS)} (got {p['kind']!r})")
    if p["y"] not in PLOT_Y:
        _fail(path, "plot.y", f"must be one of {', '.join(PLOT_Y)} (got {p['y']!r})")
    plot = {"kind": p["kind"], "y": p["y"]}
    for k in ("x", "series", "panels"):
        if k in p:
            if p[k] not in dims:
                _fail(path, f"plot.{k}", f"must be a dimension of this grid (allowed: {', '.join(dims)})")
            plot[k] = p[k]
    for k in ("logx", "logy"):
        if k in p and not isinstance(p[k], bool):
            _fail(path, f"plot.{k}", f"must be true or false (got {p[k]!r})")
        plot[k] = bool(p.get(k, False))
    plot["title"] = _text(path, "plot.title", p["title"]) if "title" in p else f"{spec['figure']}: {spec['id']}"
    spec["plot"] = plot
    return spec


def load_all(directory, ids=None):
    """Every experiment file of `directory` (sorted by id), or those of `ids`; a SpecError
    for the first bad one (or for an id without a file)."""
    if not os.path.isdir(directory):
        raise SpecError(f"{directory}: not a directory of experiment files")
    names = sorted(n for n in os.listdir(directory) if n.endswith(".yaml"))
    stray = sorted(n for n in os.listdir(directory) if not n.endswith(".yaml") and not n.startswith("."))
    if stray:
        raise SpecError(f"{os.path.join(directory, stray[0])}: not an experiment file (only <id>.yaml belong here)")
    by_id = {os.path.splitext(n)[0]: os.path.join(directory, n) for n in names}
    if ids:
        for i in ids:
            if i not in by_id:
                near = sorted(by_id, key=lambda k: _distance(k, i))[:3]
                raise SpecError(f"--experiment '{i}': no file {os.path.join(directory, i + '.yaml')} (nearest: {', '.join(near)})")
        chosen = list(dict.fromkeys(ids))
    else:
        chosen = sorted(by_id, key=_natural)
    # every file is checked even when only some are run, so a bad one cannot wait for its turn
    specs = {i: load(p) for i, p in by_id.items()}
    return [specs[i] for i in chosen]


def _natural(text):
    """Sort key that orders the numbers in a name as numbers (mh-fig3 before mh-fig12)."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", text)]


def _distance(a, b):
    """Edit distance (for the nearest ids of an unknown one)."""
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def grid(runs):
    """Every point of a sized grid, as a dict of dimension -> value (strings for the varied
    keys), in a fixed order."""
    vary = runs["vary"]
    combos = itertools.product(*[runs[d] for d in GRID_DIMS], *[vary[k] for k in vary])
    keys = list(GRID_DIMS) + list(vary)
    return [dict(zip(keys, c)) for c in combos]
