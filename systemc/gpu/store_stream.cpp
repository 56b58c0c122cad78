#include "gpu/store_stream.hpp"

#include <algorithm>
#include <stdexcept>

namespace moehub {

StoreStream::StoreStream(std::int32_t src_gpu, std::uint64_t transfer, const std::vector<RowBatch>& batches,
                         std::uint32_t row_bytes, PacketFormat fmt, std::uint32_t packets_per_transaction,
                         double issue_gbps, Tick start, Tick sm_to_hub)
    : src_gpu_(src_gpu),
      transfer_(transfer),
      row_bytes_(row_bytes),
      fmt_(fmt),
      chunk_bytes_(std::max<std::uint32_t>(1, packets_per_transaction) * fmt.max_payload_bytes),
      issue_gbps_(issue_gbps),
      clock_(start),
      sm_to_hub_(sm_to_hub) {
  if (row_bytes == 0) throw std::invalid_argument("StoreStream: row_bytes must be > 0");
  for (const auto& b : batches) {
    if (b.count <= 0) continue;
    cursors_.push_back(Cursor{b, 0, 0, kTickMax});
  }
  remaining_batches_ = cursors_.size();
}

void StoreStream::enable(std::int32_t dst, Tick t) {
  for (std::size_t i = 0; i < cursors_.size(); ++i) {
    auto& c = cursors_[i];
    if (c.batch.dst == dst && c.enabled_at == kTickMax) {
      c.enabled_at = t;
      active_.push_back(i);
      head_valid_ = false;
    }
  }
}

void StoreStream::fill_head() {
  if (rr_ >= active_.size()) rr_ = 0;
  const Cursor& c = cursors_[active_[rr_]];
  golden::StoreRequest& s = head_.store;
  s.op = golden::Opcode::kStore;
  s.src_gpu = src_gpu_;
  s.dst_gpu = c.batch.dst;
  s.row_id = c.batch.rows[c.row];
  s.row_offset = c.offset;
  s.bytes = std::min(chunk_bytes_, row_bytes_ - c.offset);
  s.address = c.batch.base_address + static_cast<std::uint64_t>(c.row) * row_bytes_ + c.offset;
  s.priority = true;
  const bool in_line = s.bytes <= golden::kLineBytes && c.offset % golden::kLineBytes + s.bytes <= golden::kLineBytes;
  const std::uint32_t mask_at = in_line ? c.offset % golden::kLineBytes : 0;
  const std::uint32_t mask_bytes = in_line ? s.bytes : golden::kLineBytes;
  if (mask_at != memo_mask_at_ || mask_bytes != memo_mask_bytes_) {  // mostly whole lines, one after another
    memo_mask_at_ = mask_at;
    memo_mask_bytes_ = mask_bytes;
    memo_mask_ = golden::ByteMask::range(mask_at, mask_bytes);
  }
  s.mask = memo_mask_;
  s.tag = transfer_;
  const Tick begin = std::max(clock_, c.enabled_at);
  if (s.bytes != memo_bytes_) {  // the stores of a stream are mostly of one size
    memo_bytes_ = s.bytes;
    memo_ticks_ = transfer_ticks(s.bytes, issue_gbps_);
  }
  head_.issue = begin + memo_ticks_;
  head_valid_ = true;
}

void StoreStream::pop(Tick taken) {
  if (!head_valid_) fill_head();
  clock_ = std::max(head_.issue, taken > sm_to_hub_ ? taken - sm_to_hub_ : 0);
  Cursor& c = cursors_[active_[rr_]];
  c.offset += head_.store.bytes;
  if (c.offset >= row_bytes_) {
    c.offset = 0;
    ++c.row;
  }
  if (c.row >= c.batch.count) {
    active_.erase(active_.begin() + static_cast<std::ptrdiff_t>(rr_));
    --remaining_batches_;
  } else {
    ++rr_;
  }
  head_valid_ = false;
}

KernelStoreSource::KernelStoreSource(std::int32_t src_gpu, std::uint64_t transfer, std::vector<KernelRow> rows,
                                     PacketFormat fmt, std::uint32_t packets_per_transaction, double issue_gbps,
                                     Tick start, Tick sm_to_hub)
    : src_gpu_(src_gpu),
      transfer_(transfer),
      rows_(std::move(rows)),
      chunk_bytes_(std::max<std::uint32_t>(1, packets_per_transaction) * fmt.max_payload_bytes),
      issue_gbps_(issue_gbps),
      clock_(start),
      sm_to_hub_(sm_to_hub) {
  for (const auto& r : rows_) {
    if (r.bytes == 0) throw std::invalid_argument("KernelStoreSource: a row of 0 bytes");
  }
}

const SourceStore& KernelStoreSource::head() {
  if (head_valid_) return head_;
  const KernelRow& r = rows_[next_];
  golden::StoreRequest& s = head_.store;
  s = golden::StoreRequest{};
  s.op = r.op;
  s.src_gpu = src_gpu_;
  s.dst_gpu = r.dst;
  s.row_id = r.row_id;
  const std::uint32_t at = r.offset + offset_;
  s.row_offset = at;
  // a store ends at the next line boundary (of the row, or of the address)
  const bool plain = r.op == golden::Opcode::kStore || r.op == golden::Opcode::kFlagWrite;
  const auto pos = static_cast<std::uint32_t>(plain ? (r.address + offset_) % golden::kLineBytes : at % golden::kLineBytes);
  const std::uint32_t line_left = golden::kLineBytes - pos;
  s.bytes = std::min({chunk_bytes_, r.bytes - offset_, chunk_bytes_ <= golden::kLineBytes ? line_left : chunk_bytes_});
  s.address = plain ? r.address + offset_ : 0;
  s.malloc_id = r.malloc_id;
  s.priority = r.priority;
  s.mask = s.bytes <= golden::kLineBytes && pos + s.bytes <= golden::kLineBytes
               ? golden::ByteMask::range(pos, s.bytes)
               : golden::ByteMask::range(0, golden::kLineBytes);
  s.tag = r.tag ? r.tag : transfer_;
  head_.issue = std::max(clock_, r.ready) + transfer_ticks(s.bytes, issue_gbps_);
  head_valid_ = true;
  return head_;
}

void KernelStoreSource::pop(Tick taken) {
  head();
  clock_ = std::max(head_.issue, taken > sm_to_hub_ ? taken - sm_to_hub_ : 0);
  offset_ += head_.store.bytes;
  if (offset_ >= rows_[next_].bytes) {
    offset_ = 0;
    ++next_;
  }
  head_valid_ = false;
}

}  // namespace moehub
