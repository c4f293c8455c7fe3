#include "block_cache.h"

#include <bit>
#include <utility>

namespace taas::cuda {

std::size_t BlockCache::SizeClass(std::size_t bytes) {
  const auto round_up = [](std::size_t n, std::size_t step) {
    return (n + step - 1) / step * step;
  };
  if (bytes <= kSmallLimit) return round_up(bytes == 0 ? 1 : bytes, kSmallGranule);
  return round_up(bytes, std::bit_floor(bytes) / 4);
}

BlockCache::BlockCache(Backend backend) : backend_(std::move(backend)) {}

BlockCache::~BlockCache() { ReleaseCached(); }

void* BlockCache::Allocate(std::size_t bytes) {
  const std::size_t size = SizeClass(bytes);
  std::lock_guard lock(mu_);
  void* block = nullptr;
  if (auto it = free_.find(size); it != free_.end() && !it->second.empty()) {
    block = it->second.back();
    it->second.pop_back();
    stats_.cached_bytes -= size;
    ++stats_.reuses;
  } else {
    block = backend_.allocate(size);
    // Out of memory: what the cache holds may be enough once given back (fragmented across
    // classes), so release it and try once more.
    if (block == nullptr && ReleaseCachedLocked() > 0) block = backend_.allocate(size);
    if (block == nullptr) return nullptr;
    ++stats_.backend_allocations;
  }
  in_use_.emplace(block, size);
  stats_.in_use_bytes += size;
  if (stats_.in_use_bytes > stats_.peak_in_use_bytes)
    stats_.peak_in_use_bytes = stats_.in_use_bytes;
  return block;
}

bool BlockCache::Free(void* block) {
  std::lock_guard lock(mu_);
  auto it = in_use_.find(block);
  if (it == in_use_.end()) return false;
  const std::size_t size = it->second;
  in_use_.erase(it);
  free_[size].push_back(block);
  stats_.in_use_bytes -= size;
  stats_.cached_bytes += size;
  return true;
}

std::size_t BlockCache::ReleaseCached() {
  std::lock_guard lock(mu_);
  return ReleaseCachedLocked();
}

std::size_t BlockCache::ReleaseCachedLocked() {
  std::size_t released = 0;
  for (auto& [size, blocks] : free_) {
    for (void* block : blocks) backend_.release(block);
    released += size * blocks.size();
  }
  free_.clear();
  stats_.cached_bytes = 0;
  return released;
}

BlockCache::Stats BlockCache::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

}  // namespace taas::cuda
