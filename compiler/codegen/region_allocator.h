// The tile region's allocator: first fit over [base, base + limit), fully coalescing frees,
// and the linear scan that places a tile's registers with it. The emitter places each tile's
// registers so (kernel_emitter.cpp) and the tile-footprint analysis runs the same scan on its
// count of the same instructions to size tiles (tile_footprint.cpp).
#pragma once
#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <vector>

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

// Linear scan over a tile's `n` instructions (its loads first, then compute and stores): a
// register (vid, vsize[vid] bytes) is placed first fit by the first instruction writing it and
// freed one instruction after the last one using it (those dying at one instruction in the
// order of their vids): written by the very next instruction, it would make that one wait for
// the reader to finish (a write-after-read hazard on the scoreboard), e.g. a matrix result
// landing on the column the vector op before it reads. (Holding it only where the next
// instruction runs on another engine helped less: scripts/stats_compare.sh, 137 cases faster
// and 6 slower against 142 and 2, OPT-1.3B's step on lpu-asic 811,513 cycles against 809,857.)
// `defs(i, f)` calls f(vid) for each register instruction i writes (-1: none; a vector op with a
// row reduction writes two); `uses(i, f)` calls f(vid) for each
// register it reads (-1: none); `placed(i, addr)` once instruction i's registers have their
// addresses (addr by vid). Returns the peak bytes used above the allocator's base.
template <class Defs, class Uses, class Placed>
uint64_t place_registers(size_t n, const std::vector<uint64_t>& vsize, RegionAllocator& ra, Defs defs, Uses uses,
                         Placed placed) {
  if (n == 0) return ra.peak();
  const size_t nv = vsize.size();
  std::vector<size_t> last_use(nv, 0);
  for (size_t i = 0; i < n; ++i) {
    uses(i, [&](int v) {
      if (v >= 0) last_use[static_cast<size_t>(v)] = i;
    });
    defs(i, [&](int d) {
      if (d >= 0) last_use[static_cast<size_t>(d)] = std::max(last_use[static_cast<size_t>(d)], i);
    });
  }
  // Registers by the instruction they die after, in vid order within one (a counting sort).
  std::vector<size_t> first(n + 1, 0);
  for (size_t v = 0; v < nv; ++v) ++first[last_use[v] + 1];
  for (size_t i = 0; i < n; ++i) first[i + 1] += first[i];
  std::vector<int> dying(nv);
  std::vector<size_t> fill(first.begin(), first.end() - 1);
  for (size_t v = 0; v < nv; ++v) dying[fill[last_use[v]]++] = static_cast<int>(v);
  std::vector<uint64_t> addr(nv, 0);
  std::vector<bool> is_placed(nv, false);
  auto release = [&](size_t i) {  // the registers dying at instruction i
    for (size_t j = first[i]; j < first[i + 1]; ++j)
      ra.release(addr[static_cast<size_t>(dying[j])], vsize[static_cast<size_t>(dying[j])]);
  };
  for (size_t i = 0; i < n; ++i) {
    defs(i, [&](int d) {
      if (d < 0 || is_placed[static_cast<size_t>(d)]) return;
      addr[static_cast<size_t>(d)] = ra.alloc(vsize[static_cast<size_t>(d)]);
      is_placed[static_cast<size_t>(d)] = true;
    });
    placed(i, addr);
    if (i > 0) release(i - 1);
  }
  return ra.peak();
}

}  // namespace lpu
