# Figures of one `moehub-gpu run` from its console output, for the timing scripts
# (small_kernels.sh, launch_threads_ab.sh); source this file. Each reads the output in $1.
run_layer_us() { echo "$1" | sed -n 's/.*median \([0-9.]*\) us over.*/\1/p' | head -1; }
run_host_issue_us() { echo "$1" | sed -n 's/.*host done launching after median \([0-9.]*\) us.*/\1/p' | head -1; }
run_phase_us() { echo "$1" | sed -n "s/^ *phase $2 *median over ranks *\([0-9.]*\) us.*/\1/p" | head -1; }  # $2: phase name
