// The conventional hub's functions and the factory that selects them.
#include <gtest/gtest.h>

#include <stdexcept>

#include "golden/address_centric.hpp"
#include "golden/hub_functions.hpp"

namespace moehub::golden {
namespace {

StoreRequest store(std::int32_t dst, std::uint64_t addr, std::int64_t row = 0) {
  StoreRequest s;
  s.dst_gpu = dst;
  s.address = addr;
  s.row_id = row;
  s.bytes = 128;
  s.mask = ByteMask::range(0, 128);
  return s;
}

TEST(ByteMask, RangeCountAndOverlap) {
  const ByteMask a = ByteMask::range(0, 64), b = ByteMask::range(64, 64), c = ByteMask::range(60, 8);
  EXPECT_EQ(a.count(), 64u);
  EXPECT_FALSE(a.overlaps(b));
  EXPECT_TRUE(a.overlaps(c));
  EXPECT_TRUE(b.overlaps(c));
  ByteMask m = a;
  m |= b;
  EXPECT_TRUE(m.full());
  EXPECT_EQ(m.count(), 128u);
  EXPECT_EQ(ByteMask::range(0, 127).count(), 127u);
  EXPECT_EQ(ByteMask::range(127, 1).count(), 1u);
  EXPECT_EQ(c.count(), 8u);
  EXPECT_TRUE(ByteMask().empty());
  EXPECT_EQ(ByteMask().count(), 0u);
  EXPECT_THROW(ByteMask::range(100, 29), std::invalid_argument);
}

TEST(AddressCentric, IngressKeepsTheAddressAndRejectsRowStores) {
  AddressCentricIngress in;
  const auto r = in.on_write(store(1, 0x4000), 10);
  EXPECT_TRUE(r.accepted);
  EXPECT_EQ(r.address, 0x4000u);
  StoreRequest rs = store(1, 0);
  rs.op = Opcode::kRowStore;
  EXPECT_THROW(in.on_write(rs, 20), std::logic_error);
}

TEST(AddressCentric, EgressIsAFifoInIssueOrderWhateverTheCongestion) {
  // the default (hub.fifo_passes_congested: false): a store to a congested
  // peer holds back the stores behind it
  AddressCentricEgress eg(2, false);
  eg.accept(store(1, 0x100), 0);
  eg.accept(store(2, 0x200), 1);
  EXPECT_FALSE(eg.can_accept(store(3, 0), 2));
  EgressPick p;
  std::vector<std::uint8_t> congested(4, 0);
  congested[1] = 1;
  ASSERT_TRUE(eg.pick(3, congested, p));
  EXPECT_EQ(p.store.address, 0x100u);
  congested[2] = 1;  // all congested: the FIFO still hands out its head
  ASSERT_TRUE(eg.pick(4, congested, p));
  EXPECT_EQ(p.store.address, 0x200u);
  EXPECT_FALSE(eg.pick(5, congested, p));
  EXPECT_EQ(eg.occupancy(), 0u);
}

TEST(AddressCentric, EgressThatPassesCongestedPeersSkipsThemAndFills) {
  AddressCentricEgress eg(3, true);
  EXPECT_TRUE(eg.can_accept(store(1, 0), 0));
  eg.accept(store(1, 0x100), 0);
  eg.accept(store(2, 0x200), 1);
  eg.accept(store(1, 0x300), 2);
  EXPECT_FALSE(eg.can_accept(store(3, 0), 3));
  EXPECT_THROW(eg.accept(store(3, 0), 3), std::logic_error);
  EXPECT_EQ(eg.next_event(3), kNever);

  EgressPick p;
  std::vector<std::uint8_t> congested(4, 0);
  congested[1] = 1;  // GPU 1's ports are busy: the store to GPU 2 overtakes
  ASSERT_TRUE(eg.pick(4, congested, p));
  EXPECT_EQ(p.store.address, 0x200u);
  congested[2] = 1;  // every held store is for a congested peer: the data is held
  EXPECT_FALSE(eg.pick(5, congested, p));
  EXPECT_EQ(eg.occupancy(), 2u);
  congested[1] = 0;
  ASSERT_TRUE(eg.pick(5, congested, p));
  EXPECT_EQ(p.store.address, 0x100u);
  ASSERT_TRUE(eg.pick(6, congested, p));
  EXPECT_EQ(p.store.address, 0x300u);
  EXPECT_FALSE(eg.pick(7, congested, p));
  EXPECT_EQ(eg.occupancy(), 0u);
}

TEST(HubFunctions, FactoryBuildsTheNamedImplementation) {
  HubParams params;
  params.write_buffer_entries = 2;
  auto f = make_hub_functions("address-centric", params);
  ASSERT_TRUE(f.ingress && f.egress && f.completion);
  f.egress->accept(store(1, 0), 0);
  f.egress->accept(store(1, 0), 0);
  EXPECT_FALSE(f.egress->can_accept(store(1, 0), 0));
  std::vector<ReadySignal> ready;
  f.completion->on_write_complete(store(1, 0), 5, ready);
  EXPECT_TRUE(ready.empty());
  // fifo_passes_congested reaches the FIFO: the store to an uncongested GPU 2
  // passes the one to GPU 1 only with it
  for (const bool passes : {false, true}) {
    params.fifo_passes_congested = passes;
    auto g = make_hub_functions("address-centric", params);
    g.egress->accept(store(1, 0x100), 0);
    g.egress->accept(store(2, 0x200), 0);
    EgressPick p;
    ASSERT_TRUE(g.egress->pick(1, {0, 1, 0}, p));
    EXPECT_EQ(p.store.address, passes ? 0x200u : 0x100u);
  }
  EXPECT_THROW(make_hub_functions("moehub-typo", params), std::invalid_argument);
  EXPECT_EQ(hub_implementations().front(), "address-centric");
}

}  // namespace
}  // namespace moehub::golden
