// The RPM's merge rule (golden/merge_rule.hpp), which the behavioural RPM, the
// RPM co-simulation adapter and the RTL scoreboard's pool share.
#include <gtest/gtest.h>

#include <stdexcept>

#include "golden/merge_rule.hpp"

namespace {

using moehub::golden::ByteMask;
using moehub::golden::line_mask;
using moehub::golden::merge_key;
using moehub::golden::merge_line;
using moehub::golden::mergeable;
using moehub::golden::Opcode;
using moehub::golden::StoreRequest;

StoreRequest row_store(std::uint32_t malloc_id, std::int64_t row, std::uint32_t offset, std::uint32_t bytes) {
  StoreRequest s;
  s.op = Opcode::kRowStore;
  s.malloc_id = malloc_id;
  s.row_id = row;
  s.row_offset = offset;
  s.bytes = bytes;
  return s;
}

StoreRequest plain_store(std::uint64_t address, std::uint32_t bytes, std::int64_t row) {
  StoreRequest s;
  s.op = Opcode::kStore;
  s.address = address;
  s.bytes = bytes;
  s.row_id = row;
  return s;
}

TEST(MergeRule, RowStoresOfOneLineOfOneRowMerge) {
  const StoreRequest a = row_store(2, 7, 256, 32);
  EXPECT_EQ(merge_key(a), merge_key(row_store(2, 7, 288, 32)));      // the same line, another quarter
  EXPECT_NE(merge_key(a), merge_key(row_store(2, 7, 384, 32)));      // the next line
  EXPECT_NE(merge_key(a), merge_key(row_store(2, 8, 256, 32)));      // another row
  EXPECT_NE(merge_key(a), merge_key(row_store(3, 7, 256, 32)));      // another region
  StoreRequest nop = row_store(2, 7, 256, 32);
  nop.op = Opcode::kRowStoreNop;
  EXPECT_NE(merge_key(a), merge_key(nop));                           // another opcode
  StoreRequest low = a;
  low.priority = false;
  EXPECT_NE(merge_key(a), merge_key(low));                           // another priority
  EXPECT_EQ(merge_line(a), 2u);
}

TEST(MergeRule, PlainStoresMergeByAddressWhateverTheirRow) {
  // a plain store's RowID is bookkeeping: its line is that of its address
  EXPECT_EQ(merge_key(plain_store(4096 + 64, 64, 1)), merge_key(plain_store(4096, 64, 2)));
  EXPECT_NE(merge_key(plain_store(4096, 64, 1)), merge_key(plain_store(4096 + 128, 64, 1)));
  EXPECT_EQ(merge_line(plain_store(4096 + 127, 1, 0)), 32u);
}

TEST(MergeRule, FlagWritesNeverMerge) {
  StoreRequest f = plain_store(64, 8, 0);
  f.op = Opcode::kFlagWrite;
  EXPECT_FALSE(mergeable(f));
  EXPECT_TRUE(mergeable(plain_store(64, 8, 0)));
  EXPECT_TRUE(mergeable(row_store(0, 0, 0, 128)));
}

TEST(MergeRule, EqualKeysHashEqually) {
  EXPECT_EQ(merge_key(row_store(1, 5, 0, 32)).hash(), merge_key(row_store(1, 5, 96, 32)).hash());
  EXPECT_EQ(merge_key(plain_store(640, 8, 1)).hash(), merge_key(plain_store(700, 8, 9)).hash());
}

TEST(MergeRule, LineMaskIsTheStoresBytesOrItsOwnMask) {
  EXPECT_EQ(line_mask(row_store(0, 0, 160, 32), "t"), ByteMask::range(32, 32));
  EXPECT_EQ(line_mask(plain_store(130, 4, 0), "t"), ByteMask::range(2, 4));
  StoreRequest m = plain_store(0, 0, 0);
  m.mask = ByteMask::range(8, 8);
  EXPECT_EQ(line_mask(m, "t"), ByteMask::range(8, 8));  // a set mask is taken as it is
  EXPECT_TRUE(line_mask(row_store(0, 0, 0, 128), "t").full());
}

TEST(MergeRule, StoresThatCrossTheirLineOrWriteNothingAreRefused) {
  try {
    line_mask(row_store(0, 0, 96, 64), "RPM");
    FAIL() << "a store across its line was taken";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("RPM: store of 64 bytes at offset 96"), std::string::npos) << e.what();
  }
  EXPECT_THROW(line_mask(plain_store(0, 0, 0), "RPM"), std::invalid_argument);
}

}  // namespace
