// libFuzzer target: the trace reader, through its manifest.json.
//
// A valid two-rank trace is written once into a folder of this process; each
// input replaces its manifest.json and the whole trace is read. The only
// acceptable failure is a TraceError; a trace that is read must be consistent
// (one routing entry per rank with top_k ids per token, each id < experts).
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "trace/trace.hpp"

namespace {

std::string dir_for_this_process() {
  return "/tmp/moehub-fuzz-trace-" + std::to_string(getpid());
}

[[noreturn]] void violation(const char* what) {
  std::fprintf(stderr, "fuzz_manifest: trace read without error is inconsistent: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  namespace tr = moehub::trace;
  tr::Trace t;
  t.manifest.producer = "fuzz";
  t.manifest.device = "none";
  t.manifest.date = "2026-11-29";
  t.manifest.ranks = 2;
  t.manifest.hidden = 64;
  t.manifest.ffn = 128;
  t.manifest.experts = 4;
  t.manifest.top_k = 2;
  for (int r = 0; r < 2; ++r) {
    tr::RankRouting rr{r, 3, 2, {}, {}};
    for (int tok = 0; tok < 3; ++tok) {
      rr.topk_ids.insert(rr.topk_ids.end(), {tok % 4, (tok + 1) % 4});
      rr.topk_weights.insert(rr.topk_weights.end(), {0.5f, 0.5f});
    }
    t.routing.push_back(rr);
  }
  std::filesystem::remove_all(dir_for_this_process());
  tr::write_trace(dir_for_this_process(), t, "");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string dir = dir_for_this_process();
  {
    std::ofstream f(dir + "/" + moehub::trace::kManifestFile, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    const moehub::trace::Trace t = moehub::trace::read_trace(dir);
    const auto& m = t.manifest;
    if (static_cast<int>(t.routing.size()) != m.ranks) violation("routing entries != ranks");
    for (const auto& rr : t.routing) {
      if (rr.tokens < 0) violation("negative tokens");
      if (rr.topk_ids.size() != static_cast<std::size_t>(rr.tokens) * static_cast<std::size_t>(m.top_k)) {
        violation("ids != tokens x top_k");
      }
      for (const std::int32_t id : rr.topk_ids) {
        if (id < 0 || id >= m.experts) violation("expert id out of range");
      }
    }
  } catch (const moehub::trace::TraceError&) {
  }
  return 0;
}
