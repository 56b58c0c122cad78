#!/usr/bin/env python3
"""Data, plots and tables of the MoE-Hub results page (docs/results/moehub.md).

Subcommands:

  collect  --sweeps DIR... --out CSV
      Joins the sweep.csv of each host/scripts/sweep.py output DIR into one CSV and
      adds, from each run's results JSON in DIR/runs/, the MoE-Hub units' counters
      (RAT, RPM, DAM, region occupancy) and the simulator's wall time of the run.
  runs-csv --runs DIR --out CSV
      One row per moehub-sim results JSON in DIR (named by the file's stem; a stem
      r_<entries> is taken as a run with hub.rat_entries = <entries>, whose system
      config DIR/rat_<entries>.yaml gives rat_banks): layer time, windows and the
      MoE-Hub units' counters. RAT runs lead with the columns synth/design_space.py
      reads (rat_entries, rat_banks, evictions, restores, layer_time_us).
  plot     --data DIR --img DIR
      From DIR/moehub_sweep.csv, moehub_imbalance.csv and rat_sweep.csv writes
      moehub_layer_time.png, moehub_window_speedup.png, moehub_imbalance.png and
      moehub_rat_sweep.png into --img.
  tables   --data DIR
      Prints the page's Markdown tables from the same CSVs.

The routing-to-GEMM1 window runs from the start of the routing's top-k kernel to
the first thread block of the first expert GEMM (`routing_to_gemm1_us`) or to the
end of that GEMM (`routing_to_gemm1_end_us`), mean over the GPUs. Speedups of a
variant over moehub-base are base window / variant window.

Plots need matplotlib (e.g. /usr/bin/python3 host/scripts/moehub_plot.py plot ...).
"""
import argparse
import csv
import glob
import json
import os
import re
import sys

SCHEDULES = ["megatron", "moehub-base", "moehub-pkt", "moehub-dep", "moehub", "ideal"]
VARIANTS = ["moehub-pkt", "moehub-dep", "moehub"]
# MoE-Hub (ISCA 2026): published figures this page compares with
PAPER_IDEAL_FRACTION = 0.968  # full MoE-Hub at about 96.8 % of the ideal layer
RAT_SLOW_NOP = "moehub_rat_sweep_rpm_timer8192.csv"  # optional second RAT sweep
STORE32 = "moehub_store32.csv"  # optional: the MoE-Hub variants with 32-byte stores
PAPER_WINDOW = {"moehub-pkt": 1.13, "moehub-dep": 1.14}  # routing-to-GEMM1 window speedups over base


def die(msg):
    sys.stderr.write(f"moehub_plot: {msg}\n")
    sys.exit(2)


def read_csv(path):
    if not os.path.exists(path):
        die(f"{path} not found")
    with open(path) as f:
        return list(csv.DictReader(f))


def write_csv(path, rows, first):
    fields = first + sorted({k for r in rows for k in r} - set(first))
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)


def run_tag(r):
    return (f"{r['system']}_{r['model']}_{r['schedule']}_t{r['tokens']}_std{r['imbalance_std']}"
            f"_s{r['seed']}_{r['granularity']}")


def unit_fields(res):
    """The MoE-Hub counters of one results JSON, flattened."""
    out = {}
    host = res.get("host", {})
    if "wall_seconds" in host:
        out["sim_wall_s"] = round(host["wall_seconds"], 3)
    mh = res.get("moehub")
    if not mh:
        return out
    for k in ("hits", "misses", "evictions", "spills", "restores", "bank_conflicts", "conflict_cycles", "stalls"):
        if "rat" in mh:
            out["rat_" + k] = mh["rat"][k]
    if "rpm" in mh:
        out["rpm_merge_ratio"] = round(mh["rpm"]["merge_ratio"], 4)
        out["rpm_packets"] = mh["rpm"]["packets_sent"]
        out["rpm_timer_flushes"] = mh["rpm"]["timer_flushes"]
        out["rpm_packet_flits_histogram"] = " ".join(str(x) for x in mh["rpm"]["packet_payload_flits_histogram"])
    if "dam" in mh:
        out["dam_groups_released"] = mh["dam"]["groups_released"]
    rt = mh.get("row_transfers", {})
    if "region_occupancy_max" in rt:
        out["region_occupancy_max"] = round(rt["region_occupancy_max"], 4)
    return out


