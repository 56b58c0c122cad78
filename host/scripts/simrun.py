"""Running moehub-sim from the scripts beside this file (imported, not run)."""
import json
import os
import subprocess
import sys


def run_results(cmd, out_dir, prog):
    """Runs `cmd` (a moehub-sim command line writing into `out_dir`) and returns its
    results.json; on a non-zero exit prints the command and its stderr as `prog` and exits 1."""
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        print(f"{prog}: {' '.join(cmd)} exited {p.returncode}:\n{p.stderr}", file=sys.stderr)
        sys.exit(1)
    with open(os.path.join(out_dir, "results.json")) as f:
        return json.load(f)
