// Trace format v1: writer + reader round trip, and every malformed-trace error names
// the file it concerns.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "trace/trace.hpp"

namespace {

namespace fs = std::filesystem;
using namespace moehub::trace;

fs::path scratch() {
  const auto* info = testing::UnitTest::GetInstance()->current_test_info();
  fs::path dir = fs::path(MOEHUB_BINARY_DIR) / "test-scratch" / "trace" / info->name();
  fs::remove_all(dir);
  return dir;
}

std::string text_of(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void put(const fs::path& p, const std::string& b) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << b;
}

// Replaces the one occurrence of `from` in file p by `to`.
void edit(const fs::path& p, const std::string& from, const std::string& to) {
  std::string t = text_of(p);
  const auto at = t.find(from);
  ASSERT_NE(at, std::string::npos) << "'" << from << "' not in " << p;
  t.replace(at, from.size(), to);
  put(p, t);
}

const char* kTimeline =
    "{\"traceEvents\": [{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 0, \"args\": {\"name\": \"GPU 0\"}},"
    " {\"name\": \"hop 0\", \"ph\": \"X\", \"ts\": 12.5, \"dur\": 30.25, \"pid\": 0, \"tid\": 1}]}";

Trace sample() {
  Trace t;
  t.manifest.producer = "moehub-gpu 0.1.0";
  t.manifest.device = "NVIDIA H200 \"SXM\"";
  t.manifest.date = "2026-11-29T12:00:00Z";
  t.manifest.ranks = 2;
  t.manifest.hidden = 64;
  t.manifest.ffn = 32;
  t.manifest.experts = 4;
  t.manifest.top_k = 2;
  t.manifest.extra = {{"mode", "ring-expert"}, {"ep", "2"}, {"note", "line\nbreak, comma"}};
  t.routing.push_back({0, 3, 2, {0, 1, 3, 2, 1, 0}, {0.75f, 0.25f, 0.6f, 0.4f, 0.5f, 0.5f}});
  t.routing.push_back({1, 2, 2, {2, 3, 3, 0}, {0.9f, 0.1f, 1.0f, 0.0f}});
  t.gemm.push_back({4096, 1536, 2048, 16, "cublas-grouped", 123.456789012345, 654.3210987654321});
  t.gemm.push_back({1, 1, 1, 1, "own", 1e-300, 0.0});
  t.hops.push_back({0, "fwd", "ring-expert", 0, 0.1, 1.0 / 3.0, 2.0 / 3.0});
  t.hops.push_back({1, "bwd", "ring-expert", 1, 100.0, 5e-324, 123456789.123});
  t.hops.push_back({1, "fwd", "a2a", 5, 1.0, 2.0, 3.0});
  t.memory.push_back({0, 0.0, 0, 0});
  t.memory.push_back({1, 17.125, 1LL << 40, (1LL << 40) + 1});
  return t;
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

TEST(Trace, RoundTripIsExact) {
  const fs::path dir = scratch();
  const Trace t = sample();
  write_trace(dir.string(), t, kTimeline);
  const Trace r = read_trace(dir.string());
  EXPECT_EQ(r.manifest.version, 1);
  EXPECT_EQ(r.manifest.producer, t.manifest.producer);
  EXPECT_EQ(r.manifest.device, t.manifest.device);
  EXPECT_EQ(r.manifest.date, t.manifest.date);
  EXPECT_EQ(r.manifest.ranks, 2);
  EXPECT_EQ(r.manifest.hidden, 64);
  EXPECT_EQ(r.manifest.ffn, 32);
  EXPECT_EQ(r.manifest.experts, 4);
  EXPECT_EQ(r.manifest.top_k, 2);
  EXPECT_EQ(r.manifest.extra, t.manifest.extra);
  ASSERT_EQ(r.routing.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(r.routing[i].rank, t.routing[i].rank);
    EXPECT_EQ(r.routing[i].tokens, t.routing[i].tokens);
    EXPECT_EQ(r.routing[i].top_k, t.routing[i].top_k);
    EXPECT_EQ(r.routing[i].topk_ids, t.routing[i].topk_ids);
    ASSERT_EQ(r.routing[i].topk_weights.size(), t.routing[i].topk_weights.size());
    EXPECT_EQ(std::memcmp(r.routing[i].topk_weights.data(), t.routing[i].topk_weights.data(),
                          t.routing[i].topk_weights.size() * sizeof(float)), 0);
  }
  ASSERT_EQ(r.gemm.size(), t.gemm.size());
  for (std::size_t i = 0; i < t.gemm.size(); ++i) {
    EXPECT_EQ(r.gemm[i].m, t.gemm[i].m);
    EXPECT_EQ(r.gemm[i].n, t.gemm[i].n);
    EXPECT_EQ(r.gemm[i].k, t.gemm[i].k);
    EXPECT_EQ(r.gemm[i].groups, t.gemm[i].groups);
    EXPECT_EQ(r.gemm[i].impl, t.gemm[i].impl);
    EXPECT_TRUE(same_bits(r.gemm[i].time_us, t.gemm[i].time_us)) << r.gemm[i].time_us;
    EXPECT_TRUE(same_bits(r.gemm[i].tflops, t.gemm[i].tflops)) << r.gemm[i].tflops;
  }
  ASSERT_EQ(r.hops.size(), t.hops.size());
  for (std::size_t i = 0; i < t.hops.size(); ++i) {
    EXPECT_EQ(r.hops[i].rank, t.hops[i].rank);
    EXPECT_EQ(r.hops[i].pass, t.hops[i].pass);
    EXPECT_EQ(r.hops[i].mode, t.hops[i].mode);
    EXPECT_EQ(r.hops[i].hop, t.hops[i].hop);
    EXPECT_TRUE(same_bits(r.hops[i].compute_us, t.hops[i].compute_us));
    EXPECT_TRUE(same_bits(r.hops[i].comm_us, t.hops[i].comm_us)) << r.hops[i].comm_us;
    EXPECT_TRUE(same_bits(r.hops[i].hop_us, t.hops[i].hop_us));
  }
  ASSERT_EQ(r.memory.size(), t.memory.size());
  for (std::size_t i = 0; i < t.memory.size(); ++i) {
    EXPECT_EQ(r.memory[i].rank, t.memory[i].rank);
    EXPECT_TRUE(same_bits(r.memory[i].t_us, t.memory[i].t_us));
    EXPECT_EQ(r.memory[i].bytes_in_use, t.memory[i].bytes_in_use);
    EXPECT_EQ(r.memory[i].peak_bytes, t.memory[i].peak_bytes);
  }
  EXPECT_TRUE(r.has_timeline);
  EXPECT_EQ(text_of(dir / "timeline.json"), kTimeline);
}

TEST(Trace, ManifestNamesFormatVersionAndFiles) {
  const fs::path dir = scratch();
  write_trace(dir.string(), sample(), "");
  const std::string m = text_of(dir / "manifest.json");
  EXPECT_NE(m.find("\"format\": \"moehub-trace\""), std::string::npos) << m;
  EXPECT_NE(m.find("\"version\": 1"), std::string::npos) << m;
  EXPECT_NE(m.find("\"routing/rank1_topk_weights.npy\""), std::string::npos) << m;
  EXPECT_EQ(m.find("timeline"), std::string::npos) << "no timeline given, none listed";
  EXPECT_FALSE(fs::exists(dir / "timeline.json"));
  EXPECT_FALSE(read_trace(dir.string()).has_timeline);
  EXPECT_EQ(text_of(dir / "hop_timings.csv").substr(0, 45), "rank,pass,mode,hop,compute_us,comm_us,hop_us\n");
}

TEST(Trace, EmptyTablesAndZeroTokenRanksRoundTrip) {
  const fs::path dir = scratch();
  Trace t = sample();
  t.gemm.clear();
  t.hops.clear();
  t.memory.clear();
  t.routing[1] = {1, 0, 2, {}, {}};
  write_trace(dir.string(), t, "");
  const Trace r = read_trace(dir.string());
  EXPECT_TRUE(r.gemm.empty());
  EXPECT_TRUE(r.hops.empty());
  EXPECT_EQ(r.routing[1].tokens, 0);
}

// Writes the sample, lets `damage` break it, and expects read_trace to fail with an
// error against `file` (relative to the trace directory) whose message holds `part`.
template <typename F>
void expect_read_error(const fs::path& dir, F damage, const std::string& file, const std::string& part) {
  write_trace(dir.string(), sample(), kTimeline);
  damage();
  try {
    read_trace(dir.string());
    ADD_FAILURE() << "read_trace accepted the damaged trace; expected '" << part << "'";
  } catch (const TraceError& e) {
    const std::string path = (dir / file).string();
    EXPECT_EQ(e.file(), path) << e.what();
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(TraceErrors, MissingManifest) {
  const fs::path dir = scratch();
  expect_read_error(dir, [&] { fs::remove(dir / "manifest.json"); }, "manifest.json", "missing manifest");
  fs::remove_all(dir);
  try {
    read_trace(dir.string());
    ADD_FAILURE() << "a missing directory was accepted";
  } catch (const TraceError& e) {
    EXPECT_EQ(e.file(), (dir / "manifest.json").string());
  }
}

TEST(TraceErrors, WrongFormatName) {
  const fs::path dir = scratch();
  expect_read_error(dir, [&] { edit(dir / "manifest.json", "\"moehub-trace\"", "\"other-trace\""); },
                    "manifest.json", "\"format\" = 'other-trace', expected 'moehub-trace'");
}

TEST(TraceErrors, UnsupportedVersion) {
  const fs::path dir = scratch();
  expect_read_error(dir, [&] { edit(dir / "manifest.json", "\"version\": 1", "\"version\": 2"); },
                    "manifest.json", "unsupported version 2");
  expect_read_error(dir, [&] { edit(dir / "manifest.json", "\"version\": 1", "\"version\": 1.5"); },
                    "manifest.json", "unsupported version 1.5");
}

TEST(TraceErrors, ManifestNotJsonOrMissingKey) {
  const fs::path dir = scratch();
  expect_read_error(dir, [&] { edit(dir / "manifest.json", "\"ranks\": 2,", "\"ranks\": 2"); }, "manifest.json",
                    "not valid JSON: line 8 column 3: expected '}'");
  expect_read_error(dir, [&] { edit(dir / "manifest.json", "\"hidden\": 64,", ""); }, "manifest.json",
                    "missing key \"hidden\"");
  expect_read_error(dir, [&] { edit(dir / "manifest.json", "\"top_k\": 2", "\"top_k\": \"2\""); }, "manifest.json",
                    "\"top_k\" must be a number, found a string");
  expect_read_error(dir, [&] { edit(dir / "manifest.json", "\"top_k\": 2", "\"top_k\": 5"); }, "manifest.json",
                    "\"top_k\" = 5 must be an integer in [1, 4]");
  expect_read_error(dir, [&] { edit(dir / "manifest.json", "\"memory.csv\"", "\"../memory.csv\""); }, "manifest.json",
                    "must be a relative path inside the trace directory");
}

TEST(TraceErrors, MissingFileListedInManifest) {
  const fs::path dir = scratch();
  expect_read_error(dir, [&] { fs::remove(dir / "memory.csv"); }, "memory.csv", "listed in");
  expect_read_error(dir, [&] { fs::remove(dir / "routing/rank1_topk_weights.npy"); },
                    "routing/rank1_topk_weights.npy", "does not exist");
  expect_read_error(dir, [&] { fs::remove(dir / "timeline.json"); }, "timeline.json", "does not exist");
}

TEST(TraceErrors, NpyWithWrongDtype) {
  const fs::path dir = scratch();
  expect_read_error(dir, [&] {
    write_npy((dir / "routing/rank0_topk_weights.npy").string(), {3, 2}, std::vector<double>{0.5, 0.5, 0.5, 0.5, 0.5, 0.5});
  }, "routing/rank0_topk_weights.npy", "dtype is '<f8', expected '<f4'");
}

TEST(TraceErrors, NpyWithWrongShape) {
  const fs::path dir = scratch();
  expect_read_error(dir, [&] {
    write_npy((dir / "routing/rank1_topk_ids.npy").string(), {2, 3}, std::vector<std::int32_t>{0, 1, 2, 0, 1, 2});
  }, "routing/rank1_topk_ids.npy", "shape (2, 3), expected (2, 2)");
}

TEST(TraceErrors, NpyTruncated) {
  const fs::path dir = scratch();
  expect_read_error(dir, [&] {
    const fs::path p = dir / "routing/rank0_topk_ids.npy";
    const std::string b = text_of(p);
    put(p, b.substr(0, b.size() - 5));
  }, "routing/rank0_topk_ids.npy", "truncated data");
}

TEST(TraceErrors, NpyBadMagic) {
  const fs::path dir = scratch();
  expect_read_error(dir, [&] {
    const fs::path p = dir / "routing/rank0_topk_weights.npy";
    put(p, "PK" + text_of(p).substr(2));
  }, "routing/rank0_topk_weights.npy", "bad magic");
}

TEST(TraceErrors, CsvWithWrongHeader) {
  const fs::path dir = scratch();
  expect_read_error(dir, [&] { edit(dir / "hop_timings.csv", "compute_us,comm_us", "comm_us,compute_us"); },
                    "hop_timings.csv", "line 1: header");
  expect_read_error(dir, [&] { put(dir / "gemm_timings.csv", ""); }, "gemm_timings.csv", "empty file");
}

TEST(TraceErrors, NonNumericFieldNamesFileAndLine) {
  const fs::path dir = scratch();
  expect_read_error(dir, [&] { edit(dir / "memory.csv", "1,17.125,", "1,abc,"); }, "memory.csv",
                    "line 3: field 't_us' = 'abc' is not a finite number");
  expect_read_error(dir, [&] { edit(dir / "gemm_timings.csv", "4096,", "4096x,"); }, "gemm_timings.csv",
                    "line 2: field 'm' = '4096x' is not an integer");
  expect_read_error(dir, [&] { edit(dir / "hop_timings.csv", "0,fwd,ring-expert,0,", "0,fwd,ring-expert,0,nan,"); },
                    "hop_timings.csv", "line 2");
  expect_read_error(dir, [&] { edit(dir / "hop_timings.csv", "1,fwd,a2a,5,1,2,3", "1,fwd,a2a,5,1,2"); },
                    "hop_timings.csv", "line 4: 6 fields, expected 7");
}

TEST(TraceErrors, FieldValuesOutOfRange) {
  const fs::path dir = scratch();
  expect_read_error(dir, [&] { edit(dir / "hop_timings.csv", "1,fwd,a2a", "2,fwd,a2a"); }, "hop_timings.csv",
                    "line 4: rank = 2 is outside the allowed range [0, 1]");
  expect_read_error(dir, [&] { edit(dir / "hop_timings.csv", "1,bwd,ring-expert,1", "1,bwd,ring-expert,2"); },
                    "hop_timings.csv", "hop = 2");
  expect_read_error(dir, [&] { edit(dir / "hop_timings.csv", "1,fwd,a2a", "1,fwd,alltoall"); }, "hop_timings.csv",
                    "mode 'alltoall'");
  expect_read_error(dir, [&] { edit(dir / "memory.csv", ",1099511627777", ",5"); }, "memory.csv",
                    "peak_bytes (>= bytes_in_use)");
}

TEST(TraceErrors, ExpertIdOutOfRange) {
  const fs::path dir = scratch();
  expect_read_error(dir, [&] {
    write_npy((dir / "routing/rank1_topk_ids.npy").string(), {2, 2}, std::vector<std::int32_t>{2, 3, 4, 0});
  }, "routing/rank1_topk_ids.npy", "token 1 slot 0: expert id 4 is outside [0, experts = 4)");
  expect_read_error(dir, [&] {
    write_npy((dir / "routing/rank1_topk_ids.npy").string(), {2, 2}, std::vector<std::int32_t>{2, 3, -1, 0});
  }, "routing/rank1_topk_ids.npy", "expert id -1");
}

TEST(TraceErrors, WeightsNotSummingToOne) {
  const fs::path dir = scratch();
  expect_read_error(dir, [&] {
    write_npy((dir / "routing/rank0_topk_weights.npy").string(), {3, 2},
              std::vector<float>{0.75f, 0.25f, 0.6f, 0.39f, 0.5f, 0.5f});
  }, "routing/rank0_topk_weights.npy", "token 1: gate weights sum to");
}

TEST(TraceErrors, RankCountMismatch) {
  const fs::path dir = scratch();
  expect_read_error(dir, [&] { edit(dir / "manifest.json", "\"ranks\": 2", "\"ranks\": 3"); }, "manifest.json",
                    "rank count mismatch");
}

TEST(TraceErrors, BrokenTimeline) {
  const fs::path dir = scratch();
  expect_read_error(dir, [&] { put(dir / "timeline.json", "{\"traceEvents\": [}"); }, "timeline.json",
                    "not valid JSON");
  expect_read_error(dir, [&] { put(dir / "timeline.json", "{\"events\": []}"); }, "timeline.json", "traceEvents");
  expect_read_error(dir, [&] { put(dir / "timeline.json", "{\"traceEvents\": [{\"ph\": \"X\", \"ts\": 1}]}"); },
                    "timeline.json", "\"dur\"");
}

TEST(TraceWriter, RejectsInvalidTracesWithoutWritingAnything) {
  const fs::path dir = scratch();
  auto expect_rejected = [&](Trace t, const std::string& timeline, const std::string& file, const std::string& part) {
    try {
      write_trace(dir.string(), t, timeline);
      ADD_FAILURE() << "write_trace accepted an invalid trace; expected '" << part << "'";
    } catch (const TraceError& e) {
      EXPECT_EQ(e.file(), (dir / file).string()) << e.what();
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
    EXPECT_FALSE(fs::exists(dir)) << "partial output after a rejected trace";
  };
  Trace t = sample();
  t.manifest.ranks = 3;
  expect_rejected(t, "", "manifest.json", "rank count mismatch");
  t = sample();
  t.routing[0].topk_ids[3] = 4;
  expect_rejected(t, "", "routing/rank0_topk_ids.npy", "expert id 4");
  t = sample();
  t.routing[1].topk_weights[0] = 0.5f;
  expect_rejected(t, "", "routing/rank1_topk_weights.npy", "sum to");
  t = sample();
  t.gemm[0].impl = "a,b";
  expect_rejected(t, "", "gemm_timings.csv", "row 0: impl");
  t = sample();
  t.hops[2].pass = "forward";
  expect_rejected(t, "", "hop_timings.csv", "row 2: pass 'forward'");
  t = sample();
  t.memory[1].t_us = -1.0;
  expect_rejected(t, "", "memory.csv", "row 1: t_us");
  t = sample();
  t.manifest.version = 2;
  expect_rejected(t, "", "manifest.json", "unsupported version 2");
  expect_rejected(sample(), "[]", "timeline.json", "traceEvents");
}

}  // namespace

namespace {

TEST(TraceErrors, AnySingleByteDamageReadsOrThrowsTraceError) {
  // robustness: no crash and no other exception type, whatever byte of whatever file
  // of the trace is changed
  const fs::path dir = scratch();
  write_trace(dir.string(), sample(), kTimeline);
  int rejected = 0, runs = 0;
  for (const char* name : {"manifest.json", "gemm_timings.csv", "hop_timings.csv", "memory.csv", "timeline.json",
                           "routing/rank0_topk_ids.npy", "routing/rank1_topk_weights.npy"}) {
    const fs::path p = dir / name;
    const std::string original = text_of(p);
    for (std::size_t i = 0; i < original.size(); ++i) {
      for (const char c : {'\0', '"', '9', ',', '\n', '\xff'}) {
        std::string damaged = original;
        damaged[i] = c;
        put(p, damaged);
        ++runs;
        try {
          read_trace(dir.string());
        } catch (const TraceError& e) {
          ++rejected;
          EXPECT_FALSE(e.file().empty());
        }
      }
    }
    put(p, original);
  }
  EXPECT_GT(rejected, runs / 4) << "most damage must be detected";
  EXPECT_NO_THROW(read_trace(dir.string()));
}

}  // namespace
