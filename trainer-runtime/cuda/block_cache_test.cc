#include "block_cache.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <set>

namespace taas::cuda {
namespace {

// A backend on the host heap that counts, and runs out after `limit` bytes outstanding.
struct FakeDevice {
  std::size_t limit = std::size_t{1} << 40;
  std::size_t outstanding = 0;
  std::set<void*> live;

  BlockCache::Backend Backend() {
    return {[this](std::size_t bytes) -> void* {
              if (outstanding + bytes > limit) return nullptr;
              void* block = std::malloc(bytes);
              outstanding += bytes;
              live.insert(block);
              sizes[block] = bytes;
              return block;
            },
            [this](void* block) {
              REQUIRE(live.erase(block) == 1);
              outstanding -= sizes[block];
              std::free(block);
            }};
  }
  std::map<void*, std::size_t> sizes;
};

TEST_CASE("size classes: 512-byte steps up to 1 MiB, then quarters of the power of two") {
  CHECK(BlockCache::SizeClass(1) == 512);
  CHECK(BlockCache::SizeClass(512) == 512);
  CHECK(BlockCache::SizeClass(513) == 1024);
  CHECK(BlockCache::SizeClass(std::size_t{1} << 20) == std::size_t{1} << 20);
  CHECK(BlockCache::SizeClass((std::size_t{1} << 20) + 1) == (std::size_t{5} << 18));
  CHECK(BlockCache::SizeClass(std::size_t{3} << 29) == std::size_t{3} << 29);
  CHECK(BlockCache::SizeClass((std::size_t{3} << 29) + 1) == (std::size_t{7} << 28));
  // Never smaller than asked, never more than a quarter (or 511 bytes) larger.
  for (std::size_t bytes = 1; bytes < (std::size_t{1} << 34); bytes = bytes * 3 / 2 + 7) {
    const std::size_t size = BlockCache::SizeClass(bytes);
    CAPTURE(bytes);
    CHECK(size >= bytes);
    CHECK((size - bytes < 512 || size - bytes <= bytes / 4));
    CHECK(BlockCache::SizeClass(size) == size);
  }
}

TEST_CASE("a freed block serves the next request of its class without the backend") {
  FakeDevice device;
  BlockCache cache(device.Backend());
  void* a = cache.Allocate(1000);
  REQUIRE(a != nullptr);
  CHECK(cache.Free(a));
  CHECK(cache.stats().cached_bytes == 1024);
  CHECK(cache.Allocate(600) == a);  // same class (1024)
  CHECK(cache.stats().backend_allocations == 1);
  CHECK(cache.stats().reuses == 1);
  void* b = cache.Allocate(3000);  // another class: a new block
  CHECK(b != a);
  CHECK(cache.stats().in_use_bytes == 1024 + 3072);
  CHECK(cache.stats().peak_in_use_bytes == 1024 + 3072);
  CHECK(cache.Free(a));
  CHECK(cache.Free(b));
  CHECK(cache.stats().in_use_bytes == 0);
  CHECK(cache.ReleaseCached() == 1024 + 3072);
  CHECK(device.live.empty());
}

TEST_CASE("a pointer the cache did not hand out is refused, twice freed too") {
  FakeDevice device;
  BlockCache cache(device.Backend());
  int local = 0;
  CHECK_FALSE(cache.Free(&local));
  void* a = cache.Allocate(10);
  CHECK(cache.Free(a));
  CHECK_FALSE(cache.Free(a));
  CHECK(cache.stats().cached_bytes == 512);
}

TEST_CASE("out of memory releases the cache and tries again; nullptr when still too big") {
  FakeDevice device;
  device.limit = 4096;
  BlockCache cache(device.Backend());
  void* small = cache.Allocate(2048);
  REQUIRE(small != nullptr);
  CHECK(cache.Free(small));          // cached: the device still holds 2048
  void* big = cache.Allocate(4096);  // fits only once the cached block is released
  REQUIRE(big != nullptr);
  CHECK(cache.stats().cached_bytes == 0);
  CHECK(device.live.size() == 1);
  CHECK(cache.Allocate(512) == nullptr);  // the device is full, nothing cached
  CHECK(cache.Free(big));
}

TEST_CASE("the destructor gives every cached block back") {
  FakeDevice device;
  {
    BlockCache cache(device.Backend());
    for (std::size_t bytes : {std::size_t{100}, std::size_t{5000}, std::size_t{3} << 20})
      cache.Free(cache.Allocate(bytes));
  }
  CHECK(device.live.empty());
}

}  // namespace
}  // namespace taas::cuda
