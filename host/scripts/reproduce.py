#!/usr/bin/env python3
"""Reproduces the evaluation claims of the papers moehub implements, one experiment file per
claim (configs/experiments/<id>.yaml; format: docs/reproduction-format.md), and writes the
results page with a verdict per claim.

  host/scripts/reproduce.py --sim build/release/host/sim/moehub-sim            # every experiment, full size
  host/scripts/reproduce.py --sim ... --experiment mh-fig12-layer-over-comet --size small

Every experiment file is checked first (unknown or missing keys, bad values): a bad one
exits with status 2, naming the file and the key, before anything runs or is written. The
runs of all chosen experiments are gathered, the same moehub-sim command once, and run as
independent processes by a backend (`local`: a pool of --jobs workers on this machine); each
run's results JSON is kept under OUT/runs/. Then each experiment's number is computed from
its runs (repro_metrics.py), compared with the paper's, and the page is written (--page,
default docs/results/reproduction.md, with a plot per experiment that runs in img/ beside
it). Exit status: 0, 1 if a run failed (the page still says which), 2 for bad input.

Same inputs, same runs, same numbers: the page differs only in its line naming the commit,
the date and the wall time."""
import argparse
import concurrent.futures as cf
import datetime
import hashlib
import json
import os
import subprocess
import sys
import time

import repro_metrics
import repro_spec

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
PROG = "reproduce"


# ---- backends: how a list of moehub-sim commands is run --------------------------------------

class Job:
    """One moehub-sim run: its tag (file name stem under OUT/runs/), its command line, and
    what it runs (the grid point, the fixed --set's) for recognising its results later."""

    def __init__(self, tag, argv, results, point, sets):
        self.tag, self.argv, self.results = tag, argv, results
        self.point, self.sets = point, sets


class LocalPool:
    """Runs the jobs as processes on this machine, `jobs` at a time (a thread per worker waits
    on its process, as host/scripts/sweep.py does). A backend takes a list of Jobs and returns
    {tag: (exit status, stderr, wall seconds)}, calling progress(done, total, tag, status) as
    each ends; a distributed backend (one task per job, the same results files) needs only
    this interface."""
    name = "local"

    def __init__(self, jobs):
        self.jobs = jobs

    def run(self, todo, progress):
        def one(job):
            t0 = time.monotonic()
            p = subprocess.run(job.argv, capture_output=True, text=True)
            return job.tag, (p.returncode, p.stderr, time.monotonic() - t0)
        out = {}
        with cf.ThreadPoolExecutor(max_workers=self.jobs) as pool:
            for f in cf.as_completed([pool.submit(one, j) for j in todo]):
                tag, res = f.result()
                out[tag] = res
                progress(len(out), len(todo), tag, res[0])
        return out


BACKENDS = {"local": LocalPool}


# ---- from experiments to runs -----------------------------------------------------------------

def coords_text(point):
    """A grid point's coordinates as text (how selectors name values)."""
    return {k: (v if isinstance(v, str) else repro_spec._yaml_scalar(v)) for k, v in point.items()}


def run_argv(sim, point, runs, results, out_dir):
    argv = [sim, "--system", point["system"], "--model", point["model"], "--schedule", point["schedule"],
            "--tokens", str(point["tokens"]), "--imbalance-std", str(point["imbalance_std"]),
            "--seed", str(point["seed"]), "--granularity", runs["granularity"],
            "--results", results, "--no-timeline", "--quiet", "--out-dir", out_dir]
    for s in runs["set"]:
        argv += ["--set", s]
    for k in runs["vary"]:
        argv += ["--set", f"{k}={point[k]}"]
    return argv


def plan(specs, size, sim, out):
    """For every runnable experiment its points (coords, tag); and the jobs, one per distinct
    command (experiments that share a run share its results)."""
    runs_dir = os.path.join(out, "runs")
    jobs, per_exp = {}, {}
    for spec in specs:
        if spec["status"] != "run":
            continue
        runs = repro_spec.sized_runs(spec, size)
        pts = []
        for point in repro_spec.grid(runs):
            # the tag names the run by what it is, so a shared run is one file
            key_argv = run_argv("moehub-sim", point, runs, "R", "O")
            digest = hashlib.sha1("\0".join(key_argv).encode()).hexdigest()[:12]
            sysname = os.path.splitext(os.path.basename(point["system"]))[0]
            tag = f"{sysname}_{point['model']}_{point['schedule']}_t{point['tokens']}_{digest}"
            results = os.path.join(runs_dir, tag + ".json")
            if tag not in jobs:
                sets = list(runs["set"]) + [f"{k}={point[k]}" for k in runs["vary"]]
                jobs[tag] = Job(tag, run_argv(sim, point, runs, results, runs_dir), results, point, sets)
            pts.append((coords_text(point), tag))
        per_exp[spec["id"]] = pts
    return per_exp, [jobs[t] for t in sorted(jobs)]


