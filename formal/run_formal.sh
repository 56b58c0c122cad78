#!/usr/bin/env bash
# Formal checks of the hub RTL with Yosys 0.23, yosys-smtbmc and z3 (no
# SymbiYosys): read_verilog -formal, prep, async2sync, dffunmap,
# write_smt2, then yosys-smtbmc -s z3 --unroll (bounded model check to the
# given depth) or with -i (k-induction of that depth).
#
# usage: formal/run_formal.sh HARNESS MODE DEPTH [--expect-fail FILE SED]
#   HARNESS  apt | aau | rpm | rpm_safety   (formal/fv_<harness>.sv)
#   MODE     bmc | prove
#   --expect-fail FILE SED: run on a copy of rtl/FILE patched with the sed
#            expression; succeed only if a property fails (the patch must
#            change the file, else exit 2).
# Exit status: 0 passed (or failed as expected), 1 failed, 2 usage or tool error.
# (--unroll: z3 4.8 stalls in the first step without it on these models.)
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
rtl=$root/rtl
usage() { echo "usage: $0 apt|aau|rpm|rpm_safety bmc|prove DEPTH [--expect-fail FILE SED]" >&2; exit 2; }
[ $# -ge 3 ] || usage
harness=$1 mode=$2 depth=$3
shift 3
expect_fail=0 patch_file="" patch_sed=""
if [ $# -gt 0 ]; then
  [ "$1" = "--expect-fail" ] && [ $# -eq 3 ] || usage
  expect_fail=1 patch_file=$2 patch_sed=$3
fi
case $harness in
  apt)        srcs="moehub_apt.sv" top=fv_apt defs="-DMOEHUB_ASSERT_ON -DMOEHUB_FORMAL" ;;
  aau)        srcs="moehub_apt.sv moehub_rat.sv moehub_aau.sv" top=fv_aau defs="-DMOEHUB_ASSERT_ON" ;;
  rpm)        srcs="moehub_rpm_sched.sv" top=fv_rpm defs="-DMOEHUB_ASSERT_ON" ;;
  rpm_safety) srcs="moehub_rpm_sched.sv" top=fv_rpm defs="-DMOEHUB_ASSERT_ON -DFV_SAFETY_ONLY" ;;
  *) usage ;;
esac
case $mode in
  bmc) flags="" ;;
  prove) flags="-i" ;;
  *) usage ;;
esac
[[ $depth =~ ^[0-9]+$ ]] && [ "$depth" -ge 1 ] || { echo "$0: DEPTH '$depth' must be an integer >= 1" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/moehub_formal.XXXXXX")
trap 'rm -rf "$work"' EXIT
files=""
for f in $srcs; do
  if [ "$f" = "$patch_file" ]; then
    sed -e "$patch_sed" "$rtl/$f" > "$work/$f"
    if cmp -s "$rtl/$f" "$work/$f"; then
      echo "$0: the patch '$patch_sed' does not change rtl/$f" >&2
      exit 2
    fi
    files="$files $work/$f"
  else
    files="$files $rtl/$f"
  fi
done
[ -z "$patch_file" ] || [[ " $srcs " == *" $patch_file "* ]] || { echo "$0: $patch_file is not a source of $harness" >&2; exit 2; }

if ! yosys -q -l "$work/yosys.log" -p "read_verilog -sv -formal -I $rtl $defs $files $here/fv_${harness%_safety}.sv;
      prep -top $top; memory_map; opt -fast; async2sync; dffunmap; write_smt2 -wires $work/model.smt2" > /dev/null; then
  cat "$work/yosys.log" >&2
  exit 2
fi
start=$(date +%s)
yosys-smtbmc -s z3 --unroll $flags -t "$depth" "$work/model.smt2" > "$work/smtbmc.log" 2>&1
rc=$?
grep -o "##.*" "$work/smtbmc.log" | grep -E "Assert failed|Status|induction|anyconst" | head -20
echo "$harness $mode depth $depth: $(( $(date +%s) - start )) s"
if grep -q "Status: PASSED" "$work/smtbmc.log"; then
  result=pass
elif grep -q "Status: FAILED" "$work/smtbmc.log"; then
  result=fail
else
  tail -20 "$work/smtbmc.log" >&2
  exit 2
fi
if [ $expect_fail -eq 1 ]; then
  if [ $result = fail ] && grep -q "Assert failed" "$work/smtbmc.log"; then
    echo "the patched copy fails a property, as it must"
    exit 0
  fi
  echo "the patched copy of rtl/$patch_file passes: the properties do not catch the fault" >&2
  exit 1
fi
[ $result = pass ] && [ $rc -eq 0 ] && exit 0
exit 1
