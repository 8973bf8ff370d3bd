// The tile region's allocator: first fit over [base, base + limit), fully coalescing frees.
// The code generator places each tile's registers with it (lpu_codegen.cpp) and the
// tile-footprint analysis replays the same placement to size tiles (tile_footprint.cpp).
#pragma once
#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>

namespace lpu {

[[noreturn]] void tile_region_exhausted();  // an InternalError (tile_footprint.cpp)

// First-fit allocator over [base, base + limit).
class RegionAllocator {
 public:
  RegionAllocator(uint64_t base, uint64_t limit) : base_(base) { free_[base] = base + limit; }
  uint64_t alloc(uint64_t bytes) {
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->second - it->first < bytes) continue;
      uint64_t a = it->first, e = it->second;
      free_.erase(it);
      if (a + bytes < e) free_[a + bytes] = e;
      peak_ = std::max(peak_, a + bytes - base_);
      return a;
    }
    tile_region_exhausted();
  }
  void release(uint64_t a, uint64_t bytes) {
    uint64_t e = a + bytes;
    auto next = free_.lower_bound(a);
    if (next != free_.end() && next->first == e) {
      e = next->second;
      free_.erase(next);
    }
    auto it = free_.lower_bound(a);
    if (it != free_.begin()) {
      auto prev = std::prev(it);
      if (prev->second == a) {
        prev->second = e;
        return;
      }
    }
    free_[a] = e;
  }
  uint64_t peak() const { return peak_; }

 private:
  uint64_t base_;
  uint64_t peak_ = 0;
  std::map<uint64_t, uint64_t> free_;  // start -> end
};

}  // namespace lpu
