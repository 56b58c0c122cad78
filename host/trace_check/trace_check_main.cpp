// moehub-trace-check <trace-dir>: reads a trace with the same reader the simulator uses,
// prints a one-screen summary and exits 0, or prints the error (file and what is wrong)
// and exits 2.
#include <cstdio>
#include <exception>
#include <string>

#include "trace/trace.hpp"

int main(int argc, char** argv) {
  if (argc != 2 || std::string(argv[1]) == "-h" || std::string(argv[1]) == "--help") {
    std::fprintf(stderr, "usage: moehub-trace-check <trace-dir>\n"
                         "Validates a moehub trace (format %s, version %d; see docs/trace-format.md).\n",
                 moehub::trace::kFormatName, moehub::trace::kFormatVersion);
    return 2;
  }
  try {
    const moehub::trace::Trace t = moehub::trace::read_trace(argv[1]);
    const auto& m = t.manifest;
    std::printf("%s version %d: producer '%s', device '%s', date '%s'\n", moehub::trace::kFormatName, m.version,
                m.producer.c_str(), m.device.c_str(), m.date.c_str());
    std::printf("ranks %d, hidden %d, ffn %d, experts %d, top_k %d\n", m.ranks, m.hidden, m.ffn, m.experts, m.top_k);
    for (const auto& [key, value] : m.extra) std::printf("  %s = %s\n", key.c_str(), value.c_str());
    long long tokens = 0;
    for (const auto& r : t.routing) tokens += r.tokens;
    std::printf("routing: %lld tokens over %zu ranks; gemm rows %zu, hop rows %zu, memory samples %zu, timeline %s\n",
                tokens, t.routing.size(), t.gemm.size(), t.hops.size(), t.memory.size(), t.has_timeline ? "yes" : "no");
    return 0;
  } catch (const moehub::trace::TraceError& e) {
    std::fprintf(stderr, "moehub-trace-check: invalid trace: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "moehub-trace-check: %s\n", e.what());
    return 2;
  }
}
