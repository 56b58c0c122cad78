// Folded transport: every rank lives in this process on one GPU with its own streams and
// buffers. A transfer is a cudaMemcpyAsync on the receiver's stream after an event that
// the sender recorded when its data was ready; the sender's stream then waits for the
// receiver's copy, so the send buffer is not reused early.
#include <cstring>
#include <stdexcept>

#include "cuda_check.hpp"
#include "transport.hpp"

namespace moehub::gpu {

namespace {
InjectedFailure g_failure;
}  // namespace

void set_injected_failure(const InjectedFailure& f) { g_failure = f; }
void maybe_fail_on_purpose(int rank, const std::string& point) {
  if (rank == g_failure.rank && point == g_failure.at)
    throw std::runtime_error("rank " + std::to_string(rank) + " fails on purpose at " + point + " (--fail-rank)");
}

namespace {

class FoldedTransport final : public Transport {
 public:
  FoldedTransport(int ranks, int device) : n_(ranks), device_(device) {
    ready_.resize(static_cast<std::size_t>(n_));
    done_.resize(static_cast<std::size_t>(n_));
    for (int i = 0; i < n_; ++i) {
      MOEHUB_CUDA_CHECK(cudaEventCreateWithFlags(&ready_[static_cast<std::size_t>(i)], cudaEventDisableTiming));
      MOEHUB_CUDA_CHECK(cudaEventCreateWithFlags(&done_[static_cast<std::size_t>(i)], cudaEventDisableTiming));
    }
  }
  ~FoldedTransport() override {
    for (auto e : ready_) cudaEventDestroy(e);
    for (auto e : done_) cudaEventDestroy(e);
  }
  std::string name() const override { return "folded"; }
  int size() const override { return n_; }
  std::vector<int> local_ranks() const override {
    std::vector<int> r;
    for (int i = 0; i < n_; ++i) r.push_back(i);
    return r;
  }
  int device_of(int) const override { return device_; }
  void wait(cudaStream_t s) override { MOEHUB_CUDA_CHECK(cudaStreamSynchronize(s)); }
  void abort(const std::string&) override {}

  void ring_exchange(std::vector<RingXfer>& x) override {
    if (static_cast<int>(x.size()) != n_) throw std::logic_error("folded ring_exchange needs every rank");
    for (auto& r : x) MOEHUB_CUDA_CHECK(cudaEventRecord(ready_[idx(r.rank)], r.stream));
    for (auto& r : x) {
      const RingXfer& from = x[idx((r.rank - 1 + n_) % n_)];
      if (from.send.size() != r.recv.size()) throw std::logic_error("ring_exchange: segment lists differ");
      MOEHUB_CUDA_CHECK(cudaStreamWaitEvent(r.stream, ready_[idx(from.rank)], 0));
      for (std::size_t i = 0; i < r.recv.size(); ++i) copy(r.recv[i], from.send[i], r.stream);
      MOEHUB_CUDA_CHECK(cudaEventRecord(done_[idx(r.rank)], r.stream));
    }
    for (auto& r : x) MOEHUB_CUDA_CHECK(cudaStreamWaitEvent(r.stream, done_[idx((r.rank + 1) % n_)], 0));
  }

  void all_to_all(std::vector<A2AXfer>& x) override {
    if (static_cast<int>(x.size()) != n_) throw std::logic_error("folded all_to_all needs every rank");
    for (auto& r : x) MOEHUB_CUDA_CHECK(cudaEventRecord(ready_[idx(r.rank)], r.stream));
    for (auto& d : x) {
      for (int s = 0; s < n_; ++s) {
        const A2AXfer& from = x[idx(s)];
        const auto& segs_in = from.send[idx(d.rank)];
        const auto& segs_out = d.recv[idx(s)];
        if (segs_in.size() != segs_out.size()) throw std::logic_error("all_to_all: segment lists differ");
        if (s != d.rank) MOEHUB_CUDA_CHECK(cudaStreamWaitEvent(d.stream, ready_[idx(s)], 0));
        for (std::size_t i = 0; i < segs_out.size(); ++i) copy(segs_out[i], segs_in[i], d.stream);
      }
      MOEHUB_CUDA_CHECK(cudaEventRecord(done_[idx(d.rank)], d.stream));
    }
    for (auto& s : x)
      for (int d = 0; d < n_; ++d)
        if (d != s.rank) MOEHUB_CUDA_CHECK(cudaStreamWaitEvent(s.stream, done_[idx(d)], 0));
  }

  std::vector<char> all_gather_host(const std::vector<const void*>& send, std::size_t bytes,
                                    const std::vector<cudaStream_t>& streams) override {
    std::vector<char> out(bytes * static_cast<std::size_t>(n_));
    for (int r = 0; r < n_; ++r) {
      MOEHUB_CUDA_CHECK(cudaMemcpyAsync(out.data() + bytes * idx(r), send[idx(r)], bytes, cudaMemcpyDeviceToHost,
                                        streams[idx(r)]));
    }
    for (int r = 0; r < n_; ++r) MOEHUB_CUDA_CHECK(cudaStreamSynchronize(streams[idx(r)]));
    return out;
  }

 private:
  static std::size_t idx(int r) { return static_cast<std::size_t>(r); }
  static void copy(const Segment& dst, const Segment& src, cudaStream_t s) {
    if (dst.bytes != src.bytes) throw std::logic_error("transfer: segment sizes differ");
    if (dst.bytes == 0) return;
    MOEHUB_CUDA_CHECK(cudaMemcpyAsync(dst.ptr, src.ptr, dst.bytes, cudaMemcpyDeviceToDevice, s));
  }
  int n_;
  int device_;
  std::vector<cudaEvent_t> ready_, done_;
};

}  // namespace

std::unique_ptr<Transport> make_folded_transport(int ranks, int device) {
  return std::make_unique<FoldedTransport>(ranks, device);
}

}  // namespace moehub::gpu
