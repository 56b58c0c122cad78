// Model shapes from configs/models (model_shapes.hpp).
#include "model_shapes.hpp"

#include <dirent.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "errors.hpp"

namespace moehub::gpu {

ModelShape parse_model_shape(const std::string& text, const std::string& source) {
  std::map<std::string, std::string> kv;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    line = line.substr(0, line.find('#'));
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    auto trim = [](std::string s) {
      const auto a = s.find_first_not_of(" \t\r"), b = s.find_last_not_of(" \t\r");
      return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
    };
    kv[trim(line.substr(0, colon))] = trim(line.substr(colon + 1));
  }
  auto integer = [&](const std::string& key, long lo, long hi) {
    const auto it = kv.find(key);
    std::size_t used = 0;
    long v = 0;
    try {
      if (it != kv.end()) v = std::stol(it->second, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (it == kv.end() || used != it->second.size() || v < lo || v > hi)
      throw UsageError(source + ": " + key + " must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                       "]" + (it == kv.end() ? " (missing)" : " (got '" + it->second + "')"));
    return static_cast<int>(v);
  };
  ModelShape m;
  m.name = kv.count("name") ? kv["name"] : source;
  m.hidden = integer("hidden_size", 8, 65536);
  m.ffn = integer("expert_ffn_size", 8, 65536);
  m.experts = integer("num_experts", 1, 1024);
  m.top_k = integer("top_k", 1, m.experts);
  if (m.hidden % 8 || m.ffn % 8)
    throw UsageError(source + ": hidden_size and expert_ffn_size must be multiples of 8 for the expert GEMMs");
  return m;
}

std::string models_dir() {
  if (const char* d = std::getenv("MOEHUB_MODELS_DIR")) return d;
  return MOEHUB_MODELS_DIR;
}

std::vector<std::string> model_names() {
  std::vector<std::string> out;
  if (DIR* d = opendir(models_dir().c_str())) {
    while (const dirent* e = readdir(d)) {
      const std::string f = e->d_name;
      if (f.size() > 5 && f.compare(f.size() - 5, 5, ".yaml") == 0) out.push_back(f.substr(0, f.size() - 5));
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

ModelShape load_model_shape(const std::string& name) {
  const std::string path = models_dir() + "/" + name + ".yaml";
  std::ifstream f(path);
  if (!f) throw UsageError("model '" + name + "': cannot read " + path + " (MOEHUB_MODELS_DIR overrides the folder)");
  std::stringstream ss;
  ss << f.rdbuf();
  return parse_model_shape(ss.str(), path);
}

}  // namespace moehub::gpu
