// Recorder of failed RTL assertions (tb_assert.hpp): the DPI function that
// rtl/moehub_assert.svh calls from every Verilated model.
#include "tb_assert.hpp"

#include <cstdio>
#include <mutex>
#include <utility>

namespace {

std::mutex& failures_mutex() {
  static std::mutex m;
  return m;
}
std::vector<std::string>& failures() {
  static std::vector<std::string> f;
  return f;
}

}  // namespace

// Called by a Verilated model when an assertion of rtl/moehub_assert.svh
// fails; `where` is its hierarchical name.
extern "C" void moehub_assert_failed(const char* where) {
  const std::string name = where != nullptr ? where : "(unnamed)";
  std::fprintf(stderr, "RTL assertion failed: %s\n", name.c_str());
  const std::lock_guard<std::mutex> lock(failures_mutex());
  failures().push_back(name);
}

namespace moehub::tb {

std::vector<std::string> take_assert_failures() {
  const std::lock_guard<std::mutex> lock(failures_mutex());
  std::vector<std::string> f;
  f.swap(failures());
  return f;
}

}  // namespace moehub::tb
