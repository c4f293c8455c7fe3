// tf.data's shuffle buffer, the one both pipelines (pipeline.h, stream_pipeline.h) shuffle with. It
// holds at most `capacity` elements and Take hands out a uniformly chosen one (its slot refilled by
// the last), so memory is bounded by the capacity, never by the data set's size; an element comes
// out at most capacity - 1 places before its position in the input. A capacity of 0 or 1 keeps the
// order. The same seed gives the same order on every machine. Pure logic, single-threaded.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace taas::data {

// The next number of a seeded sequence (splitmix64, the data module's one generator), advancing
// `state`.
std::uint64_t NextShuffleRandom(std::uint64_t& state);

template <typename T>
class ShuffleBuffer {
 public:
  ShuffleBuffer(std::int64_t capacity, std::uint64_t seed)
      : capacity_(static_cast<std::size_t>(std::max<std::int64_t>(1, capacity))), rng_(seed) {}

  bool full() const { return items_.size() >= capacity_; }
  bool empty() const { return items_.empty(); }
  std::size_t size() const { return items_.size(); }
  std::size_t capacity() const { return capacity_; }

  // Only while !full().
  void Push(T item) { items_.push_back(std::move(item)); }

  // Only while !empty(). The random numbers are drawn only when shuffling, so a seed gives the
  // same order whatever else the caller does.
  T Take() {
    std::size_t pick = 0;
    if (capacity_ > 1) pick = NextShuffleRandom(rng_) % items_.size();
    T item = std::move(items_[pick]);
    if (pick + 1 != items_.size()) items_[pick] = std::move(items_.back());
    items_.pop_back();
    return item;
  }

 private:
  std::size_t capacity_;
  std::uint64_t rng_;
  std::vector<T> items_;
};

}  // namespace taas::data
