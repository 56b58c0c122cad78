// Trace format version 1: writer, reader and the validation rules both share.
// docs/trace-format.md is the specification.
#include "trace/trace.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "trace/json_min.hpp"

namespace moehub::trace {
namespace {

namespace fs = std::filesystem;

const char* const kGemmHeader = "m,n,k,groups,impl,time_us,tflops";
const char* const kHopHeader = "rank,pass,mode,hop,compute_us,comm_us,hop_us";
const char* const kMemoryHeader = "rank,t_us,bytes_in_use,peak_bytes";
constexpr double kWeightSumTolerance = 1e-3;

std::string join(const std::string& dir, const std::string& rel) { return (fs::path(dir) / rel).string(); }

// "%.17g" reads back to the same double.
std::string fmt_double(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// ---- shared validation ------------------------------------------------------------
// `file` is the file the error is reported against, `where` says where in it.

void check_finite_min(double v, double min, bool strict, const std::string& file, const std::string& where,
                      const char* field) {
  if (!std::isfinite(v) || (strict ? !(v > min) : !(v >= min)))
    throw TraceError(file, where + ": " + field + " = " + fmt_double(v) + " is outside the allowed range " +
                               (strict ? "(" : "[") + fmt_double(min) + ", inf)");
}

void check_int_range(long long v, long long lo, long long hi, const std::string& file, const std::string& where,
                     const char* field) {
  if (v < lo || v > hi)
    throw TraceError(file, where + ": " + field + " = " + std::to_string(v) + " is outside the allowed range [" +
                               std::to_string(lo) + ", " + std::to_string(hi) + "]");
}

void check_csv_text(const std::string& s, const std::string& file, const std::string& where, const char* field) {
  if (s.empty() || s.find_first_of(",\"\r\n") != std::string::npos)
    throw TraceError(file, where + ": " + field + " '" + s + "' must be non-empty without ',', '\"' or line breaks");
}

void validate_manifest(const Manifest& m, const std::string& file) {
  if (m.version != kFormatVersion)
    throw TraceError(file, "unsupported version " + std::to_string(m.version) + " (this library reads and writes " +
                               std::to_string(kFormatVersion) + ")");
  const long long big = 1LL << 30;
  check_int_range(m.ranks, 1, big, file, "manifest", "ranks");
  check_int_range(m.hidden, 1, big, file, "manifest", "hidden");
  check_int_range(m.ffn, 1, big, file, "manifest", "ffn");
  check_int_range(m.experts, 1, big, file, "manifest", "experts");
  check_int_range(m.top_k, 1, m.experts, file, "manifest", "top_k");
}

void validate_routing(const RankRouting& r, int index, const Manifest& m, const std::string& ids_file,
                      const std::string& weights_file, const std::string& manifest_file) {
  const std::string where = "routing entry " + std::to_string(index);
  check_int_range(r.rank, index, index, manifest_file, where, "rank");
  check_int_range(r.tokens, 0, 1LL << 40, manifest_file, where, "tokens");
  check_int_range(r.top_k, m.top_k, m.top_k, manifest_file, where, "top_k");
  const auto n = static_cast<std::size_t>(r.tokens) * static_cast<std::size_t>(r.top_k);
  if (r.topk_ids.size() != n)
    throw TraceError(ids_file, "holds " + std::to_string(r.topk_ids.size()) + " ids, expected tokens * top_k = " +
                                   std::to_string(n));
  if (r.topk_weights.size() != n)
    throw TraceError(weights_file, "holds " + std::to_string(r.topk_weights.size()) +
                                       " weights, expected tokens * top_k = " + std::to_string(n));
  const auto k = static_cast<std::size_t>(r.top_k);
  std::vector<std::int32_t> seen;
  for (std::size_t t = 0; t < static_cast<std::size_t>(r.tokens); ++t) {
    seen.assign(r.topk_ids.begin() + static_cast<std::ptrdiff_t>(t * k),
                r.topk_ids.begin() + static_cast<std::ptrdiff_t>((t + 1) * k));
    double sum = 0.0;
    for (std::size_t j = 0; j < k; ++j) {
      const std::int32_t id = seen[j];
      const std::string at = "token " + std::to_string(t) + " slot " + std::to_string(j);
      if (id < 0 || id >= m.experts)
        throw TraceError(ids_file, at + ": expert id " + std::to_string(id) + " is outside [0, experts = " +
                                       std::to_string(m.experts) + ")");
      for (std::size_t j2 = 0; j2 < j; ++j2)
        if (seen[j2] == id)
          throw TraceError(ids_file, at + ": expert id " + std::to_string(id) + " is selected twice");
      const float w = r.topk_weights[t * k + j];
      if (!std::isfinite(w) || w < 0.0f || w > 1.0f)
        throw TraceError(weights_file, at + ": gate weight " + fmt_double(w) + " is outside [0, 1]");
      sum += static_cast<double>(w);
    }
    if (std::fabs(sum - 1.0) > kWeightSumTolerance)
      throw TraceError(weights_file, "token " + std::to_string(t) + ": gate weights sum to " + fmt_double(sum) +
                                         ", expected 1 within " + fmt_double(kWeightSumTolerance));
  }
}

void validate_gemm(const GemmTiming& g, const std::string& file, const std::string& where) {
  const long long big = 1LL << 40;
  check_int_range(g.m, 1, big, file, where, "m");
  check_int_range(g.n, 1, big, file, where, "n");
  check_int_range(g.k, 1, big, file, where, "k");
  check_int_range(g.groups, 1, 1 << 30, file, where, "groups");
  check_csv_text(g.impl, file, where, "impl");
  check_finite_min(g.time_us, 0.0, true, file, where, "time_us");
  check_finite_min(g.tflops, 0.0, false, file, where, "tflops");
}

void validate_hop(const HopTiming& h, int ranks, const std::string& file, const std::string& where) {
  check_int_range(h.rank, 0, ranks - 1, file, where, "rank");
  if (h.pass != "fwd" && h.pass != "bwd")
    throw TraceError(file, where + ": pass '" + h.pass + "' must be 'fwd' or 'bwd'");
  if (h.mode != "ring-expert" && h.mode != "ring-token" && h.mode != "a2a")
    throw TraceError(file, where + ": mode '" + h.mode + "' must be 'ring-expert', 'ring-token' or 'a2a'");
  check_int_range(h.hop, 0, h.mode == "a2a" ? (1 << 30) : ranks - 1, file, where, "hop");
  check_finite_min(h.compute_us, 0.0, false, file, where, "compute_us");
  check_finite_min(h.comm_us, 0.0, false, file, where, "comm_us");
  check_finite_min(h.hop_us, 0.0, false, file, where, "hop_us");
}

void validate_memory(const MemorySample& s, int ranks, const std::string& file, const std::string& where) {
  check_int_range(s.rank, 0, ranks - 1, file, where, "rank");
  check_finite_min(s.t_us, 0.0, false, file, where, "t_us");
  check_int_range(s.bytes_in_use, 0, (1LL << 62), file, where, "bytes_in_use");
  check_int_range(s.peak_bytes, s.bytes_in_use, (1LL << 62), file, where, "peak_bytes (>= bytes_in_use)");
}

// A Chrome trace: an object with a "traceEvents" array of event objects, each with a
// string "ph"; events other than metadata ("M") carry a numeric "ts", complete events
// ("X") a numeric "dur" >= 0.
void validate_timeline(const std::string& text, const std::string& file) {
  json::Value v;
  try {
    v = json::parse(text);
  } catch (const std::runtime_error& e) {
    throw TraceError(file, std::string("not valid JSON: ") + e.what());
  }
  const json::Value* events = v.find("traceEvents");
  if (!events || events->kind != json::Value::Kind::kArray)
    throw TraceError(file, "must be a JSON object with a \"traceEvents\" array");
  for (std::size_t i = 0; i < events->items.size(); ++i) {
    const json::Value& e = events->items[i];
    const std::string where = "traceEvents[" + std::to_string(i) + "]";
    const json::Value* ph = e.find("ph");
    if (!ph || ph->kind != json::Value::Kind::kString)
      throw TraceError(file, where + ": an event must be an object with a string \"ph\"");
    if (ph->text == "M") continue;
    const json::Value* ts = e.find("ts");
    if (!ts || ts->kind != json::Value::Kind::kNumber)
      throw TraceError(file, where + ": \"ts\" (microseconds) must be a number");
    if (ph->text == "X") {
      const json::Value* dur = e.find("dur");
      if (!dur || dur->kind != json::Value::Kind::kNumber || dur->number < 0)
        throw TraceError(file, where + ": \"dur\" (microseconds) must be a number >= 0");
    }
  }
}

// ---- CSV ----------------------------------------------------------------------------

struct CsvRow { std::size_t line; std::vector<std::string> fields; };

std::vector<CsvRow> read_csv(const std::string& path, const std::string& header) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TraceError(path, "cannot open (missing file?)");
  std::vector<CsvRow> rows;
  std::string line;
  std::size_t lineno = 0;
  const std::size_t columns = static_cast<std::size_t>(std::count(header.begin(), header.end(), ',')) + 1;
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (lineno == 1) {
      if (line != header)
        throw TraceError(path, "line 1: header '" + line + "' differs from the expected '" + header + "'");
      continue;
    }
    if (line.empty()) continue;
    CsvRow row{lineno, {}};
    std::size_t start = 0;
    while (true) {
      const std::size_t comma = line.find(',', start);
      row.fields.push_back(line.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    if (row.fields.size() != columns)
      throw TraceError(path, "line " + std::to_string(lineno) + ": " + std::to_string(row.fields.size()) +
                                 " fields, expected " + std::to_string(columns) + " (" + header + ")");
    rows.push_back(std::move(row));
  }
  if (lineno == 0) throw TraceError(path, "empty file: expected the header '" + header + "'");
  return rows;
}

long long parse_int(const std::string& s, const std::string& file, std::size_t line, const char* field) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || end != s.c_str() + s.size() || errno == ERANGE || std::isspace(static_cast<unsigned char>(s.front())))
    throw TraceError(file, "line " + std::to_string(line) + ": field '" + field + "' = '" + s +
                               "' is not an integer");
  return v;
}

double parse_double(const std::string& s, const std::string& file, std::size_t line, const char* field) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);  // subnormals are accepted; overflow gives inf
  if (s.empty() || end != s.c_str() + s.size() || std::isspace(static_cast<unsigned char>(s.front())) ||
      !std::isfinite(v))
    throw TraceError(file, "line " + std::to_string(line) + ": field '" + field + "' = '" + s +
                               "' is not a finite number");
  return v;
}

