// SPDX-License-Identifier: MIT
// BufferPool: a bounded pool of 8-byte-aligned buffers lent to a producer on one thread and
// returned on another (the kernel tracer lends them to CUPTI, which fills them on its own thread).
// Buffers are allocated on demand up to max_buffers and reused; when all are out, acquire() returns
// null and counts it (CUPTI then drops records and counts them too). Thread-safe; no CUDA.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace simprof::detail {

class BufferPool {
 public:
  BufferPool(std::size_t buffer_bytes, std::size_t max_buffers)
      : bytes_(buffer_bytes), max_(max_buffers) {}

  /// A free buffer of buffer_bytes() bytes, 8-byte aligned; null when max_buffers are out.
  std::uint8_t* acquire() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (free_.empty() && pool_.size() < max_) {
      pool_.push_back(std::make_unique<std::uint8_t[]>(bytes_ + 8));
      free_.push_back(pool_.back().get());
    }
    if (free_.empty()) {
      ++exhausted_;
      return nullptr;
    }
    std::uint8_t* raw = free_.back();
    free_.pop_back();
    return raw + (8 - reinterpret_cast<std::uintptr_t>(raw) % 8) % 8;
  }
  /// Returns a buffer acquire() lent; false for a pointer that is not one of the pool's.
  bool release(const std::uint8_t* buffer) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& p : pool_) {
      std::uint8_t* raw = p.get();
      if (buffer >= raw && buffer < raw + 8) {
        free_.push_back(raw);
        return true;
      }
    }
    return false;
  }
  std::size_t buffer_bytes() const noexcept { return bytes_; }
  /// Buffers allocated so far (at most max_buffers).
  std::size_t allocated() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return pool_.size();
  }
  /// acquire() calls that found every buffer out.
  std::uint64_t exhausted() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return exhausted_;
  }

 private:
  std::size_t bytes_, max_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<std::uint8_t[]>> pool_;
  std::vector<std::uint8_t*> free_;
  std::uint64_t exhausted_ = 0;
};

}  // namespace simprof::detail
