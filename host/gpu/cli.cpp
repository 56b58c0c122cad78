#include "cli.hpp"

#include <sstream>

namespace moehub::gpu {

Args::Args(int argc, char** argv, int first, const std::set<std::string>& allowed) {
  for (int i = first; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0) throw UsageError("unexpected argument '" + a + "' (options are --key value)");
    std::string key = a.substr(2);
    if (!allowed.count(key)) {
      std::string list;
      for (auto& k : allowed)
        if (k.rfind("fail-", 0) != 0) list += " --" + k;  // hidden test options stay hidden
      throw UsageError("unknown option '" + a + "'; allowed:" + list);
    }
    if (i + 1 >= argc) throw UsageError("option '" + a + "' needs a value");
    kv_[key] = argv[++i];
  }
}

std::string Args::str(const std::string& k, const std::string& def) const {
  auto it = kv_.find(k);
  return it == kv_.end() ? def : it->second;
}

static std::int64_t parse_int(const std::string& k, const std::string& v, std::int64_t lo, std::int64_t hi) {
  std::size_t pos = 0;
  long long x = 0;
  try {
    x = std::stoll(v, &pos);
  } catch (const std::exception&) {
    pos = 0;
  }
  if (pos != v.size() || v.empty() || x < lo || x > hi) {
    std::ostringstream os;
    os << "--" << k << " must be an integer in [" << lo << ", " << hi << "] (got '" << v << "')";
    throw UsageError(os.str());
  }
  return x;
}

std::int64_t Args::integer(const std::string& k, std::int64_t def, std::int64_t lo, std::int64_t hi) const {
  auto it = kv_.find(k);
  if (it == kv_.end()) return def;
  return parse_int(k, it->second, lo, hi);
}

static std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

std::vector<std::int64_t> Args::int_list(const std::string& k, const std::string& def, std::int64_t lo, std::int64_t hi) const {
  std::vector<std::int64_t> out;
  for (auto& p : split(str(k, def))) out.push_back(parse_int(k, p, lo, hi));
  return out;
}

std::vector<std::string> Args::str_list(const std::string& k, const std::string& def, const std::set<std::string>& allowed) const {
  std::vector<std::string> out = split(str(k, def));
  for (auto& p : out) {
    if (!allowed.count(p)) {
      std::string list;
      for (auto& a : allowed) list += " " + a;
      throw UsageError("--" + k + ": '" + p + "' is not one of" + list);
    }
  }
  return out;
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& x : v) out += (out.empty() ? "" : ",") + x;
  return out;
}

std::string join(const std::vector<std::int64_t>& v) {
  std::vector<std::string> s;
  for (auto x : v) s.push_back(std::to_string(x));
  return join(s);
}

}  // namespace moehub::gpu