int to_int(long long v, const std::string& file, std::size_t line, const char* field) {
  check_int_range(v, -(1LL << 31), (1LL << 31) - 1, file, "line " + std::to_string(line), field);
  return static_cast<int>(v);
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw TraceError(path, "cannot open for writing");
  out << text;
  out.close();
  if (!out) throw TraceError(path, "write failed");
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TraceError(path, "cannot open (missing file?)");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// ---- manifest JSON helpers ------------------------------------------------------------

// Returns a pointer (never null) rather than a reference: a reference bound to
// the result of a call that takes temporary strings trips GCC 13's
// -Wdangling-reference.
const json::Value* member(const json::Value& obj, const std::string& key, json::Value::Kind kind,
                          const std::string& file, const std::string& where) {
  const json::Value* v = obj.find(key);
  if (!v) throw TraceError(file, where + ": missing key \"" + key + "\"");
  if (v->kind != kind)
    throw TraceError(file, where + ": \"" + key + "\" must be " + json::kind_name(kind) + ", found " +
                               json::kind_name(v->kind));
  return v;
}

long long int_member(const json::Value& obj, const std::string& key, long long lo, long long hi,
                     const std::string& file, const std::string& where) {
  const json::Value& v = *member(obj, key, json::Value::Kind::kNumber, file, where);
  if (!v.integral || v.number < static_cast<double>(lo) || v.number > static_cast<double>(hi))
    throw TraceError(file, where + ": \"" + key + "\" = " + fmt_double(v.number) +
                               " must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return static_cast<long long>(v.number);
}

// A file name from the manifest: relative, inside the trace directory.
std::string rel_path(const json::Value& obj, const std::string& key, const std::string& file,
                     const std::string& where) {
  const std::string p = member(obj, key, json::Value::Kind::kString, file, where)->text;
  const fs::path path(p);
  bool escapes = p.empty() || path.is_absolute();
  for (const auto& part : path)
    if (part == "..") escapes = true;
  if (escapes)
    throw TraceError(file, where + ": \"" + key + "\" = '" + p + "' must be a relative path inside the trace directory");
  return p;
}

void require_file(const std::string& path, const std::string& manifest_file) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    throw TraceError(path, "missing: the file is listed in " + manifest_file + " but does not exist");
}

}  // namespace

