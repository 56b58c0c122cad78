// .npy reader and writer (format 1.0, little-endian '<i4' / '<f4' / '<f8', C order).
#include "trace/npy.hpp"

#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <type_traits>

namespace moehub::trace {

TraceError::TraceError(std::string file, const std::string& msg)
    : std::runtime_error(file + ": " + msg), file_(std::move(file)) {}
const std::string& TraceError::file() const { return file_; }

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicLen = 6;

bool host_is_little_endian() {
  const std::uint16_t probe = 1;
  unsigned char first = 0;
  std::memcpy(&first, &probe, 1);
  return first == 1;
}

template <typename T> NpyDtype dtype_of();
template <> NpyDtype dtype_of<std::int32_t>() { return NpyDtype::kInt32; }
template <> NpyDtype dtype_of<float>() { return NpyDtype::kFloat32; }
template <> NpyDtype dtype_of<double>() { return NpyDtype::kFloat64; }

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

// Number of elements, or throws when a dimension is negative or the product overflows.
std::size_t element_count(const std::string& path, const std::vector<std::int64_t>& shape) {
  std::size_t n = 1;
  for (std::int64_t dim : shape) {
    if (dim < 0) throw TraceError(path, "negative dimension in shape " + shape_text(shape));
    const auto udim = static_cast<std::size_t>(dim);
    if (udim != 0 && n > std::numeric_limits<std::size_t>::max() / 8 / udim)
      throw TraceError(path, "shape " + shape_text(shape) + " is too large");
    n *= udim;
  }
  return n;
}

// Parser of the header's Python dict literal, e.g.
// {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
class HeaderParser {
 public:
  HeaderParser(const std::string& path, const std::string& text) : path_(path), s_(text) {}

  void parse(std::string& descr, bool& fortran, std::vector<std::int64_t>& shape) {
    bool have_descr = false, have_fortran = false, have_shape = false;
    expect('{');
    while (true) {
      skip();
      if (peek() == '}') { ++i_; break; }
      const std::string key = quoted();
      expect(':');
      skip();
      if (key == "descr") { descr = quoted(); have_descr = true; }
      else if (key == "fortran_order") { fortran = boolean(); have_fortran = true; }
      else if (key == "shape") { shape = tuple(); have_shape = true; }
      else fail("unexpected key '" + key + "' in the header");
      skip();
      if (peek() == ',') { ++i_; continue; }
      expect('}');
      break;
    }
    if (!have_descr || !have_fortran || !have_shape)
      fail("header lacks one of 'descr', 'fortran_order', 'shape'");
  }

 private:
  [[noreturn]] void fail(const std::string& what) { throw TraceError(path_, "bad .npy header: " + what); }
  void skip() { while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t')) ++i_; }
  char peek() { return i_ < s_.size() ? s_[i_] : '\0'; }
  void expect(char c) {
    skip();
    if (peek() != c) fail(std::string("expected '") + c + "' at offset " + std::to_string(i_));
    ++i_;
  }
  std::string quoted() {
    skip();
    const char q = peek();
    if (q != '\'' && q != '"') fail("expected a quoted string at offset " + std::to_string(i_));
    const std::size_t end = s_.find(q, i_ + 1);
    if (end == std::string::npos) fail("unterminated string");
    std::string out = s_.substr(i_ + 1, end - i_ - 1);
    i_ = end + 1;
    return out;
  }
  bool boolean() {
    if (s_.compare(i_, 4, "True") == 0) { i_ += 4; return true; }
    if (s_.compare(i_, 5, "False") == 0) { i_ += 5; return false; }
    fail("fortran_order must be True or False");
  }
  std::vector<std::int64_t> tuple() {
    std::vector<std::int64_t> out;
    expect('(');
    while (true) {
      skip();
      if (peek() == ')') { ++i_; return out; }
      if (peek() < '0' || peek() > '9') fail("shape must be a tuple of non-negative integers");
      std::int64_t v = 0;
      while (peek() >= '0' && peek() <= '9') {
        if (v > (std::numeric_limits<std::int64_t>::max() - 9) / 10) fail("shape dimension too large");
        v = v * 10 + (peek() - '0');
        ++i_;
      }
      out.push_back(v);
      skip();
      if (peek() == ',') { ++i_; continue; }
      expect(')');
      return out;
    }
  }

  const std::string& path_;
  const std::string& s_;
  std::size_t i_ = 0;
};

NpyHeader parse_header(std::istream& in, const std::string& path) {
  if (!host_is_little_endian()) throw TraceError(path, ".npy support needs a little-endian host");
  char magic[kMagicLen] = {};
  in.read(magic, static_cast<std::streamsize>(kMagicLen));
  if (in.gcount() != static_cast<std::streamsize>(kMagicLen) || std::memcmp(magic, kMagic, kMagicLen) != 0)
    throw TraceError(path, "bad magic: not a .npy file (expected \\x93NUMPY)");
  unsigned char ver[2] = {};
  in.read(reinterpret_cast<char*>(ver), 2);
  if (in.gcount() != 2) throw TraceError(path, "truncated .npy header (no version)");
  if (ver[0] != 1 || ver[1] != 0)
    throw TraceError(path, "unsupported .npy format version " + std::to_string(ver[0]) + "." +
                               std::to_string(ver[1]) + " (supported: 1.0)");
  unsigned char len_le[2] = {};
  in.read(reinterpret_cast<char*>(len_le), 2);
  if (in.gcount() != 2) throw TraceError(path, "truncated .npy header (no header length)");
  const std::size_t header_len = static_cast<std::size_t>(len_le[0]) | (static_cast<std::size_t>(len_le[1]) << 8);
  std::string text(header_len, '\0');
  in.read(text.data(), static_cast<std::streamsize>(header_len));
  if (static_cast<std::size_t>(in.gcount()) != header_len)
    throw TraceError(path, "truncated .npy header (" + std::to_string(in.gcount()) + " of " +
                               std::to_string(header_len) + " header bytes)");
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '\0')) text.pop_back();
  std::string descr;
  bool fortran = false;
  NpyHeader h{};
  HeaderParser(path, text).parse(descr, fortran, h.shape);
  if (descr == "<i4") h.dtype = NpyDtype::kInt32;
  else if (descr == "<f4") h.dtype = NpyDtype::kFloat32;
  else if (descr == "<f8") h.dtype = NpyDtype::kFloat64;
  else throw TraceError(path, "unsupported dtype '" + descr + "' (supported: '<i4', '<f4', '<f8')");
  if (fortran) throw TraceError(path, "fortran_order True is not supported (C order only)");
  element_count(path, h.shape);
  h.data_offset = kMagicLen + 4 + header_len;
  return h;
}

}  // namespace

