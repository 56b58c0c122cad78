// Functional coverage of the RTL testbenches.
//
// The RTL's user cover points (`cover property` inside `ifdef MOEHUB_COVER`,
// Verilated with --coverage-user) count in the model's VerilatedContext. A
// Dut hands its context to tally_coverage() when it is destroyed: the
// counts are written with VerilatedCov's own writer (the coverage.dat
// format: one line per point, C '<key/value pairs>' <count>), read back and
// added per point "module.label" to a process-wide tally. A testbench's
// coverage test drives the corners, then compares the tally with the list of
// points that must be hit, prints a summary and lists what is uncovered.
#pragma once

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <verilated.h>
#include <verilated_cov.h>

namespace moehub::tb {

/// Cover point "module.label" -> times hit, summed over every Dut so far.
inline std::map<std::string, std::uint64_t>& coverage_tally() {
  static std::map<std::string, std::uint64_t> tally;
  return tally;
}

/// Value of key `k` in a coverage.dat record ('\001' k '\002' value).
inline std::string coverage_field(const std::string& rec, const std::string& k) {
  const std::string tag = std::string("\001") + k + "\002";
  const std::size_t at = rec.find(tag);
  if (at == std::string::npos) return "";
  const std::size_t from = at + tag.size();
  const std::size_t to = rec.find('\001', from);
  return rec.substr(from, (to == std::string::npos ? rec.find('\'', from) : to) - from);
}

inline void tally_coverage(VerilatedContext& ctx) {
  const std::string path = "/tmp/moehub_tb_cov_" + std::to_string(::getpid()) + ".dat";
  ctx.coveragep()->write(path.c_str());
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("C '", 0) != 0) continue;
    const std::size_t close = line.rfind('\'');
    const std::string rec = line.substr(2, close - 1);
    std::string page = coverage_field(rec, "page");  // v_user/<module>[__<parameters>]
    page = page.substr(page.find('/') + 1);
    page = page.substr(0, page.find("__"));
    const std::string name = page + "." + coverage_field(rec, "o");
    coverage_tally()[name] += std::stoull(line.substr(close + 1));
  }
  in.close();
  std::remove(path.c_str());
  ctx.coveragep()->zero();
}

/// Prints the tally of `module`'s points and returns those of `required`
/// (labels) that were never hit or do not exist.
inline std::vector<std::string> coverage_report(const std::string& module, const std::vector<std::string>& required) {
  const auto& t = coverage_tally();
  std::ostringstream os;
  unsigned covered = 0, total = 0;
  for (const auto& [name, count] : t) {
    if (name.rfind(module + ".", 0) != 0) continue;
    ++total;
    covered += count > 0 ? 1 : 0;
    os << "  " << name << ": " << count << "\n";
  }
  std::vector<std::string> missing;
  for (const std::string& label : required) {
    const auto it = t.find(module + "." + label);
    if (it == t.end() || it->second == 0) missing.push_back(label);
  }
  std::printf("coverage of %s: %u of %u cover points hit\n%s", module.c_str(), covered, total, os.str().c_str());
  for (const std::string& m : missing) std::printf("  UNCOVERED: %s.%s\n", module.c_str(), m.c_str());
  return missing;
}

}  // namespace moehub::tb
