// A growable FIFO ring buffer (power-of-two capacity, never shrinks).
//
// The time-ordered queues of the platform (arrival lanes, credit returns)
// see their entries almost always in order: a ring keeps them contiguous,
// costs O(1) per push and pop, and allows the rare out-of-order entry to be
// inserted near the back (insert_sorted) by shifting the few behind it.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace moehub {

template <typename T>
class Ring {
 public:
  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }
  T& front() { return buf_[head_]; }
  const T& front() const { return buf_[head_]; }
  T& back() { return buf_[(head_ + size_ - 1) & mask_]; }
  const T& back() const { return buf_[(head_ + size_ - 1) & mask_]; }
  /// The i-th entry from the front.
  T& operator[](std::size_t i) { return buf_[(head_ + i) & mask_]; }
  const T& operator[](std::size_t i) const { return buf_[(head_ + i) & mask_]; }

  void push_back(const T& v) {
    if (size_ == capacity_) grow();
    buf_[(head_ + size_) & mask_] = v;
    ++size_;
  }
  void pop_front() {
    head_ = (head_ + 1) & mask_;
    --size_;
  }
  void clear() {
    head_ = 0;
    size_ = 0;
  }

  /// Inserts `v` behind every entry e with !less(v, e) (stable: equal
  /// entries keep their insertion order), searching from the back.
  template <typename Less>
  void insert_sorted(const T& v, Less less) {
    if (size_ == capacity_) grow();
    std::size_t i = size_;
    while (i > 0 && less(v, (*this)[i - 1])) {
      (*this)[i] = std::move((*this)[i - 1]);
      --i;
    }
    (*this)[i] = v;
    ++size_;
  }

 private:
  void grow() {
    std::vector<T> next(buf_.empty() ? 16 : 2 * buf_.size());
    for (std::size_t i = 0; i < size_; ++i) next[i] = std::move((*this)[i]);
    buf_ = std::move(next);
    head_ = 0;
    capacity_ = buf_.size();
    mask_ = capacity_ - 1;
  }

  std::vector<T> buf_;
  std::size_t head_ = 0;
  std::size_t size_ = 0;
  std::size_t mask_ = 0;
  std::size_t capacity_ = 0;  ///< = buf_.size() (a division for an entry of 24 or 48 bytes)
};

}  // namespace moehub