const char* npy_descr(NpyDtype t) {
  switch (t) {
    case NpyDtype::kInt32: return "<i4";
    case NpyDtype::kFloat32: return "<f4";
    case NpyDtype::kFloat64: return "<f8";
  }
  return "?";
}

template <typename T>
void write_npy(const std::string& path, const std::vector<std::int64_t>& shape, const T* data,
               std::size_t count) {
  static_assert(std::is_same_v<T, std::int32_t> || std::is_same_v<T, float> || std::is_same_v<T, double>,
                "write_npy supports std::int32_t, float and double");
  if (!host_is_little_endian()) throw TraceError(path, ".npy support needs a little-endian host");
  const std::size_t n = element_count(path, shape);
  if (n != count)
    throw TraceError(path, "shape " + shape_text(shape) + " holds " + std::to_string(n) +
                               " elements but " + std::to_string(count) + " were given");
  std::string header = std::string("{'descr': '") + npy_descr(dtype_of<T>()) +
                       "', 'fortran_order': False, 'shape': " + shape_text(shape) + ", }";
  // pad with spaces so that magic + version + length + header (ending in '\n') is a multiple of 64
  const std::size_t unpadded = kMagicLen + 4 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  if (header.size() > 65535) throw TraceError(path, "shape too long for a format 1.0 header");
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw TraceError(path, "cannot open for writing");
  out.write(kMagic, static_cast<std::streamsize>(kMagicLen));
  const char ver_len[4] = {1, 0, static_cast<char>(header.size() & 0xff), static_cast<char>(header.size() >> 8)};
  out.write(ver_len, 4);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  if (count) out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(count * sizeof(T)));
  out.close();
  if (!out) throw TraceError(path, "write failed");
}

NpyHeader read_npy_header(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TraceError(path, "cannot open (missing file?)");
  return parse_header(in, path);
}

template <typename T> NpyArray<T> read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TraceError(path, "cannot open (missing file?)");
  const NpyHeader h = parse_header(in, path);
  if (h.dtype != dtype_of<T>())
    throw TraceError(path, std::string("dtype is '") + npy_descr(h.dtype) + "', expected '" +
                               npy_descr(dtype_of<T>()) + "'");
  NpyArray<T> arr;
  arr.shape = h.shape;
  const std::size_t n = element_count(path, h.shape);
  const std::size_t want = n * sizeof(T);
  // compare with the file size before allocating: a corrupt shape must not allocate
  const std::streampos data_start = in.tellg();
  in.seekg(0, std::ios::end);
  const std::streamoff have_off = in.tellg() - data_start;
  in.seekg(data_start);
  const auto have = static_cast<std::size_t>(have_off < 0 ? 0 : have_off);
  if (have < want)
    throw TraceError(path, "truncated data: shape " + shape_text(h.shape) + " needs " +
                               std::to_string(want) + " bytes, file has " + std::to_string(have));
  if (have > want)
    throw TraceError(path, "trailing bytes: shape " + shape_text(h.shape) + " needs " + std::to_string(want) +
                               " data bytes, file has " + std::to_string(have));
  arr.data.resize(n);
  if (want) {
    in.read(reinterpret_cast<char*>(arr.data.data()), static_cast<std::streamsize>(want));
    if (static_cast<std::size_t>(in.gcount()) != want) throw TraceError(path, "read failed");
  }
  return arr;
}

template <typename T>
NpyArray<T> read_npy(const std::string& path, const std::vector<std::int64_t>& expected_shape) {
  NpyArray<T> arr = read_npy<T>(path);
  if (arr.shape != expected_shape)
    throw TraceError(path, "shape " + shape_text(arr.shape) + ", expected " + shape_text(expected_shape));
  return arr;
}

template void write_npy<std::int32_t>(const std::string&, const std::vector<std::int64_t>&, const std::int32_t*, std::size_t);
template void write_npy<float>(const std::string&, const std::vector<std::int64_t>&, const float*, std::size_t);
template void write_npy<double>(const std::string&, const std::vector<std::int64_t>&, const double*, std::size_t);
template NpyArray<std::int32_t> read_npy<std::int32_t>(const std::string&);
template NpyArray<float> read_npy<float>(const std::string&);
template NpyArray<double> read_npy<double>(const std::string&);
template NpyArray<std::int32_t> read_npy<std::int32_t>(const std::string&, const std::vector<std::int64_t>&);
template NpyArray<float> read_npy<float>(const std::string&, const std::vector<std::int64_t>&);
template NpyArray<double> read_npy<double>(const std::string&, const std::vector<std::int64_t>&);

}  // namespace moehub::trace