def collect(a):
    rows = []
    for d in a.sweeps:
        for r in read_csv(os.path.join(d, "sweep.csv")):
            path = os.path.join(d, "runs", run_tag(r) + ".json")
            if not os.path.exists(path):
                die(f"{path} not found (the run of a row of {d}/sweep.csv)")
            with open(path) as f:
                r.update(unit_fields(json.load(f)))
            rows.append(r)
    keys = ["system", "model", "schedule", "tokens", "imbalance_std", "seed", "granularity"]
    rows.sort(key=lambda r: (r["system"], r["model"], SCHEDULES.index(r["schedule"]) if r["schedule"] in SCHEDULES
                             else 99, int(r["tokens"]), float(r["imbalance_std"]), int(r["seed"])))
    write_csv(a.out, rows, keys + ["layer_time_us", "routing_to_gemm1_us", "routing_to_gemm1_end_us"])
    print(f"{a.out}: {len(rows)} runs")


def runs_csv(a):
    rows = []
    for path in sorted(glob.glob(os.path.join(a.runs, "*.json"))):
        stem = os.path.basename(path)[:-5]
        with open(path) as f:
            res = json.load(f)
        if res.get("format") != "moehub-sim-results":
            continue
        row = {"run": stem, "model": res["model"], "tokens": res["tokens"], "schedule": res["schedule"],
               "layer_time_us": round(res["layer_time_us"], 3),
               "routing_to_gemm1_us": round(res["routing_to_gemm1"]["mean_us"], 3),
               "routing_to_gemm1_end_us": round(res["routing_to_gemm1"]["end_mean_us"], 3)}
        row.update(unit_fields(res))
        m = re.fullmatch(r"r_(\d+)", stem)
        if m:
            # the columns synth/design_space.py joins on (rat_entries, rat_banks) and reads
            row["rat_entries"] = int(m.group(1))
            yaml = os.path.join(a.runs, f"rat_{m.group(1)}.yaml")
            banks = None
            if os.path.exists(yaml):
                with open(yaml) as f:
                    b = re.search(r"^\s*rat_banks:\s*(\d+)", f.read(), re.M)
                banks = int(b.group(1)) if b else None
            if banks is None:
                die(f"{yaml}: no rat_banks (the system config of run {stem} is needed next to it)")
            row["rat_banks"] = banks
            row["evictions"] = row.get("rat_evictions", 0)
            row["restores"] = row.get("rat_restores", 0)
        rows.append(row)
    if not rows:
        die(f"no results JSON in {a.runs}")
    rows.sort(key=lambda r: (r.get("rat_entries", 0), r["model"], int(r["tokens"]),
                             SCHEDULES.index(r["schedule"]) if r["schedule"] in SCHEDULES else 99, r["run"]))
    rat = ["rat_entries", "rat_banks", "evictions", "restores"] if "rat_entries" in rows[0] else []
    write_csv(a.out, rows, rat + ["layer_time_us", "run", "model", "tokens", "schedule"])
    print(f"{a.out}: {len(rows)} runs")


def table_of(rows):
    """(model, schedule, tokens, std) -> row with floats where numeric."""
    t = {}
    for r in rows:
        t[(r["model"], r["schedule"], int(r["tokens"]), float(r["imbalance_std"]))] = r
    return t


def f(r, k):
    v = r.get(k, "")
    return float(v) if v not in ("", None) else float("nan")


def mean(v):
    v = list(v)
    return sum(v) / len(v) if v else float("nan")


def load_data(d):
    sweep = table_of(read_csv(os.path.join(d, "moehub_sweep.csv")))
    imb = table_of(read_csv(os.path.join(d, "moehub_imbalance.csv")))
    rat = read_csv(os.path.join(d, "rat_sweep.csv"))
    return sweep, imb, rat


def axes_of(sweep):
    models = sorted({k[0] for k in sweep})
    tokens = sorted({k[2] for k in sweep})
    return models, tokens


def layer(t, m, s, n, std=0.0):
    r = t.get((m, s, n, std))
    return f(r, "layer_time_us") if r else float("nan")


def window_ratio(t, m, s, n, std=0.0, key="routing_to_gemm1_end_us"):
    b, v = t.get((m, "moehub-base", n, std)), t.get((m, s, n, std))
    if not b or not v:
        return float("nan")
    return f(b, key) / f(v, key)


