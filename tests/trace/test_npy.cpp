// .npy writer/reader: bit-exact round trips and the errors of malformed files.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "trace/npy.hpp"

namespace {

namespace fs = std::filesystem;
using moehub::trace::TraceError;

fs::path scratch() {
  const auto* info = testing::UnitTest::GetInstance()->current_test_info();
  fs::path dir = fs::path(MOEHUB_BINARY_DIR) / "test-scratch" / "npy" / info->name();
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string bytes_of(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void put(const fs::path& p, const std::string& b) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << b;
}

// Runs f, expects a TraceError whose file is `file` and whose message contains `part`.
template <typename F>
void expect_error(F f, const fs::path& file, const std::string& part) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one mentioning '" << part << "'";
  } catch (const TraceError& e) {
    EXPECT_EQ(e.file(), file.string());
    EXPECT_NE(std::string(e.what()).find(file.string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(Npy, RoundTripIsBitExactForEveryDtype) {
  const fs::path dir = scratch();
  const std::vector<std::int32_t> ints = {0, -1, 2147483647, -2147483647 - 1, 42, 7};
  const std::vector<float> floats = {0.1f, -0.0f, std::numeric_limits<float>::denorm_min(),
                                     std::numeric_limits<float>::infinity(), 3.4e38f, -1.5f};
  const std::vector<double> doubles = {0.1, 1.0 / 3.0, -0.0, 5e-324, 1.7976931348623157e308,
                                       std::numeric_limits<double>::quiet_NaN()};
  moehub::trace::write_npy((dir / "i.npy").string(), {2, 3}, ints);
  moehub::trace::write_npy((dir / "f.npy").string(), {3, 2}, floats);
  moehub::trace::write_npy((dir / "d.npy").string(), {1, 2, 3}, doubles);
  const auto i = moehub::trace::read_npy<std::int32_t>((dir / "i.npy").string());
  const auto f = moehub::trace::read_npy<float>((dir / "f.npy").string(), {3, 2});
  const auto d = moehub::trace::read_npy<double>((dir / "d.npy").string());
  EXPECT_EQ(i.shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(i.data, ints);
  ASSERT_EQ(f.data.size(), floats.size());
  EXPECT_EQ(std::memcmp(f.data.data(), floats.data(), floats.size() * sizeof(float)), 0);
  EXPECT_EQ(d.shape, (std::vector<std::int64_t>{1, 2, 3}));
  ASSERT_EQ(d.data.size(), doubles.size());
  EXPECT_EQ(std::memcmp(d.data.data(), doubles.data(), doubles.size() * sizeof(double)), 0);
}

TEST(Npy, HeaderIsNumpyFormatOneAlignedTo64) {
  const fs::path dir = scratch();
  moehub::trace::write_npy((dir / "a.npy").string(), {4}, std::vector<float>{1, 2, 3, 4});
  const std::string b = bytes_of(dir / "a.npy");
  ASSERT_GE(b.size(), 10u);
  EXPECT_EQ(b.substr(0, 6), std::string("\x93NUMPY"));
  EXPECT_EQ(b[6], 1);
  EXPECT_EQ(b[7], 0);
  const std::size_t hlen = static_cast<unsigned char>(b[8]) | (static_cast<std::size_t>(static_cast<unsigned char>(b[9])) << 8);
  EXPECT_EQ((10 + hlen) % 64, 0u);
  const std::string header = b.substr(10, hlen);
  EXPECT_EQ(header.rfind("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", 0), 0u) << header;
  EXPECT_EQ(header.back(), '\n');
  EXPECT_EQ(b.size(), 10 + hlen + 16);
}

TEST(Npy, ReadsForeignHeadersWith16ByteAlignmentAndScalarAndEmptyShapes) {
  const fs::path dir = scratch();
  // as older NumPy wrote it: header padded to a multiple of 16, keys in any order
  std::string header = "{'shape': (2,), 'fortran_order': False, 'descr': '<i4'}";
  header.append((16 - (10 + header.size() + 1) % 16) % 16, ' ');
  header += '\n';
  std::string file = std::string("\x93NUMPY\x01\x00", 8);
  file += static_cast<char>(header.size());
  file += '\0';
  file += header;
  const std::int32_t vals[2] = {5, -6};
  file.append(reinterpret_cast<const char*>(vals), sizeof vals);
  put(dir / "old.npy", file);
  const auto a = moehub::trace::read_npy<std::int32_t>((dir / "old.npy").string(), {2});
  EXPECT_EQ(a.data, (std::vector<std::int32_t>{5, -6}));

  moehub::trace::write_npy((dir / "scalar.npy").string(), {}, std::vector<double>{2.5});
  const auto s = moehub::trace::read_npy<double>((dir / "scalar.npy").string());
  EXPECT_TRUE(s.shape.empty());
  EXPECT_EQ(s.data, std::vector<double>{2.5});
  moehub::trace::write_npy((dir / "empty.npy").string(), {0, 8}, std::vector<std::int32_t>{});
  const auto e = moehub::trace::read_npy<std::int32_t>((dir / "empty.npy").string(), {0, 8});
  EXPECT_TRUE(e.data.empty());
}

TEST(Npy, RejectsMalformedFilesNamingThem) {
  const fs::path dir = scratch();
  const fs::path good = dir / "good.npy";
  moehub::trace::write_npy(good.string(), {2, 2}, std::vector<float>{1, 2, 3, 4});
  const std::string b = bytes_of(good);

  const fs::path p = dir / "bad.npy";
  auto read_f = [&] { moehub::trace::read_npy<float>(p.string()); };
  put(p, "\x92" + b.substr(1));
  expect_error(read_f, p, "bad magic");
  put(p, b.substr(0, b.size() - 3));
  expect_error(read_f, p, "truncated data");
  put(p, b + "xx");
  expect_error(read_f, p, "trailing bytes");  // two bytes too many
  put(p, b.substr(0, 20));
  expect_error(read_f, p, "truncated .npy header");
  std::string v2 = b;
  v2[6] = 2;
  put(p, v2);
  expect_error(read_f, p, "unsupported .npy format version 2.0");
  std::string fortran = b;
  fortran.replace(fortran.find("False"), 5, "True ");
  put(p, fortran);
  expect_error(read_f, p, "fortran_order");
  std::string odd_dtype = b;
  odd_dtype.replace(odd_dtype.find("<f4"), 3, ">f4");
  put(p, odd_dtype);
  expect_error(read_f, p, "unsupported dtype '>f4'");
  std::string garbage = b;
  garbage.replace(garbage.find("'shape'"), 7, "'shope'");
  put(p, garbage);
  expect_error(read_f, p, "bad .npy header");

  expect_error([&] { moehub::trace::read_npy<std::int32_t>(good.string()); }, good, "dtype is '<f4', expected '<i4'");
  expect_error([&] { moehub::trace::read_npy<double>(good.string()); }, good, "expected '<f8'");
  expect_error([&] { moehub::trace::read_npy<float>(good.string(), {4}); }, good, "shape (2, 2), expected (4,)");
  const fs::path missing = dir / "missing.npy";
  expect_error([&] { moehub::trace::read_npy<float>(missing.string()); }, missing, "cannot open");
  expect_error([&] { moehub::trace::write_npy(p.string(), {3}, std::vector<float>{1, 2}); }, p, "holds 3 elements");
}

}  // namespace

namespace {

TEST(Npy, CorruptHeadersNeverCrashOrAllocateBlindly) {
  const fs::path dir = scratch();
  const fs::path good = dir / "good.npy";
  moehub::trace::write_npy(good.string(), {3, 2}, std::vector<std::int32_t>{1, 2, 3, 4, 5, 6});
  const std::string b = bytes_of(good);
  const fs::path p = dir / "bad.npy";
  // an absurd shape in a small file is a truncation error, not an allocation
  std::string huge = b;
  huge.replace(huge.find("(3, 2)"), 6, "(99999999999, 99999)");
  put(p, huge);
  expect_error([&] { moehub::trace::read_npy<std::int32_t>(p.string()); }, p, "truncated data");
  // every truncation and every single-byte change either reads or throws TraceError
  int rejected = 0;
  for (std::size_t len = 0; len < b.size(); ++len) {
    put(p, b.substr(0, len));
    EXPECT_THROW(moehub::trace::read_npy<std::int32_t>(p.string()), TraceError) << "length " << len;
  }
  for (std::size_t i = 0; i < b.size(); ++i) {
    for (const char c : {'\0', '9', ')', '\xff'}) {
      std::string m = b;
      m[i] = c;
      put(p, m);
      try {
        moehub::trace::read_npy<std::int32_t>(p.string());
      } catch (const TraceError&) {
        ++rejected;
      }
    }
  }
  EXPECT_GT(rejected, 0);
}

}  // namespace
