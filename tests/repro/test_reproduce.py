#!/usr/bin/env python3
"""host/scripts/reproduce.py, the reproduction runner, in three parts:

  tests/repro/test_reproduce.py validation            bad experiment files: exit 2, the file and
                                                      key named, nothing written
  tests/repro/test_reproduce.py reducers              the metric reducers and verdicts on
                                                      synthetic results with known answers
  tests/repro/test_reproduce.py small-pass SIM DIR    every experiment of configs/experiments at
                                                      --size small, the page written into DIR:
                                                      every experiment has a verdict, none failed
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SCRIPTS = os.path.join(ROOT, "host", "scripts")
RUNNER = os.path.join(SCRIPTS, "reproduce.py")
EXPERIMENTS = os.path.join(ROOT, "configs", "experiments")
sys.path.insert(0, SCRIPTS)

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


GOOD = """id: {id}
paper: moehub
figure: Fig. 12
section: VI-A
claim: a claim
paper_text: "2.0 x"
paper_number: 2.0
unit: x
status: run
runs:
  system: dgx-h800
  model: mixtral-8x7b
  schedule: [megatron, moehub]
  tokens: [512, 1024]
  granularity: row
small:
  tokens: [512]
metric:
  reducer: mean_ratio
  quantity: layer_time_us
  numerator: {{schedule: megatron}}
  denominator: {{schedule: moehub}}
expect:
  compare: within
  tolerance: 0.1
plot:
  kind: lines
  x: tokens
  y: ratio
