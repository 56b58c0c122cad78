// A pool of generic payloads, each with its MoePacketExt attached: the memory
// manager (tlm_mm_interface) of the transactions a hub creates.
//
// A transaction lives from the moment its hub sends it until its last holder
// releases it. A remote write's payload becomes its write response once the
// consumer's memory has it (the consumer's hub turns it round), so it returns
// to the producer's pool when the producer has counted the response; a local
// write's when its memory has it. acquire()/release() as TLM-2.0 prescribes; a
// payload whose reference count drops to zero returns to the pool it came
// from, so that nothing is allocated per packet in the steady state.
#pragma once

#include <tlm>

#include <cassert>
#include <memory>
#include <new>
#include <type_traits>
#include <vector>

#include "common/moe_extension.hpp"

namespace moehub {

/// A generic payload that holds its MoePacketExt as a member (also registered
/// as its extension), so that blocks reach the MoE fields without the
/// extension lookup on every hop. Every transaction of the platform is
/// one of these (PayloadPool makes them), on whole cache lines (5).
class alignas(64) MoePayload : public tlm::tlm_generic_payload {
 public:
  explicit MoePayload(tlm::tlm_mm_interface* mm = nullptr) : tlm::tlm_generic_payload(mm) { set_extension(&fields_); }
  ~MoePayload() override { clear_extension(&fields_); }  // a member, not the payload's to delete
  MoePayload(const MoePayload&) = delete;
  MoePayload& operator=(const MoePayload&) = delete;
  /// The MoE fields: a member at a fixed offset, so that reaching them loads
  /// nothing (a pointer member would cost a dependent load from a cold payload
  /// before the fields' own lines could be fetched).
  MoePacketExt* ext() { return &fields_; }

 private:
  MoePacketExt fields_;
};

/// Asks the cache for every line of a payload that is about to be handled:
/// in flight, a payload waits in a queue while thousands of others are
/// handled, so it is cold by then (a pool's payloads are line-aligned).
/// kForWrite: the lines are about to be written (a payload taken from the pool).
template <bool kForWrite = false>
inline void prefetch_payload(const tlm::tlm_generic_payload* gp) {
  const char* p = reinterpret_cast<const char*>(gp);
  for (std::size_t off = 0; off < sizeof(MoePayload); off += 64) __builtin_prefetch(p + off, kForWrite ? 1 : 0);
}

/// The MoE fields of a platform transaction.
inline MoePacketExt& moe_ext(tlm::tlm_generic_payload& gp) {
  MoePacketExt* e = static_cast<MoePayload&>(gp).ext();
  assert(e == gp.get_extension<MoePacketExt>() && "not a MoePayload");
  return *e;
}

class PayloadPool : public tlm::tlm_mm_interface {
 public:
  PayloadPool() = default;
  PayloadPool(const PayloadPool&) = delete;
  PayloadPool& operator=(const PayloadPool&) = delete;

  /// A payload with reference count 1 (the caller holds it) and a fresh extension.
  MoePayload* allocate() {
    MoePayload* gp;
    if (free_.empty()) {
      // payloads are made in blocks, so that those in flight together lie together
      if (all_.empty() || used_in_block_ == kBlock) {
        all_.push_back(std::unique_ptr<Block>(new Block));  // raw storage: no zeroing (make_unique would)
        used_in_block_ = 0;
      }
      gp = new (&all_.back()->slots[used_in_block_++]) MoePayload(this);
      ++capacity_;
    } else {
      gp = free_.back();
      free_.pop_back();
      // the next allocation takes the next free payload: ask for its lines now,
      // for writing (it is usually cold: freed when its packet's trip ended)
      if (!free_.empty()) prefetch_payload<true>(free_.back());
      *gp->ext() = MoePacketExt{};
    }
    gp->set_address(0);
    gp->set_data_ptr(nullptr);
    gp->set_data_length(0);
    gp->set_streaming_width(0);
    gp->set_byte_enable_ptr(nullptr);
    gp->set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    gp->acquire();
    ++live_;
    return gp;
  }

  void free(tlm::tlm_generic_payload* gp) override {
    free_.push_back(static_cast<MoePayload*>(gp));
    --live_;
  }

  /// Payloads handed out and not yet returned.
  std::size_t live() const { return live_; }
  std::size_t capacity() const { return capacity_; }

  ~PayloadPool() override {
    for (std::size_t b = 0; b < all_.size(); ++b) {
      const std::size_t n = b + 1 == all_.size() ? used_in_block_ : kBlock;
      for (std::size_t i = 0; i < n; ++i) std::launder(reinterpret_cast<MoePayload*>(&all_[b]->slots[i]))->~MoePayload();
    }
  }

 private:
  static constexpr std::size_t kBlock = 256;
  struct alignas(64) Block {
    std::aligned_storage_t<sizeof(MoePayload), alignof(MoePayload)> slots[kBlock];
  };
  std::vector<std::unique_ptr<Block>> all_;
  std::size_t used_in_block_ = 0;
  std::size_t capacity_ = 0;
  std::vector<MoePayload*> free_;
  std::size_t live_ = 0;
};

}  // namespace moehub