def plot(a):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sweep, imb, rat = load_data(a.data)
    models, tokens = axes_of(sweep)
    os.makedirs(a.img, exist_ok=True)

    # layer time against tokens
    fig, axes = plt.subplots(1, len(models), figsize=(5 * len(models), 4), squeeze=False)
    for ax, m in zip(axes[0], models):
        for s in SCHEDULES:
            xs = [n for n in tokens if (m, s, n, 0.0) in sweep]
            ax.plot(xs, [f(sweep[(m, s, n, 0.0)], "layer_time_us") / 1e3 for n in xs], marker="o", ms=3, label=s)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("total tokens (8 GPUs)")
        ax.set_ylabel("MoE layer time (ms)")
        ax.set_title(m)
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(a.img, "moehub_layer_time.png"), dpi=110)
    plt.close(fig)

    # window speedups over moehub-base
    fig, axes = plt.subplots(2, len(models), figsize=(5 * len(models), 7), squeeze=False)
    for j, m in enumerate(models):
        for i, (key, what) in enumerate([("routing_to_gemm1_end_us", "to GEMM1's end"),
                                         ("routing_to_gemm1_us", "to GEMM1's first tile")]):
            ax = axes[i][j]
            for s in VARIANTS[:2]:
                xs = [n for n in tokens if (m, s, n, 0.0) in sweep and (m, "moehub-base", n, 0.0) in sweep]
                ax.plot(xs, [window_ratio(sweep, m, s, n, key=key) for n in xs], marker="o", ms=3,
                        label=f"base / {s.replace('moehub-', '')}")
                ax.axhline(PAPER_WINDOW[s], ls=":", lw=1, color=ax.lines[-1].get_color(),
                           label=f"paper, {s.replace('moehub-', '')} ({PAPER_WINDOW[s]}x)")
            ax.set_xscale("log", base=2)
            if i == 1:
                ax.set_yscale("log")
            ax.set_xlabel("total tokens (8 GPUs)")
            ax.set_ylabel(f"window speedup over base ({what})")
            ax.set_title(m)
            ax.grid(True, which="both", alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(a.img, "moehub_window_speedup.png"), dpi=110)
    plt.close(fig)

    # imbalance
    stds = sorted({k[3] for k in imb})
    m = sorted({k[0] for k in imb})[0]
    n = sorted({k[2] for k in imb})[0]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for s in SCHEDULES:
        xs = [x for x in stds if (m, s, n, x) in imb]
        axes[0].plot(xs, [f(imb[(m, s, n, x)], "layer_time_us") / 1e3 for x in xs], marker="o", ms=3, label=s)
    axes[0].set_xlabel("per-expert load imbalance (std)")
    axes[0].set_ylabel("MoE layer time (ms)")
    axes[0].set_title(f"{m}, {n} tokens")
    axes[0].legend(fontsize=8)
    for s, lab in [("moehub", "megatron / moehub (layer)"), ("moehub-pkt", "base / pkt window (end)"),
                   ("moehub-dep", "base / dep window (end)"), ("moehub", "base / moehub window (end)")]:
        if lab.startswith("megatron"):
            ys = [layer(imb, m, "megatron", n, x) / layer(imb, m, s, n, x) for x in stds]
        else:
            ys = [window_ratio(imb, m, s, n, x) for x in stds]
        axes[1].plot(stds, ys, marker="o", ms=3, label=lab)
    axes[1].set_xlabel("per-expert load imbalance (std)")
    axes[1].set_ylabel("speedup")
    axes[1].set_title("advantage of MoE-Hub as imbalance grows")
    axes[1].legend(fontsize=8)
    for ax in axes:
        ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(a.img, "moehub_imbalance.png"), dpi=110)
    plt.close(fig)

    # RAT size: the default hub, and (when present) the RPM's timer at 8192 cycles
    series = [("default hub", rat)]
    slow = os.path.join(a.data, RAT_SLOW_NOP)
    if os.path.exists(slow):
        series.append(("rpm_timer_cycles = 8192", read_csv(slow)))
    fig, axes = plt.subplots(1, len(series), figsize=(6 * len(series), 4), squeeze=False)
    for ax, (what, rows) in zip(axes[0], series):
        xs = [int(r["rat_entries"]) for r in rows]
        ax.plot(xs, [f(r, "rat_evictions") for r in rows], marker="o", label="evictions")
        ax.plot(xs, [f(r, "rat_restores") for r in rows], marker="s", label="restores")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("RAT entries")
        ax.set_ylabel("count (all hubs)")
        ax2 = ax.twinx()
        lt = [f(r, "layer_time_us") for r in rows]
        ax2.plot(xs, lt, color="k", ls="--", marker="^", label="layer time")
        ax2.set_ylabel("layer time (us)")
        ax2.set_ylim(min(lt) * 0.98, max(lt) * 1.02)
        h1, l1 = ax.get_legend_handles_labels()
        h2, l2 = ax2.get_legend_handles_labels()
        ax.legend(h1 + h2, l1 + l2, fontsize=8)
        ax.set_title(f"{rows[0]['model']}, {rows[0]['tokens']} tokens, moehub, {what}", fontsize=10)
        ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(a.img, "moehub_rat_sweep.png"), dpi=110)
    plt.close(fig)
    print(f"wrote 4 plots into {a.img}")


