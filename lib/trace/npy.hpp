// NumPy .npy files (format version 1.0) for the trace library: little-endian '<i4',
// '<f4' and '<f8' arrays in C order, any number of dimensions. Only the subset of the
// format the traces use is read; anything else is rejected with a TraceError that names
// the file and what was wrong (magic, version, header, dtype, order, shape, size).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trace/trace_error.hpp"

namespace moehub::trace {

enum class NpyDtype { kInt32, kFloat32, kFloat64 };
const char* npy_descr(NpyDtype);  ///< "<i4", "<f4", "<f8"

template <typename T> struct NpyArray {
  std::vector<std::int64_t> shape;  ///< C order; empty = scalar
  std::vector<T> data;              ///< product(shape) elements
};

struct NpyHeader {
  NpyDtype dtype;
  std::vector<std::int64_t> shape;
  std::size_t data_offset;  ///< bytes from the start of the file to the data
};

/// Writes data (product(shape) elements) as an .npy file. T is std::int32_t, float or
/// double. Throws TraceError naming the file when the sizes disagree or writing fails.
template <typename T>
void write_npy(const std::string& path, const std::vector<std::int64_t>& shape, const T* data,
               std::size_t count);
template <typename T>
void write_npy(const std::string& path, const std::vector<std::int64_t>& shape,
               const std::vector<T>& data) {
  write_npy<T>(path, shape, data.data(), data.size());
}

/// Reads and checks the header only.
NpyHeader read_npy_header(const std::string& path);

/// Reads an array whose dtype must be T's ('<i4' for std::int32_t, '<f4' for float,
/// '<f8' for double); TraceError on any other dtype, a bad header or truncated data.
template <typename T> NpyArray<T> read_npy(const std::string& path);

/// As read_npy<T>, and the shape must equal expected_shape.
template <typename T>
NpyArray<T> read_npy(const std::string& path, const std::vector<std::int64_t>& expected_shape);

}  // namespace moehub::trace
