#include "isa/hbm_layout.h"

#include <algorithm>

#include "support/error.h"

namespace lpu {

std::vector<size_t> region_leaders(const std::vector<BufferDecl>& bufs) {
  std::vector<size_t> leader(bufs.size());
  std::vector<std::pair<uint64_t, size_t>> first;  // (address, first buffer there), sorted
  first.reserve(bufs.size());
  for (size_t i = 0; i < bufs.size(); ++i) first.emplace_back(bufs[i].hbm_addr, i);
  std::stable_sort(first.begin(), first.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t k = 0; k < first.size(); ++k) {
    const size_t lead = k > 0 && first[k - 1].first == first[k].first ? leader[first[k - 1].second] : first[k].second;
    leader[first[k].second] = lead;
  }
  return leader;
}

std::vector<uint64_t> region_layout(const std::vector<BufferDecl>& bufs, const std::vector<size_t>& leader,
                                    int64_t alignment) {
  if (leader.size() != bufs.size() || alignment <= 0)
    throw InternalError("region_layout: one leader per buffer and a positive alignment");
  std::vector<int64_t> size(bufs.size(), 0);  // per leader: its region's bytes
  for (size_t i = 0; i < bufs.size(); ++i) {
    const size_t l = leader[i];
    if (l > i || leader[l] != l)
      throw InternalError(
          strcat("region_layout: buffer ", bufs[i].name, " has leader ", l, ", not a leader before it"));
    const int64_t b = bufs[i].bytes();
    size[l] = std::max(size[l], (b + alignment - 1) / alignment * alignment);
  }
  std::vector<uint64_t> base(bufs.size(), 0);
  uint64_t next = 0;
  for (size_t i = 0; i < bufs.size(); ++i) {
    if (leader[i] != i) {
      base[i] = base[leader[i]];
      continue;
    }
    base[i] = next;
    next += static_cast<uint64_t>(size[i]);
  }
  return base;
}

RegionLookup::RegionLookup(const std::vector<uint64_t>& bases, const std::vector<size_t>& leader) {
  for (size_t i = 0; i < bases.size(); ++i)
    if (leader[i] == i) regions_.emplace_back(bases[i], i);
  std::stable_sort(regions_.begin(), regions_.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
}

size_t RegionLookup::leader_at(uint64_t addr) const {
  if (regions_.empty()) return 0;
  auto it = std::upper_bound(regions_.begin(), regions_.end(), addr,
                             [](uint64_t a, const std::pair<uint64_t, size_t>& r) { return a < r.first; });
  return it == regions_.begin() ? regions_.front().second : std::prev(it)->second;
}

}  // namespace lpu