def tables(a):
    sweep, imb, rat = load_data(a.data)
    models, tokens = axes_of(sweep)
    out = []

    def row(cells):
        out.append("| " + " | ".join(str(c) for c in cells) + " |")

    # layer time
    row(["model", "tokens"] + SCHEDULES + ["ideal / moehub", "megatron / moehub", "sim wall (s), moehub"])
    row(["---", "---:"] + ["---:"] * (len(SCHEDULES) + 3))
    fracs = []
    for m in models:
        for n in tokens:
            d = {s: sweep.get((m, s, n, 0.0)) for s in SCHEDULES}
            if not d["moehub"]:
                continue
            lt = {s: f(r, "layer_time_us") for s, r in d.items() if r}
            fr = lt["ideal"] / lt["moehub"] if "ideal" in lt else float("nan")
            fracs.append((m, n, fr))
            row([m, n] + [f"{lt[s]:.1f}" if s in lt else "-" for s in SCHEDULES] +
                [f"{100 * fr:.1f} %", f"{lt['megatron'] / lt['moehub']:.2f}x" if "megatron" in lt else "-",
                 f"{f(d['moehub'], 'sim_wall_s'):.1f}"])
    out.append("")
    common = [n for n in tokens if all((m, "moehub", n, 0.0) in sweep for m in models)]
    out.append(f"Means over the token counts every model ran ({', '.join(str(n) for n in common)}; "
               f"{len(common) * len(models)} points):")
    ok = [x[2] for x in fracs if x[1] in common and x[2] == x[2]]
    if ok:
        out.append(f"ideal / moehub: mean {100 * mean(ok):.1f} %, min {100 * min(ok):.1f} %, max {100 * max(ok):.1f} %")
    for m in models:
        v = [x[2] for x in fracs if x[0] == m]
        out.append(f"  {m}: mean {100 * mean(v):.1f} % over its {len(v)} points; " +
                   ", ".join(f"{x[1]}: {100 * x[2]:.1f} %" for x in fracs if x[0] == m))
    out.append("")

    # windows
    row(["model", "tokens", "megatron", "base", "pkt", "dep", "moehub", "base/pkt", "base/dep",
         "base end", "pkt end", "dep end", "moehub end", "base/pkt end", "base/dep end", "merge ratio (pkt)"])
    row(["---", "---:"] + ["---:"] * 14)
    sp = {"moehub-pkt": [], "moehub-dep": []}
    spf = {"moehub-pkt": [], "moehub-dep": []}
    for m in models:
        for n in tokens:
            g = {s: sweep.get((m, s, n, 0.0)) for s in SCHEDULES}
            if not all(g[s] for s in ["moehub-base"] + VARIANTS):
                continue
            w = {s: f(r, "routing_to_gemm1_us") for s, r in g.items() if r}
            we = {s: f(r, "routing_to_gemm1_end_us") for s, r in g.items() if r}
            for s in sp:
                sp[s].append((m, n, we["moehub-base"] / we[s]))
                spf[s].append((m, n, w["moehub-base"] / w[s]))
            row([m, n, f"{w.get('megatron', float('nan')):.1f}"] +
                [f"{w[s]:.1f}" for s in ["moehub-base"] + VARIANTS] +
                [f"{w['moehub-base'] / w['moehub-pkt']:.2f}x", f"{w['moehub-base'] / w['moehub-dep']:.2f}x"] +
                [f"{we[s]:.1f}" for s in ["moehub-base"] + VARIANTS] +
                [f"{we['moehub-base'] / we['moehub-pkt']:.3f}x", f"{we['moehub-base'] / we['moehub-dep']:.3f}x",
                 g["moehub-pkt"].get("rpm_merge_ratio", "")])
    out.append("")
    for s in sp:
        c = [x[2] for x in sp[s] if x[1] in common]
        cf = [x[2] for x in spf[s] if x[1] in common]
        out.append(f"base / {s} window to GEMM1's end: mean {mean(c):.3f}x over {len(c)} points "
                   f"(paper {PAPER_WINDOW[s]}x); to the first tile: mean {mean(cf):.2f}x")
        out.append("  per token count, mean over the models (end): " +
                   ", ".join(f"{n}: {mean(x[2] for x in sp[s] if x[1] == n):.3f}x" for n in common))
        for m in models:
            out.append(f"  {m}: " + ", ".join(f"{x[1]}: {x[2]:.3f}x" for x in sp[s] if x[0] == m))
    out.append("")

    # imbalance
    stds = sorted({k[3] for k in imb})
    mi = sorted({k[0] for k in imb})[0]
    ni = sorted({k[2] for k in imb})[0]
    row(["imbalance std", "measured load std"] + SCHEDULES +
        ["ideal / moehub", "megatron / moehub", "base / pkt window (end)", "base / dep window (end)",
         "base / moehub window (end)"])
    row(["---:"] * (2 + len(SCHEDULES) + 5))
    for x in stds:
        d = {s: imb.get((mi, s, ni, x)) for s in SCHEDULES}
        lt = {s: layer(imb, mi, s, ni, x) for s in SCHEDULES}
        load = next((r["measured_load_std"] for r in d.values() if r), "-")
        row([x, load] + [f"{lt[s]:.1f}" for s in SCHEDULES] +
            [f"{100 * lt['ideal'] / lt['moehub']:.1f} %", f"{lt['megatron'] / lt['moehub']:.2f}x",
             f"{window_ratio(imb, mi, 'moehub-pkt', ni, x):.3f}x", f"{window_ratio(imb, mi, 'moehub-dep', ni, x):.3f}x",
             f"{window_ratio(imb, mi, 'moehub', ni, x):.3f}x"])
    out.append("")

    # RAT
    row(["rat_entries", "evictions", "spills", "restores", "misses", "bank conflicts", "layer time (us)",
         "window to GEMM1's end (us)"])
    row(["---:"] * 8)
    slow = os.path.join(a.data, RAT_SLOW_NOP)
    for r in rat + ([dict(x, rat_entries=x["rat_entries"] + " (timer 8192)") for x in read_csv(slow)]
                    if os.path.exists(slow) else []):
        row([r["rat_entries"], f"{int(r['rat_evictions']):,}", f"{int(r.get('rat_spills') or 0):,}"
             if r.get("rat_spills") else "-", f"{int(r['rat_restores']):,}", f"{int(r['rat_misses']):,}",
             f"{int(r['rat_bank_conflicts']):,}", r["layer_time_us"], r["routing_to_gemm1_end_us"]])
    # 32-byte stores (optional)
    s32 = os.path.join(a.data, STORE32)
    if os.path.exists(s32):
        t = {(r["schedule"], int(r["tokens"])): r for r in read_csv(s32)}
        out.append("")
        row(["tokens", "base", "pkt", "dep", "moehub", "base / pkt window", "base / pkt window (end)",
             "base / dep window (end)", "base / moehub window (end)", "RPM merge ratio (pkt)"])
        row(["---:"] * 10)
        for n in sorted({k[1] for k in t}):
            g = {s: t.get((s, n)) for s in ["moehub-base"] + VARIANTS}
            if not all(g.values()):
                continue
            w = {s: f(r, "routing_to_gemm1_us") for s, r in g.items()}
            we = {s: f(r, "routing_to_gemm1_end_us") for s, r in g.items()}
            row([n] + [f"{f(g[s], 'layer_time_us'):.1f}" for s in g] +
                [f"{w['moehub-base'] / w['moehub-pkt']:.2f}x"] +
                [f"{we['moehub-base'] / we[s]:.3f}x" for s in VARIANTS] + [g["moehub-pkt"].get("rpm_merge_ratio", "")])
    print("\n".join(out))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("collect")
    p.add_argument("--sweeps", nargs="+", required=True)
    p.add_argument("--out", required=True)
    p = sub.add_parser("runs-csv")
    p.add_argument("--runs", required=True)
    p.add_argument("--out", required=True)
    p = sub.add_parser("plot")
    p.add_argument("--data", default="docs/results/data")
    p.add_argument("--img", default="docs/results/img")
    p = sub.add_parser("tables")
    p.add_argument("--data", default="docs/results/data")
    a = ap.parse_args()
    {"collect": collect, "runs-csv": runs_csv, "plot": plot, "tables": tables}[a.cmd](a)


if __name__ == "__main__":
    main()
