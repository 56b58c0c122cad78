// Minimal command-line parsing for moehub-gpu: "--key value" pairs after a subcommand.
// Bad input throws UsageError naming the option and its allowed range (exit code 2).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "errors.hpp"

namespace moehub::gpu {


/// "a,b,c": a list option's values as the user would write them.
std::string join(const std::vector<std::string>& v);
std::string join(const std::vector<std::int64_t>& v);

class Args {
 public:
  Args(int argc, char** argv, int first, const std::set<std::string>& allowed);
  bool has(const std::string& k) const { return kv_.count(k) != 0; }
  std::string str(const std::string& k, const std::string& def) const;
  std::int64_t integer(const std::string& k, std::int64_t def, std::int64_t lo, std::int64_t hi) const;
  std::vector<std::int64_t> int_list(const std::string& k, const std::string& def, std::int64_t lo, std::int64_t hi) const;
  std::vector<std::string> str_list(const std::string& k, const std::string& def, const std::set<std::string>& allowed) const;

 private:
  std::map<std::string, std::string> kv_;
};

}  // namespace moehub::gpu
