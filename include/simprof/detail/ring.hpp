// SPDX-License-Identifier: MIT
// A fixed-capacity ring buffer: allocation only at construction, O(1) push that overwrites the
// oldest.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace simprof::detail {

template <class T>
class Ring {
 public:
  Ring() = default;
  explicit Ring(std::size_t capacity)
      : data_(capacity ? std::make_unique<T[]>(capacity) : nullptr), capacity_(capacity) {}
  Ring(const Ring& o) : Ring(o.capacity_) {
    for (std::size_t i = 0; i < capacity_; ++i) data_[i] = o.data_[i];
    head_ = o.head_;
    size_ = o.size_;
  }
  Ring& operator=(const Ring& o) {
    if (this != &o) *this = Ring(o);
    return *this;
  }
  Ring(Ring&&) noexcept = default;
  Ring& operator=(Ring&&) noexcept = default;

  std::size_t capacity() const noexcept { return capacity_; }
  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  bool full() const noexcept { return size_ == capacity_; }
  /// The value the next push() overwrites (valid when full()).
  const T& oldest() const noexcept { return data_[head_]; }
  /// The value pushed last (valid when !empty()).
  const T& newest() const noexcept { return data_[(head_ + capacity_ - 1) % capacity_]; }

  void push(const T& v) noexcept {
    if (capacity_ == 0) return;
    data_[head_] = v;
    head_ = head_ + 1 == capacity_ ? 0 : head_ + 1;
    if (size_ < capacity_) ++size_;
  }
  void clear() noexcept {
    head_ = 0;
    size_ = 0;
  }
  /// i-th value from the oldest held.
  const T& operator[](std::size_t i) const noexcept {
    return data_[(head_ + capacity_ - size_ + i) % capacity_];
  }
  /// The held values, oldest first (allocates: for reports, not for hot paths).
  std::vector<T> to_vector() const {
    std::vector<T> out;
    out.reserve(size_);
    for (std::size_t i = 0; i < size_; ++i) out.push_back((*this)[i]);
    return out;
  }

 private:
  std::unique_ptr<T[]> data_;
  std::size_t capacity_ = 0;
  std::size_t head_ = 0;
  std::size_t size_ = 0;
};

}  // namespace simprof::detail