def reusable(job):
    """--reuse: a results file from an earlier call whose recorded inputs are this run's
    (system, model, schedule, tokens, routing, granularity and every override, in order);
    the simulator is taken to be the same build."""
    try:
        with open(job.results) as f:
            r = json.load(f)
    except (OSError, ValueError):
        return False
    p = job.point
    sysname = os.path.splitext(os.path.basename(p["system"]))[0]
    recorded = [f"{t}.{kv}" for t in ("system", "model", "schedule") for kv in r.get(f"{t}_overrides", [])]
    wanted = sorted(job.sets, key=lambda s: ("system", "model", "schedule").index(s.partition(".")[0]))
    return (r.get("system") == sysname and r.get("model") == p["model"] and r.get("schedule") == p["schedule"]
            and r.get("tokens") == p["tokens"] and r.get("granularity") == job.argv[job.argv.index("--granularity") + 1]
            and r.get("routing") == "generated" and r.get("seed") == p["seed"]
            and float(r.get("imbalance_std", -1)) == float(p["imbalance_std"])
            and recorded == wanted and r.get("checks", {}).get("passed") is True)


def evaluate(spec, pts, outcome):
    """The experiment's entry of the page: our number, the verdict and the detail."""
    if spec["status"] == "cannot-run":
        return {"verdict": "cannot-run"}
    failed = [(tag, outcome[tag]) for _, tag in pts if outcome[tag][0] != 0]
    if failed:
        tag, (rc, err) = failed[0][0], failed[0][1][:2]
        last = (err.strip().splitlines() or [""])[-1]
        return {"verdict": "failed", "error": f"{len(failed)} of {len(pts)} runs failed; {tag} exited {rc}: {last}"}
    points = []
    for c, tag in pts:
        try:
            with open(outcome[tag][3]) as f:
                points.append((c, json.load(f)))
        except (OSError, ValueError) as e:
            return {"verdict": "failed", "error": f"{tag} exited 0 but its results are unreadable: {e}"}
    try:
        m = repro_metrics.reduce(points, spec["metric"])
    except repro_metrics.MetricError as e:
        return {"verdict": "failed", "error": f"metric: {e}"}
    verdict, how = repro_metrics.verdict(spec, m["value"])
    return {"verdict": verdict, "value": m["value"], "n": m["n"], "detail": m["detail"], "how": how,
            "points": points, "wall_s": sum(outcome[t][2] for _, t in pts)}


# ---- the page ---------------------------------------------------------------------------------

VERDICT_TEXT = {
    "reproduced": "reproduced",
    "differs-reason": "differs, with the reason",
    "differs": "differs, no reason recorded",
    "cannot-run": "cannot run yet",
    "failed": "failed to run",
}
# the same in the summary's count
VERDICT_COUNT = {
    "reproduced": "reproduced",
    "differs-reason": "differ with a reason",
    "differs": "differ without a reason",
    "cannot-run": "cannot run yet",
    "failed": "failed to run",
}


def verdict_class(spec, ev):
    if ev["verdict"] == "differs":
        return "differs-reason" if spec["reason"] else "differs"
    return ev["verdict"]


def fmt(value, unit):
    if unit == "%":
        return f"{value * 100:.1f} %"
    if unit == "x":
        return f"{value:.3f}x"
    return f"{value:.4g}{(' ' + unit) if unit else ''}"


def command_line(spec, size, sim):
    cmd = f"scripts/reproduce.sh --experiment {spec['id']}"
    if size != "full":
        cmd += f" --size {size}"
    return cmd


def anchor(text):
    return text.lower().replace(" ", "-")


