// libFuzzer target: the .npy reader of the trace library.
//
// Each input is written to a file (the reader takes paths) and read as an
// int32, a float32 and a float64 array. The only acceptable failure is a
// TraceError; an array that is read must hold exactly product(shape) elements.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "trace/npy.hpp"

namespace {

std::string path_for_this_process() {
  return "/tmp/moehub-fuzz-npy-" + std::to_string(getpid()) + ".npy";
}

template <typename T>
void read_as(const std::string& path) {
  try {
    const moehub::trace::NpyArray<T> a = moehub::trace::read_npy<T>(path);
    std::int64_t n = 1;
    for (const std::int64_t d : a.shape) n *= d;
    if (n < 0 || static_cast<std::uint64_t>(n) != a.data.size()) {
      std::fprintf(stderr, "fuzz_npy: shape holds %lld elements, data %zu\n", static_cast<long long>(n),
                   a.data.size());
      std::abort();
    }
  } catch (const moehub::trace::TraceError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = path_for_this_process();
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    (void)moehub::trace::read_npy_header(path);
  } catch (const moehub::trace::TraceError&) {
  }
  read_as<std::int32_t>(path);
  read_as<float>(path);
  read_as<double>(path);
  return 0;
}