std::string routing_ids_file(int rank) { return "routing/rank" + std::to_string(rank) + "_topk_ids.npy"; }
std::string routing_weights_file(int rank) { return "routing/rank" + std::to_string(rank) + "_topk_weights.npy"; }

void write_trace(const std::string& dir, const Trace& t, const std::string& chrome_timeline_json) {
  const std::string manifest_file = join(dir, kManifestFile);
  const Manifest& m = t.manifest;
  // validate everything before writing anything
  validate_manifest(m, manifest_file);
  if (static_cast<int>(t.routing.size()) != m.ranks)
    throw TraceError(manifest_file, "rank count mismatch: manifest ranks = " + std::to_string(m.ranks) + " but " +
                                        std::to_string(t.routing.size()) + " routing entries");
  for (int r = 0; r < m.ranks; ++r)
    validate_routing(t.routing[static_cast<std::size_t>(r)], r, m, join(dir, routing_ids_file(r)),
                     join(dir, routing_weights_file(r)), manifest_file);
  for (std::size_t i = 0; i < t.gemm.size(); ++i)
    validate_gemm(t.gemm[i], join(dir, kGemmFile), "row " + std::to_string(i));
  for (std::size_t i = 0; i < t.hops.size(); ++i)
    validate_hop(t.hops[i], m.ranks, join(dir, kHopFile), "row " + std::to_string(i));
  for (std::size_t i = 0; i < t.memory.size(); ++i)
    validate_memory(t.memory[i], m.ranks, join(dir, kMemoryFile), "row " + std::to_string(i));
  if (!chrome_timeline_json.empty()) validate_timeline(chrome_timeline_json, join(dir, kTimelineFile));

  std::error_code ec;
  fs::create_directories(fs::path(dir) / "routing", ec);
  if (ec) throw TraceError(dir, "cannot create the trace directory: " + ec.message());

  std::ostringstream js;
  js << "{\n  \"format\": " << json::quote(kFormatName) << ",\n  \"version\": " << kFormatVersion
     << ",\n  \"producer\": " << json::quote(m.producer) << ",\n  \"device\": " << json::quote(m.device)
     << ",\n  \"date\": " << json::quote(m.date) << ",\n  \"ranks\": " << m.ranks << ",\n  \"hidden\": " << m.hidden
     << ",\n  \"ffn\": " << m.ffn << ",\n  \"experts\": " << m.experts << ",\n  \"top_k\": " << m.top_k
     << ",\n  \"extra\": {";
  bool first = true;
  for (const auto& [key, value] : m.extra) {
    js << (first ? "\n    " : ",\n    ") << json::quote(key) << ": " << json::quote(value);
    first = false;
  }
  js << (first ? "}" : "\n  }") << ",\n  \"files\": {\n    \"routing\": [";
  for (int r = 0; r < m.ranks; ++r) {
    const RankRouting& rr = t.routing[static_cast<std::size_t>(r)];
    js << (r ? ",\n      " : "\n      ") << "{\"rank\": " << r << ", \"tokens\": " << rr.tokens
       << ", \"topk_ids\": " << json::quote(routing_ids_file(r))
       << ", \"topk_weights\": " << json::quote(routing_weights_file(r)) << "}";
    const std::vector<std::int64_t> shape = {rr.tokens, rr.top_k};
    write_npy(join(dir, routing_ids_file(r)), shape, rr.topk_ids);
    write_npy(join(dir, routing_weights_file(r)), shape, rr.topk_weights);
  }
  js << "\n    ],\n    \"gemm\": " << json::quote(kGemmFile) << ",\n    \"hops\": " << json::quote(kHopFile)
     << ",\n    \"memory\": " << json::quote(kMemoryFile);
  if (!chrome_timeline_json.empty()) js << ",\n    \"timeline\": " << json::quote(kTimelineFile);
  js << "\n  }\n}\n";

  std::ostringstream gemm;
  gemm << kGemmHeader << "\n";
  for (const GemmTiming& g : t.gemm)
    gemm << g.m << ',' << g.n << ',' << g.k << ',' << g.groups << ',' << g.impl << ',' << fmt_double(g.time_us)
         << ',' << fmt_double(g.tflops) << "\n";
  std::ostringstream hops;
  hops << kHopHeader << "\n";
  for (const HopTiming& h : t.hops)
    hops << h.rank << ',' << h.pass << ',' << h.mode << ',' << h.hop << ',' << fmt_double(h.compute_us) << ','
         << fmt_double(h.comm_us) << ',' << fmt_double(h.hop_us) << "\n";
  std::ostringstream mem;
  mem << kMemoryHeader << "\n";
  for (const MemorySample& s : t.memory)
    mem << s.rank << ',' << fmt_double(s.t_us) << ',' << s.bytes_in_use << ',' << s.peak_bytes << "\n";

  write_text(join(dir, kGemmFile), gemm.str());
  write_text(join(dir, kHopFile), hops.str());
  write_text(join(dir, kMemoryFile), mem.str());
  if (!chrome_timeline_json.empty()) write_text(join(dir, kTimelineFile), chrome_timeline_json);
  // the manifest last: a directory without one is not a trace
  write_text(manifest_file, js.str());
}