def git_commit():
    try:
        rev = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short=12", "HEAD"], capture_output=True,
                             text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
        return rev + (" (with uncommitted changes)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"


def write_page(path, specs, evals, size, backend, jobs, kept, wall_s, img_dir, plots_made):
    counts = {k: 0 for k in VERDICT_TEXT}
    for spec in specs:
        counts[verdict_class(spec, evals[spec["id"]])] += 1
    rel_img = os.path.relpath(img_dir, os.path.dirname(os.path.abspath(path)))
    L = []
    L.append("# Reproducing the papers' evaluations")
    L.append("")
    L.append("Generated by `scripts/reproduce.sh` (`host/scripts/reproduce.py`) from the experiment files in "
             "`configs/experiments/` ([format](../reproduction-format.md)); do not edit by hand, rerun it. "
             "One file per quantitative claim of the MoE-Hub paper (sections V-VI) and of RelayMoE "
             "(section 4): what the paper says, the moehub-sim runs that answer it, how our number is "
             "computed from their results and how close it must come.")
    L.append("")
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    L.append(f"Made at commit {git_commit()} on {now}: size `{size}`, backend `{backend}`, "
             f"{jobs} runs" + (f" ({kept} of them kept from an earlier call with the same inputs, --reuse)" if kept else "") +
             f", {wall_s:.0f} s of wall time.")
    if size == "small":
        L.append("")
        L.append("**Size small** (the CI pass): fewer tokens and points than the claims need; the numbers "
                 "check the pipeline, not the papers.")
    if size == "medium":
        medium = [s["id"] for s in specs if s.get("medium")]
        L.append("")
        L.append(f"**Size medium:** {len(medium)} experiments ran a smaller grid than the paper's, because "
                 "their full size takes too long on the machine this page was made on; each says so below. "
                 "The others ran at full size.")
    L.append("")
    total = len(specs)
    at_medium = [s["id"] for s in specs if size == "medium" and s.get("medium")]
    L.append(f"**{total} claims:** " + ", ".join(f"{counts[k]} {VERDICT_COUNT[k]}" for k in VERDICT_COUNT
                                                if counts[k] or k != "failed") + "." +
             (f" {len(at_medium)} of the verdicts are at medium size (marked), not at the paper's." if at_medium else ""))
    L.append("")
    L.append("| claim | paper | figure | paper's number | ours | verdict |")
    L.append("| --- | --- | --- | --- | --- | --- |")
    for spec in specs:
        ev = evals[spec["id"]]
        ours = fmt(ev["value"], spec["unit"]) if "value" in ev else "-"
        mark = " (at medium size)" if spec["id"] in at_medium else ""
        L.append(f"| [{spec['id']}](#{anchor(spec['id'])}) | {spec['paper']} | {spec['figure']} | "
                 f"{spec['paper_text']} | {ours} | {VERDICT_TEXT[verdict_class(spec, ev)]}{mark} |")
    L.append("")
    L.append("Granularity: every run that moves rows is simulated at `--granularity row` (one transaction "
             "per row and plane; within 0.1 % of packet level on the default job, "
             "[simulator.md](simulator.md#speed)); the MoE-Hub row stores and the ring's bulk transfers run "
             "as they always do (packet level and 64 KiB chunks). An experiment that states a `setup` "
             "note ran on a setup that differs from the paper's; the note says how.")
    for paper in repro_spec.PAPERS:
        mine = [s for s in specs if s["paper"] == paper]
        if not mine:
            continue
        L.append("")
        L.append(f"## {repro_spec.PAPERS[paper]}")
        for spec in mine:
            ev = evals[spec["id"]]
            L.append("")
            L.append(f"### {spec['id']}")
            L.append("")
            L.append(f"{spec['figure']}, section {spec['section']}. {spec['claim']}")
            L.append("")
            L.append(f"- paper: {spec['paper_text']}")
            vc = verdict_class(spec, ev)
            if "value" in ev:
                L.append(f"- ours: **{fmt(ev['value'], spec['unit'])}** ({repro_metrics_label(spec)}, "
                         f"{ev['n']} {'pair' if ev['n'] == 1 else 'pairs'}; {ev['how']})")
            L.append(f"- verdict: **{VERDICT_TEXT[vc]}**" + (" (at medium size)" if spec["id"] in at_medium else ""))
            if ev["verdict"] == "failed":
                L.append(f"- error: {ev['error']}")
            if spec["reason"]:
                label = "why it cannot run yet" if vc == "cannot-run" else (
                    "why it differs" if vc == "differs-reason" else "note")
                L.append(f"- {label}: {spec['reason']}")
            if spec.get("setup"):
                L.append(f"- setup: {spec['setup']}")
            if size == "medium" and spec.get("medium"):
                L.append("- **ran at medium size**, not the paper's: " + "; ".join(
                    f"{k} {v}" for k, v in spec["medium"].items()) + " (the full grid: `--size full`)")
            if spec["status"] == "run":
                L.append(f"- command: `{command_line(spec, size if size != 'medium' or spec.get('medium') else 'full', None)}`")
            if spec["id"] in plots_made:
                L.append("")
                L.append(f"![{spec['id']}]({rel_img}/repro_{spec['id']}.png)")
            if ev.get("detail"):
                L.append("")
                L.append("<details><summary>per point</summary>")
                L.append("")
                for label, v in ev["detail"]:
                    L.append(f"- {label}: {v:.4f}")
                L.append("")
                L.append("</details>")
    text = "\n".join(L) + "\n"
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def repro_metrics_label(spec):
    m = spec["metric"]
    num = "; ".join(f"{d} {'/'.join(v)}" for d, v in m["numerator"].items())
    den = "; ".join(f"{d} {'/'.join(v)}" for d, v in m["denominator"].items())
    return f"{m['reducer']} of {m['quantity']}, {num} over {den}"


# ---- plots ------------------------------------------------------------------------------------

def plot_series(spec, ev):
    """{panel: {series: [(x, y)]}} for the plot of an experiment (means over the other dims)."""
    p, m = spec["plot"], spec["metric"]
    acc = {}
    if p["y"] == "ratio":
        items = [(c, r) for c, _, r in repro_metrics.pairs(ev["points"], m)]
    else:
        q = m["quantity"] if p["y"] == "normalized_throughput" else p["y"]
        items = [(c, repro_metrics.quantity(r, q)) for c, r in ev["points"] if repro_metrics._selected(c, m["where"])]
    for c, y in items:
        panel = c[p["panels"]] if "panels" in p else ""
        series = c[p["series"]] if "series" in p else ""
        x = c[p["x"]]
        acc.setdefault(panel, {}).setdefault(series, {}).setdefault(x, []).append(y)
    out = {}
    for panel, ss in acc.items():
        out[panel] = {}
        for s, xs in ss.items():
            pts = [(x, sum(v) / len(v)) for x, v in xs.items()]
            try:
                pts.sort(key=lambda t: float(t[0]))
            except ValueError:
                pass
            if p["y"] == "normalized_throughput":
                t0 = pts[0][1]
                pts = [(x, t0 / y) for x, y in pts]
            out[panel][s] = pts
    return out


def make_plot(spec, ev, png):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    p = spec["plot"]
    data = plot_series(spec, ev)
    panels = sorted(data)
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels) + 0.8, 3.4), squeeze=False)
    ylabel = {"ratio": f"{spec['metric']['quantity']} ratio", "normalized_throughput": "throughput / at the smallest x"}.get(p["y"], p["y"])
    for ax, panel in zip(axes[0], panels):
        ss = data[panel]
        if p["kind"] == "lines":
            for s in ss:
                xs = [float(x) for x, _ in ss[s]]
                ax.plot(xs, [y for _, y in ss[s]], marker="o", ms=3, label=s or None)
            if p["y"] == "normalized_throughput":
                allx = sorted({float(x) for s in ss for x, _ in ss[s]})
                ax.plot(allx, [x / allx[0] for x in allx], "k--", lw=1, label="linear")
            if p["logx"]:
                ax.set_xscale("log", base=2)
        else:
            cats = []
            for s in ss:
                for x, _ in ss[s]:
                    if x not in cats:
                        cats.append(x)
            names = list(ss)
            w = 0.8 / max(1, len(names))
            for i, s in enumerate(names):
                d = dict(ss[s])
                ax.bar([j + i * w - 0.4 + w / 2 for j in range(len(cats))], [d.get(c, 0) for c in cats], w,
                       label=s or None)
            ax.set_xticks(range(len(cats)))
            ax.set_xticklabels(cats, rotation=30 if max(len(c) for c in cats) > 5 else 0, fontsize=8)
        if p["y"] == "ratio":
            ax.axhline(1.0, color="grey", lw=0.6)
        if p["logy"]:
            ax.set_yscale("log")
        ax.set_xlabel(p["x"])
        ax.set_ylabel(ylabel)
        if panel:
            ax.set_title(panel, fontsize=9)
        if any(ss):
            if any(s for s in ss) or p["y"] == "normalized_throughput":
                ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    fig.suptitle(p["title"], fontsize=10)
    fig.tight_layout()
    # no timestamps in the file, so the same inputs give the same image
    fig.savefig(png, dpi=90, metadata={"Software": None})
    plt.close(fig)


