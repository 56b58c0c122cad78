#include "rank_threads.hpp"

#include <stdexcept>

namespace moehub::gpu {

RankThreads::RankThreads(int threads) {
  if (threads < 1) throw std::invalid_argument("RankThreads: threads must be at least 1");
  workers_.reserve(static_cast<std::size_t>(threads - 1));
  for (int t = 1; t < threads; ++t) workers_.emplace_back([this, t] { work(t); });
}

RankThreads::~RankThreads() {
  {
    std::lock_guard<std::mutex> lock(m_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& w : workers_) w.join();
}

void RankThreads::run_items(int t) {
  const auto step = static_cast<std::size_t>(threads());
  for (std::size_t i = static_cast<std::size_t>(t); i < n_; i += step) {
    try {
      (*fn_)(i);
    } catch (...) {
      errors_[i] = std::current_exception();  // one writer per index
    }
  }
}

void RankThreads::work(int t) {
  std::uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(m_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    // n_, fn_ and errors_ were written before generation_ under the lock, and stay put
    // until this thread reports below
    run_items(t);
    {
      std::lock_guard<std::mutex> lock(m_);
      if (--pending_ == 0) done_.notify_one();
    }
  }
}

void RankThreads::for_each(std::size_t n, const std::function<void(std::size_t)>& fn) {
  {
    std::lock_guard<std::mutex> lock(m_);
    n_ = n;
    fn_ = &fn;
    errors_.assign(n, nullptr);
    pending_ = static_cast<int>(workers_.size());
    ++generation_;
  }
  if (!workers_.empty()) wake_.notify_all();
  run_items(0);
  {
    std::unique_lock<std::mutex> lock(m_);
    done_.wait(lock, [&] { return pending_ == 0; });
    fn_ = nullptr;
  }
  for (auto& e : errors_)
    if (e) std::rethrow_exception(e);
}

}  // namespace moehub::gpu
