// moehub-trace-check: exit 0 and a summary for a valid trace, exit 2 and the file name
// for a malformed one or bad arguments.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <sys/wait.h>

#include "trace/trace.hpp"

namespace {

namespace fs = std::filesystem;

struct CheckRun { int code; std::string output; };

CheckRun run(const std::string& args) {
  const fs::path out = fs::path(MOEHUB_BINARY_DIR) / "test-scratch" / "trace-check.out";
  const std::string cmd = std::string(MOEHUB_TRACE_CHECK) + " " + args + " > " + out.string() + " 2>&1";
  const int status = std::system(cmd.c_str());
  std::ifstream in(out);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, std::string(std::istreambuf_iterator<char>(in), {})};
}

TEST(TraceCheck, ValidTraceExitsZeroAndInvalidExitsTwoNamingTheFile) {
  const fs::path dir = fs::path(MOEHUB_BINARY_DIR) / "test-scratch" / "trace-check";
  fs::remove_all(dir);
  moehub::trace::Trace t;
  t.manifest = {1, "test", "cpu", "2026-11-29T00:00:00Z", 1, 8, 4, 2, 1, {{"mode", "a2a"}}};
  t.routing.push_back({0, 2, 1, {0, 1}, {1.0f, 1.0f}});
  moehub::trace::write_trace(dir.string(), t, "");
  const CheckRun ok = run(dir.string());
  EXPECT_EQ(ok.code, 0) << ok.output;
  EXPECT_NE(ok.output.find("ranks 1, hidden 8"), std::string::npos) << ok.output;

  std::ofstream(dir / "memory.csv") << "rank,t_us,bytes_in_use,peak_bytes\n0,x,1,1\n";
  const CheckRun bad = run(dir.string());
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.output.find((dir / "memory.csv").string() + ": line 2"), std::string::npos) << bad.output;

  EXPECT_EQ(run("").code, 2);
  EXPECT_EQ(run((dir / "nowhere").string()).code, 2);
}

}  // namespace