# ---- main -------------------------------------------------------------------------------------

def main(argv=None):
    ap = argparse.ArgumentParser(prog="reproduce.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--experiment", action="append", default=[], metavar="ID",
                    help="an experiment's id (repeatable; default: every file in --experiments-dir)")
    ap.add_argument("--size", default="full", choices=list(repro_spec.SIZES),
                    help="full: the claims' runs; small: each file's CI variant; medium: a file's medium "
                         "variant where it has one (runs too long for now at full size), else full")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="runs at a time (local backend)")
    ap.add_argument("--backend", default="local", choices=sorted(BACKENDS))
    ap.add_argument("--sim", default=os.path.join(ROOT, "build", "release", "host", "sim", "moehub-sim"))
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "reproduce"), help="the runs' results JSON go to OUT/runs/")
    ap.add_argument("--page", default=os.path.join(ROOT, "docs", "results", "reproduction.md"))
    ap.add_argument("--img-dir", default=None, help="plots (default: img/ beside the page)")
    ap.add_argument("--experiments-dir", default=os.path.join(ROOT, "configs", "experiments"))
    ap.add_argument("--no-plots", action="store_true", help="write the page without plots")
    ap.add_argument("--reuse", action="store_true",
                    help="keep a run's results JSON from an earlier call with the same command")
    ap.add_argument("--check", action="store_true", help="only check the experiment files")
    a = ap.parse_args(argv)

    def bad(msg):
        print(f"{PROG}: {msg}", file=sys.stderr)
        return 2

    if a.jobs < 1 or a.jobs > 1024:
        return bad(f"--jobs: must be in [1, 1024] (got {a.jobs})")
    try:
        specs = repro_spec.load_all(a.experiments_dir, a.experiment)
    except repro_spec.SpecError as e:
        return bad(str(e))
    if a.check:
        print(f"{PROG}: {len(specs)} experiment files are valid")
        return 0
    if any(s["status"] == "run" for s in specs) and not (os.path.isfile(a.sim) and os.access(a.sim, os.X_OK)):
        return bad(f"--sim: '{a.sim}' is not an executable file (build it: cmake --build build/release --target moehub-sim)")
    page_dir = os.path.dirname(os.path.abspath(a.page))
    if not os.path.isdir(page_dir):
        return bad(f"--page: the folder '{page_dir}' does not exist")
    img_dir = a.img_dir or os.path.join(page_dir, "img")
    plots = not a.no_plots and any(s["status"] == "run" for s in specs)
    if plots:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            return bad("plots need matplotlib (Debian: python3-matplotlib, run with /usr/bin/python3), or pass --no-plots")

    sim = os.path.abspath(a.sim)
    per_exp, jobs = plan(specs, a.size, sim, a.out)
    os.makedirs(os.path.join(a.out, "runs"), exist_ok=True)
    outcome = {}
    todo = []
    for j in jobs:
        if a.reuse and reusable(j):
            outcome[j.tag] = (0, "", 0.0, j.results)
        else:
            todo.append(j)
    print(f"{PROG}: {len(specs)} experiments, {len(jobs)} runs ({len(jobs) - len(todo)} kept from before), "
          f"size {a.size}, backend {a.backend}", file=sys.stderr)

    last = [0.0]

    def progress(done, n, tag, rc):
        now = time.monotonic()
        if rc != 0 or done == n or now - last[0] > 10:
            last[0] = now
            print(f"{PROG}: {done}/{n} runs{'' if rc == 0 else f'; {tag} exited {rc}'}", file=sys.stderr)

    t0 = time.monotonic()
    ran = BACKENDS[a.backend](a.jobs).run(todo, progress) if todo else {}
    wall = time.monotonic() - t0
    for j in todo:
        rc, err, w = ran[j.tag]
        outcome[j.tag] = (rc, err, w, j.results)
    evals = {s["id"]: evaluate(s, per_exp.get(s["id"], []), outcome) for s in specs}
    plots_made = set()
    if plots:
        os.makedirs(img_dir, exist_ok=True)
        for s in specs:
            if "value" in evals[s["id"]]:
                make_plot(s, evals[s["id"]], os.path.join(img_dir, f"repro_{s['id']}.png"))
                plots_made.add(s["id"])
    write_page(a.page, specs, evals, a.size, a.backend, len(jobs), len(jobs) - len(todo), wall, img_dir, plots_made)
    failed = [i for i, e in evals.items() if e["verdict"] == "failed"]
    for i in failed:
        print(f"{PROG}: {i}: {evals[i]['error']}", file=sys.stderr)
    print(f"{PROG}: wrote {a.page} ({len(jobs)} runs, {wall:.1f} s)", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
