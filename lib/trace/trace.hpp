// moehub::trace -- trace format version 1 (docs/trace-format.md): one directory with a
// manifest.json, per-rank routing as .npy, CSV tables of GEMM timings, hop timings and
// memory samples, and an optional Chrome-trace timeline. Written by the GPU harness,
// read back (and validated) by the simulator.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "trace/npy.hpp"
#include "trace/trace_error.hpp"

namespace moehub::trace {

inline constexpr const char* kFormatName = "moehub-trace";
inline constexpr int kFormatVersion = 1;

// File names inside a trace directory.
inline constexpr const char* kManifestFile = "manifest.json";
inline constexpr const char* kGemmFile = "gemm_timings.csv";
inline constexpr const char* kHopFile = "hop_timings.csv";
inline constexpr const char* kMemoryFile = "memory.csv";
inline constexpr const char* kTimelineFile = "timeline.json";
std::string routing_ids_file(int rank);      ///< "routing/rank<r>_topk_ids.npy"
std::string routing_weights_file(int rank);  ///< "routing/rank<r>_topk_weights.npy"

struct RankRouting { int rank; std::int64_t tokens; int top_k; std::vector<std::int32_t> topk_ids; std::vector<float> topk_weights; };
struct GemmTiming { std::int64_t m, n, k; int groups; std::string impl; double time_us, tflops; };
struct HopTiming { int rank; std::string pass; std::string mode; int hop; double compute_us, comm_us, hop_us; };  // pass "fwd"/"bwd", mode "ring-expert"/"ring-token"/"a2a"
struct MemorySample { int rank; double t_us; std::int64_t bytes_in_use, peak_bytes; };
struct Manifest { int version = 1; std::string producer; std::string device; std::string date;
                  int ranks = 0; int hidden = 0, ffn = 0, experts = 0, top_k = 0;
                  std::map<std::string, std::string> extra; };   // free-form key -> value (mode, EP, ...)
struct Trace { Manifest manifest; std::vector<RankRouting> routing; std::vector<GemmTiming> gemm;
               std::vector<HopTiming> hops; std::vector<MemorySample> memory;
               bool has_timeline = false;  ///< read_trace: the directory holds a timeline
             };

/// Validates the trace first (same rules as read_trace) and throws TraceError before
/// writing anything when it is inconsistent; creates dir (and dir/routing) if needed.
/// chrome_timeline_json, when not empty, must be a JSON object with a "traceEvents"
/// array and is written as timeline.json.
void write_trace(const std::string& dir, const Trace&, const std::string& chrome_timeline_json /* may be empty */);

/// Reads and validates everything; TraceError naming the file and the field/line.
Trace read_trace(const std::string& dir);

}  // namespace moehub::trace
