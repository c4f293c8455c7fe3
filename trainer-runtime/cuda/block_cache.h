// The bookkeeping of the CUDA caching allocator, free of CUDA so that it is unit-tested on any
// machine: a freed block is kept in a free list of its size class and handed out again to the
// next request of that class instead of going back to the device (cudaMalloc and cudaFree
// synchronise the device and take milliseconds; a training step allocates and frees the same
// shapes every step). When the device has no more memory, every cached block is released and
// the request tried once more.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace taas::cuda {

class BlockCache {
 public:
  // Where blocks really come from (cudaMalloc/cudaFree on one device; malloc in tests).
  struct Backend {
    std::function<void*(std::size_t bytes)> allocate;  // nullptr when out of memory
    std::function<void(void* block)> release;
  };
  struct Stats {
    std::size_t in_use_bytes = 0;       // handed out, by size class
    std::size_t cached_bytes = 0;       // freed and kept
    std::size_t peak_in_use_bytes = 0;  // the most in_use_bytes ever was
    std::size_t backend_allocations = 0;
    std::size_t reuses = 0;  // requests served from the cache
  };

  // Sizes up to 1 MiB round up to a multiple of 512 bytes; larger ones to a multiple of a
  // quarter of their power of two (so at most 25% is lost to rounding, and few classes exist).
  static constexpr std::size_t kSmallLimit = std::size_t{1} << 20;
  static constexpr std::size_t kSmallGranule = 512;
  // The size class of a request of `bytes` (> 0): the size of the block that serves it.
  static std::size_t SizeClass(std::size_t bytes);

  explicit BlockCache(Backend backend);
  // Releases the cached blocks; blocks still in use are the owner's (they outlive no device).
  ~BlockCache();
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;

  // A block of at least `bytes` (> 0): a cached one of the same class, else a new one from the
  // backend, else (out of memory) a new one after releasing every cached block; nullptr when even
  // that fails. Thread-safe.
  void* Allocate(std::size_t bytes);
  // Gives back a block from Allocate, which keeps it for reuse; false (and nothing done) for a
  // pointer this cache did not hand out. Thread-safe.
  bool Free(void* block);
  // Returns every cached block to the backend; the bytes released.
  std::size_t ReleaseCached();
  Stats stats() const;

 private:
  std::size_t ReleaseCachedLocked();

  Backend backend_;
  mutable std::mutex mu_;
  std::map<std::size_t, std::vector<void*>> free_;  // size class -> cached blocks; mu_
  std::unordered_map<void*, std::size_t> in_use_;   // block -> its size class; mu_
  Stats stats_;                                     // mu_
};

}  // namespace taas::cuda