Trace read_trace(const std::string& dir) {
  const std::string mf = join(dir, kManifestFile);
  {
    std::error_code ec;
    if (!fs::is_regular_file(mf, ec)) throw TraceError(mf, "missing manifest: not a moehub trace directory");
  }
  json::Value root;
  try {
    root = json::parse(read_text(mf));
  } catch (const std::runtime_error& e) {
    if (dynamic_cast<const TraceError*>(&e)) throw;
    throw TraceError(mf, std::string("not valid JSON: ") + e.what());
  }
  if (root.kind != json::Value::Kind::kObject) throw TraceError(mf, "the manifest must be a JSON object");
  const std::string format = member(root, "format", json::Value::Kind::kString, mf, "manifest")->text;
  if (format != kFormatName)
    throw TraceError(mf, "\"format\" = '" + format + "', expected '" + kFormatName + "'");
  const json::Value& ver = *member(root, "version", json::Value::Kind::kNumber, mf, "manifest");
  if (!ver.integral || ver.number != kFormatVersion)
    throw TraceError(mf, "unsupported version " + fmt_double(ver.number) + " (this reader supports version " +
                             std::to_string(kFormatVersion) + ")");

  Trace t;
  Manifest& m = t.manifest;
  m.version = kFormatVersion;
  m.producer = member(root, "producer", json::Value::Kind::kString, mf, "manifest")->text;
  m.device = member(root, "device", json::Value::Kind::kString, mf, "manifest")->text;
  m.date = member(root, "date", json::Value::Kind::kString, mf, "manifest")->text;
  const long long big = 1LL << 30;
  m.ranks = static_cast<int>(int_member(root, "ranks", 1, big, mf, "manifest"));
  m.hidden = static_cast<int>(int_member(root, "hidden", 1, big, mf, "manifest"));
  m.ffn = static_cast<int>(int_member(root, "ffn", 1, big, mf, "manifest"));
  m.experts = static_cast<int>(int_member(root, "experts", 1, big, mf, "manifest"));
  m.top_k = static_cast<int>(int_member(root, "top_k", 1, m.experts, mf, "manifest"));
  if (const json::Value* extra = root.find("extra")) {
    if (extra->kind != json::Value::Kind::kObject) throw TraceError(mf, "\"extra\" must be an object");
    for (const auto& [key, value] : extra->members) {
      if (value.kind != json::Value::Kind::kString)
        throw TraceError(mf, "\"extra\": \"" + key + "\" must be a string, found " + json::kind_name(value.kind));
      m.extra[key] = value.text;
    }
  }
  validate_manifest(m, mf);

  const json::Value& files = *member(root, "files", json::Value::Kind::kObject, mf, "manifest");
  const json::Value& routing = *member(files, "routing", json::Value::Kind::kArray, mf, "files");
  if (static_cast<long long>(routing.items.size()) != m.ranks)
    throw TraceError(mf, "rank count mismatch: \"ranks\" = " + std::to_string(m.ranks) + " but \"files\".\"routing\" has " +
                             std::to_string(routing.items.size()) + " entries");
  for (int r = 0; r < m.ranks; ++r) {
    const json::Value& e = routing.items[static_cast<std::size_t>(r)];
    const std::string where = "files.routing[" + std::to_string(r) + "]";
    if (e.kind != json::Value::Kind::kObject) throw TraceError(mf, where + " must be an object");
    RankRouting rr;
    rr.rank = static_cast<int>(int_member(e, "rank", r, r, mf, where));
    rr.tokens = int_member(e, "tokens", 0, 1LL << 40, mf, where);
    rr.top_k = m.top_k;
    const std::string ids_path = join(dir, rel_path(e, "topk_ids", mf, where));
    const std::string w_path = join(dir, rel_path(e, "topk_weights", mf, where));
    require_file(ids_path, mf);
    require_file(w_path, mf);
    const std::vector<std::int64_t> shape = {rr.tokens, rr.top_k};
    rr.topk_ids = read_npy<std::int32_t>(ids_path, shape).data;
    rr.topk_weights = read_npy<float>(w_path, shape).data;
    validate_routing(rr, r, m, ids_path, w_path, mf);
    t.routing.push_back(std::move(rr));
  }

  const std::string gemm_path = join(dir, rel_path(files, "gemm", mf, "files"));
  const std::string hop_path = join(dir, rel_path(files, "hops", mf, "files"));
  const std::string mem_path = join(dir, rel_path(files, "memory", mf, "files"));
  std::string timeline_path;
  if (files.find("timeline")) timeline_path = join(dir, rel_path(files, "timeline", mf, "files"));
  for (const std::string& p : {gemm_path, hop_path, mem_path, timeline_path})
    if (!p.empty()) require_file(p, mf);

  for (const CsvRow& row : read_csv(gemm_path, kGemmHeader)) {
    const auto& f = row.fields;
    const std::size_t ln = row.line;
    GemmTiming g;
    g.m = parse_int(f[0], gemm_path, ln, "m");
    g.n = parse_int(f[1], gemm_path, ln, "n");
    g.k = parse_int(f[2], gemm_path, ln, "k");
    g.groups = to_int(parse_int(f[3], gemm_path, ln, "groups"), gemm_path, ln, "groups");
    g.impl = f[4];
    g.time_us = parse_double(f[5], gemm_path, ln, "time_us");
    g.tflops = parse_double(f[6], gemm_path, ln, "tflops");
    validate_gemm(g, gemm_path, "line " + std::to_string(ln));
    t.gemm.push_back(std::move(g));
  }
  for (const CsvRow& row : read_csv(hop_path, kHopHeader)) {
    const auto& f = row.fields;
    const std::size_t ln = row.line;
    HopTiming h;
    h.rank = to_int(parse_int(f[0], hop_path, ln, "rank"), hop_path, ln, "rank");
    h.pass = f[1];
    h.mode = f[2];
    h.hop = to_int(parse_int(f[3], hop_path, ln, "hop"), hop_path, ln, "hop");
    h.compute_us = parse_double(f[4], hop_path, ln, "compute_us");
    h.comm_us = parse_double(f[5], hop_path, ln, "comm_us");
    h.hop_us = parse_double(f[6], hop_path, ln, "hop_us");
    validate_hop(h, m.ranks, hop_path, "line " + std::to_string(ln));
    t.hops.push_back(std::move(h));
  }
  for (const CsvRow& row : read_csv(mem_path, kMemoryHeader)) {
    const auto& f = row.fields;
    const std::size_t ln = row.line;
    MemorySample s;
    s.rank = to_int(parse_int(f[0], mem_path, ln, "rank"), mem_path, ln, "rank");
    s.t_us = parse_double(f[1], mem_path, ln, "t_us");
    s.bytes_in_use = parse_int(f[2], mem_path, ln, "bytes_in_use");
    s.peak_bytes = parse_int(f[3], mem_path, ln, "peak_bytes");
    validate_memory(s, m.ranks, mem_path, "line " + std::to_string(ln));
    t.memory.push_back(s);
  }
  if (!timeline_path.empty()) {
    validate_timeline(read_text(timeline_path), timeline_path);
    t.has_timeline = true;
  }
  return t;
}

}  // namespace moehub::trace
