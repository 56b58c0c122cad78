// Scoreboard plumbing shared by the RTL-against-golden benches.
//
// A bench's run function drives the Verilated model and the behavioural
// model of systemc/golden with the same transactions and compares every
// response in the cycle it appears. It records the number of transactions,
// cycles and mismatches and the first mismatch (cycle and text), and it can
// be re-run with the same seed, writing an FST waveform, up to a few cycles
// past a given cycle. check() runs it once without a waveform; on any
// mismatch it re-runs the failing seed with tracing and reports the path of
// the waveform in the failure message. injected_fault_report() checks that a
// bench with a fault injected fails that way (every bench has such a test).
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <sstream>
#include <string>

namespace moehub::tb {

struct Outcome {
  std::uint64_t transactions = 0;
  std::uint64_t cycles = 0;
  std::uint64_t mismatches = 0;
  std::uint64_t first_cycle = 0;  ///< cycle of the first mismatch
  std::string first;              ///< what the first mismatch was

  /// Records a mismatch in `cycle` unless `ok`; returns ok.
  bool expect(bool ok, std::uint64_t cycle, const std::function<std::string()>& what) {
    if (ok) return true;
    if (mismatches++ == 0) {
      first_cycle = cycle;
      first = what();
    }
    return false;
  }
};

/// Where waveforms of failing runs go: $MOEHUB_TB_WAVE_DIR, else the build tree.
inline std::string wave_dir() {
  const char* env = std::getenv("MOEHUB_TB_WAVE_DIR");
#ifdef MOEHUB_BINARY_DIR
  return env != nullptr ? env : MOEHUB_BINARY_DIR "/tb";
#else
  return env != nullptr ? env : ".";
#endif
}

/// run(fst_path, stop_after_cycle): one scoreboard run ("" and the maximum: the full run without a waveform).
using RunFn = std::function<Outcome(const std::string& fst_path, std::uint64_t stop_after_cycle)>;

/// Runs `run`; returns "" when it had no mismatch, else a failure message
/// naming the first mismatch and the FST waveform of the re-run.
inline std::string check(const std::string& name, const RunFn& run) {
  const Outcome o = run("", std::numeric_limits<std::uint64_t>::max());
  std::printf("scoreboard %s: %llu transactions in %llu cycles, %llu mismatches\n", name.c_str(),
              static_cast<unsigned long long>(o.transactions), static_cast<unsigned long long>(o.cycles),
              static_cast<unsigned long long>(o.mismatches));
  if (o.mismatches == 0 && o.transactions > 0) return "";
  const std::string path = wave_dir() + "/" + name + ".fst";
  if (o.mismatches > 0) run(path, o.first_cycle + 4);
  std::ostringstream msg;
  if (o.mismatches == 0) {
    msg << name << ": no transaction ran";
  } else {
    msg << name << ": " << o.mismatches << " mismatches; the first in cycle " << o.first_cycle << ": " << o.first
        << "; waveform of the re-run: " << path;
  }
  return msg.str();
}

/// The bench can fail: `run` has a fault injected (the RTL shown other inputs
/// than the golden model from some cycle on), so check() must report
/// mismatches and a waveform of the re-run. Returns "" when it does (and
/// deletes the waveform), else what went wrong.
inline std::string injected_fault_report(const std::string& name, const RunFn& run) {
  const std::string msg = check(name, run);
  if (msg.empty()) return name + ": the injected fault went unnoticed";
  std::printf("%s\n", msg.c_str());
  if (msg.find(" mismatches; the first in cycle ") == std::string::npos) return "no mismatch reported: " + msg;
  const std::string path = wave_dir() + "/" + name + ".fst";
  if (msg.find(path) == std::string::npos) return "the message does not name the waveform " + path + ": " + msg;
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return "no waveform at " + path;
  std::fseek(f, 0, SEEK_END);
  const long size = std::ftell(f);
  std::fclose(f);
  std::remove(path.c_str());
  if (size <= 1000) return "waveform " + path + " is empty (" + std::to_string(size) + " bytes)";
  return "";
}

}  // namespace moehub::tb