"""

# (what is planted, the text replaced, its replacement, the key the message must name,
#  a word of the allowed values the message must give)
PLANTED = [
    ("an unknown top-level key", "status: run\n", "status: run\ncolour: red\n", "colour", "allowed"),
    ("a missing required key", "section: VI-A\n", "", "section", "missing"),
    ("a bad status", "status: run\n", "status: maybe\n", "status", "cannot-run"),
    ("an unknown reducer", "reducer: mean_ratio", "reducer: median", "metric.reducer", "geomean_ratio"),
    ("an unknown quantity", "quantity: layer_time_us", "quantity: speed", "metric.quantity", "window_end_us"),
    ("a selector value outside the grid", "numerator: {schedule: megatron}", "numerator: {schedule: tutel}",
     "metric.numerator.schedule", "megatron"),
    ("a negative token count", "tokens: [512, 1024]", "tokens: [512, -4]", "runs.tokens", ">= 1"),
    ("a tolerance out of range", "tolerance: 0.1", "tolerance: 5", "expect.tolerance", "(0, 1]"),
    ("a bad granularity", "granularity: row", "granularity: flit", "runs.granularity", "packet"),
    ("a malformed --set", "granularity: row\n", "granularity: row\n  set: [nvlink.bw=1]\n", "runs.set",
     "system.KEY=VALUE"),
    ("an unknown key in runs", "granularity: row\n", "granularity: row\n  gpus: 8\n", "runs.gpus", "allowed"),
    ("an id that is not the file's name", "id: {id}", "id: other", "id", "file's name"),
    ("a small variant outside the full grid's selectors", "small:\n  tokens: [512]",
     "small:\n  schedule: [moehub, ideal]", "metric.numerator.schedule", "small"),
    ("cannot-run without a reason", "status: run\n", "status: cannot-run\n", "reason", "required"),
    ("a plot kind that does not exist", "kind: lines", "kind: pie", "plot.kind", "bars"),
    ("not YAML", "claim: a claim", "claim: [a claim", "", "YAML"),
]


def run_runner(exp_dir, tmp, *extra):
    page = os.path.join(tmp, "page", "reproduction.md")
    out = os.path.join(tmp, "out")
    os.makedirs(os.path.dirname(page), exist_ok=True)
    p = subprocess.run([sys.executable, RUNNER, "--experiments-dir", exp_dir, "--page", page, "--out", out,
                        "--sim", "/bin/true", "--no-plots", *extra], capture_output=True, text=True)
    return p, page, out


def validation():
    with tempfile.TemporaryDirectory() as tmp:
        # a good file passes the check, so that what fails below is the planted fault
        exp = os.path.join(tmp, "exp")
        os.makedirs(exp)
        with open(os.path.join(exp, "x-good.yaml"), "w") as f:
            f.write(GOOD.format(id="x-good"))
        p, _, _ = run_runner(exp, tmp, "--check")
        check(p.returncode == 0, f"a good file is accepted (exit {p.returncode}: {p.stderr.strip()})")
        for what, old, new, key, allowed in PLANTED:
            text = GOOD.format(id="x-bad")
            old = old.replace("{id}", "x-bad")
            check(old in text, f"{what}: the planted text is in the good file")
            bad_dir = os.path.join(tmp, "bad")
            shutil.rmtree(bad_dir, ignore_errors=True)
            os.makedirs(bad_dir)
            # the bad file beside a good one: checked even when only the good one is asked for
            with open(os.path.join(bad_dir, "a-good.yaml"), "w") as f:
                f.write(GOOD.format(id="a-good"))
            path = os.path.join(bad_dir, "x-bad.yaml")
            with open(path, "w") as f:
                f.write(text.replace(old, new, 1))
            run_tmp = os.path.join(tmp, "run")
            shutil.rmtree(run_tmp, ignore_errors=True)
            p, page, out = run_runner(bad_dir, run_tmp, "--experiment", "a-good")
            err = p.stderr
            check(p.returncode == 2, f"{what}: exit 2 (got {p.returncode}: {err.strip()})")
            check(path in err, f"{what}: the message names the file ({err.strip()})")
            check(not key or f"key '{key}'" in err, f"{what}: the message names key '{key}' ({err.strip()})")
            check(allowed in err, f"{what}: the message says what is allowed ('{allowed}'; {err.strip()})")
            check(not os.path.exists(page) and not os.path.exists(out), f"{what}: nothing written")
            check("Traceback" not in err, f"{what}: no traceback")
        # an id without a file, and bad command-line values
        p, page, out = run_runner(exp, os.path.join(tmp, "run2"), "--experiment", "x-goood")
        check(p.returncode == 2 and "x-goood" in p.stderr and "x-good" in p.stderr,
              f"an unknown --experiment: exit 2 with the nearest id ({p.returncode}: {p.stderr.strip()})")
        check(not os.path.exists(page) and not os.path.exists(out), "an unknown --experiment: nothing written")
        p, page, out = run_runner(exp, os.path.join(tmp, "run3"), "--jobs", "0")
        check(p.returncode == 2 and "--jobs" in p.stderr, f"--jobs 0: exit 2 naming --jobs ({p.stderr.strip()})")
        p, page, out = run_runner(exp, os.path.join(tmp, "run4"), "--sim", os.path.join(tmp, "no-such-sim"))
        check(p.returncode == 2 and "--sim" in p.stderr and not os.path.exists(out),
              f"a missing --sim: exit 2 naming --sim, nothing written ({p.stderr.strip()})")
    # the shipped files are all valid
    p = subprocess.run([sys.executable, RUNNER, "--check"], capture_output=True, text=True)
    check(p.returncode == 0, f"configs/experiments passes the check ({p.stderr.strip()})")


def reducers():
    import repro_metrics as rm

    def pt(schedule, tokens, t, model="m", g=None, window=None):
        c = {"schedule": schedule, "tokens": str(tokens), "model": model}
        if g is not None:
            c["system.num_gpus"] = str(g)
        r = {"layer_time_us": t}
        if window is not None:
            r["routing_to_gemm1"] = {"mean_us": window / 2, "end_mean_us": window}
        return c, r

    def metric(reducer, num, den, quantity="layer_time_us", where=None, x=None):
        m = {"reducer": reducer, "quantity": quantity, "numerator": num, "denominator": den, "where": where or {}}
        if x:
            m["x"] = x
        return m

    def near(a, b):
        return abs(a - b) <= 1e-12 * max(1.0, abs(b))

    # megatron / moehub: 2.0 at 512 tokens, 8.0 at 1024; tutel / moehub 1.0 and 0.5
    pts = [pt("moehub", 512, 100.0), pt("megatron", 512, 200.0), pt("tutel", 512, 100.0),
           pt("moehub", 1024, 10.0), pt("megatron", 1024, 80.0), pt("tutel", 1024, 5.0)]
    num, den = {"schedule": ["megatron"]}, {"schedule": ["moehub"]}
    v = rm.reduce(pts, metric("mean_ratio", num, den))["value"]
    check(near(v, 5.0), f"mean_ratio: (2 + 8) / 2 = 5 (got {v})")
    v = rm.reduce(pts, metric("geomean_ratio", num, den))["value"]
    check(near(v, 4.0), f"geomean_ratio: sqrt(2 * 8) = 4 (got {v})")
    both = {"schedule": ["megatron", "tutel"]}
    v = rm.reduce(pts, metric("min_ratio", both, den))["value"]
    check(near(v, 0.5), f"min_ratio over two numerators: 0.5 (got {v})")
    v = rm.reduce(pts, metric("max_ratio", both, den))["value"]
    check(near(v, 8.0), f"max_ratio: 8 (got {v})")
    v = rm.reduce(pts, metric("mean_one_minus_ratio", den, num))["value"]
    check(near(v, (0.5 + 0.875) / 2), f"mean_one_minus_ratio: mean(1 - 1/2, 1 - 1/8) (got {v})")
    v = rm.reduce(pts, metric("mean_ratio", num, den, where={"tokens": ["1024"]}))["value"]
    check(near(v, 8.0), f"mean_ratio with where tokens=1024: 8 (got {v})")
    r = rm.reduce(pts, metric("ratio_trend", num, den, x="tokens"))
    check(near(r["value"], 4.0), f"ratio_trend: 8 / 2 = 4 (got {r['value']})")
    # tokens ordered as numbers, not as text ("1024" < "512" as text)
    check([d[0] for d in r["detail"]] == ["tokens=512", "tokens=1024"], f"ratio_trend orders x as numbers ({r['detail']})")
    # the window quantities
    wp = [pt("moehub-base", 512, 1.0, window=30.0), pt("moehub-dep", 512, 1.0, window=20.0)]
    v = rm.reduce(wp, metric("mean_ratio", {"schedule": ["moehub-base"]}, {"schedule": ["moehub-dep"]},
                             quantity="window_end_us"))["value"]
    check(near(v, 1.5), f"window_end_us ratio 30 / 20 (got {v})")
    v = rm.reduce(wp, metric("mean_ratio", {"schedule": ["moehub-base"]}, {"schedule": ["moehub-dep"]},
                             quantity="window_us"))["value"]
    check(near(v, 1.5), f"window_us ratio 15 / 10 (got {v})")
    # scaling efficiency: moehub halves its time per doubling (efficiency 1), megatron keeps it
    # (efficiency 1/4 at 8 GPUs), tutel 0.5 at 8 GPUs: min over the baselines of 1 / eff
    sp = [pt("moehub", 8, 400.0, g=2), pt("moehub", 8, 100.0, g=8),
          pt("megatron", 8, 400.0, g=2), pt("megatron", 8, 400.0, g=8),
          pt("tutel", 8, 400.0, g=2), pt("tutel", 8, 200.0, g=8)]
    r = rm.reduce(sp, metric("min_efficiency_ratio", {"schedule": ["moehub"]},
                             {"schedule": ["megatron", "tutel"]}, x="system.num_gpus"))
    check(near(r["value"], 2.0), f"min_efficiency_ratio: min(1 / 0.25, 1 / 0.5) = 2 (got {r['value']})")
    # a missing denominator run is an error, not a silent skip
    try:
        rm.reduce(pts[:3] + pts[4:], metric("mean_ratio", num, den))
        check(False, "a missing denominator point raises MetricError")
    except rm.MetricError:
        pass
    try:
        rm.reduce([pt("moehub", 512, 1.0)], metric("mean_ratio", {"schedule": ["moehub"]}, {"schedule": ["moehub"]},
                                                    quantity="window_us"))
        check(False, "a missing quantity raises MetricError")
    except rm.MetricError:
        pass
    # verdicts
    spec = {"expect": {"compare": "within", "tolerance": 0.1}, "paper_number": 2.0}
    check(rm.verdict(spec, 2.19)[0] == "reproduced", "within 10 %: 2.19 against 2.0 is reproduced")
    check(rm.verdict(spec, 2.21)[0] == "differs", "within 10 %: 2.21 against 2.0 differs")
    check(rm.verdict(spec, 1.79)[0] == "differs", "within 10 %: 1.79 against 2.0 differs")
    spec = {"expect": {"compare": "at_least"}, "paper_number": 1.0}
    check(rm.verdict(spec, 1.0)[0] == "reproduced" and rm.verdict(spec, 0.99)[0] == "differs", "at_least 1.0")
    spec = {"expect": {"compare": "at_most"}, "paper_number": 1.0}
    check(rm.verdict(spec, 1.0)[0] == "reproduced" and rm.verdict(spec, 1.01)[0] == "differs", "at_most 1.0")
    spec = {"expect": {"compare": "increasing"}, "paper_number": None}
    check(rm.verdict(spec, 1.01)[0] == "reproduced" and rm.verdict(spec, 1.0)[0] == "differs", "increasing")
    spec = {"expect": {"compare": "decreasing"}, "paper_number": None}
    check(rm.verdict(spec, 0.99)[0] == "reproduced" and rm.verdict(spec, 1.0)[0] == "differs", "decreasing")


def small_pass(sim, out_dir):
    import repro_spec
    os.makedirs(out_dir, exist_ok=True)
    page = os.path.join(out_dir, "reproduction.md")
    if os.path.exists(page):
        os.remove(page)
    # plots need matplotlib: the interpreter running this, or Debian's (scripts/install-deps.sh)
    py = sys.executable
    extra = []
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        if subprocess.run(["/usr/bin/python3", "-c", "import matplotlib, yaml"], capture_output=True).returncode == 0:
            py = "/usr/bin/python3"
        else:
            extra = ["--no-plots"]
            print("no matplotlib: the page without plots")
    p = subprocess.run([py, RUNNER, "--sim", sim, "--size", "small", "--jobs", "2", "--page", page,
                        "--out", os.path.join(out_dir, "out"), *extra], capture_output=True, text=True)
    print(p.stderr[-3000:])
    check(p.returncode == 0, f"the small pass exits 0 (got {p.returncode})")
    specs = repro_spec.load_all(EXPERIMENTS)
    check(os.path.exists(page), "the page is written")
    if not os.path.exists(page):
        return
    text = open(page).read()
    verdicts = ("reproduced", "differs, with the reason", "differs, no reason recorded", "cannot run yet")
    for s in specs:
        m = re.search(rf"^\| \[{re.escape(s['id'])}\]\(#[^)]*\) \|.*\| ([^|]+) \|$", text, re.M)
        check(m is not None, f"{s['id']}: a row in the summary table")
        if m:
            v = m.group(1).strip().removesuffix(" (at medium size)")
            check(v in verdicts, f"{s['id']}: a verdict ({m.group(1).strip()})")
        if s["status"] == "run" and not extra:
            png = os.path.join(out_dir, "img", f"repro_{s['id']}.png")
            check(os.path.exists(png) and os.path.getsize(png) > 0, f"{s['id']}: its plot {png}")
    m = re.search(r"^\*\*(\d+) claims:\*\*", text, re.M)
    check(m is not None and int(m.group(1)) == len(specs), f"the summary counts {len(specs)} claims")
    check("failed to run" not in text, "no experiment failed")
    # the same inputs give the same page (but for its line with the commit, date and wall
    # time) and the same plots: a second call on the kept runs
    pngs = {}
    img = os.path.join(out_dir, "img")
    if os.path.isdir(img):
        for n in sorted(os.listdir(img)):
            with open(os.path.join(img, n), "rb") as f:
                pngs[n] = f.read()
    p2 = subprocess.run([py, RUNNER, "--sim", sim, "--size", "small", "--jobs", "2", "--page", page, "--reuse",
                         "--out", os.path.join(out_dir, "out"), *extra], capture_output=True, text=True)
    check(p2.returncode == 0 and "kept from before" in p2.stderr, f"the second call reuses the runs ({p2.stderr[-500:]})")
    m = re.search(r"(\d+) runs \((\d+) kept from before\)", p2.stderr)
    check(m is not None and m.group(1) == m.group(2), f"every run is kept ({m.group(0) if m else p2.stderr[-300:]})")

    def body(t):
        return [ln for ln in t.splitlines() if not ln.startswith("Made at commit")]
    text2 = open(page).read()
    check(body(text2) == body(text), "the second page equals the first but for its 'Made at' line")
    for n, data in pngs.items():
        with open(os.path.join(img, n), "rb") as f:
            check(f.read() == data, f"{n}: the same plot again")


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if mode == "validation":
        validation()
    elif mode == "reducers":
        reducers()
    elif mode == "small-pass" and len(sys.argv) == 4:
        small_pass(sys.argv[2], sys.argv[3])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    if failures:
        print(f"{len(failures)} checks failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
