#include "model/repeat_blocks.h"

#include <algorithm>
#include <unordered_map>
#include <utility>
#include <vector>

#include "isa/hbm_layout.h"
#include "model/sim_context.h"

namespace lpu::sim {

namespace {

// A maximal run of instructions of one kernel, with a hash of its opcodes: blocks are looked
// for among runs (a decoder's kernels), then checked instruction by instruction.
struct KernelRun {
  size_t begin, end;
  int kernel;
  uint64_t key;
};

std::vector<KernelRun> kernel_runs(const Program& p) {
  std::vector<KernelRun> runs;
  for (size_t i = 0; i < p.code.size(); ++i) {
    const Instruction& in = p.code[i];
    if (runs.empty() || runs.back().kernel != in.kernel) runs.push_back({i, i, in.kernel, 1469598103934665603ULL});
    KernelRun& r = runs.back();
    r.end = i + 1;
    r.key = (r.key ^ (static_cast<uint64_t>(in.opcode) + 1)) * 1099511628211ULL;  // FNV-1a
  }
  return runs;
}

// The stretch of runs [start, start + period x reps) whose runs repeat with that period and
// that covers the most instructions (reps >= 3), or reps 0.
struct Stretch {
  size_t start = 0, period = 0, reps = 0, instructions = 0;
};

Stretch longest_stretch(const std::vector<KernelRun>& runs) {
  constexpr size_t kMaxPeriod = 16;  // kernels per layer
  auto same = [&](size_t i, size_t j) {
    return runs[i].key == runs[j].key && runs[i].end - runs[i].begin == runs[j].end - runs[j].begin;
  };
  Stretch best;
  const size_t n = runs.size();
  for (size_t per = 1; per <= std::min(kMaxPeriod, n / 3); ++per)
    for (size_t s = 0; s + per < n;) {
      size_t e = s;
      while (e + per < n && same(e, e + per)) ++e;
      const size_t reps = (e - s) / per + 1;
      if (reps >= 3) {
        const size_t instructions = runs[s + reps * per - 1].end - runs[s].begin;
        if (instructions > best.instructions) best = {s, per, reps, instructions};
      }
      s = e + 1;
    }
  return best;
}

// What the run of a block may hold: instructions of the DMA, VXE and SXE whose addresses are
// in the instruction itself.
bool repeatable(const Instruction& in) {
  const Unit u = opcode_unit(in.opcode);
  return (u == Unit::Dma || u == Unit::Vxe || u == Unit::Sxe) && in.opcode != Opcode::DmaGather &&
         in.opcode != Opcode::SxeGemmGather && in.kernel >= 0 && in.hbm_step == 0 && in.lm_step == 0;
}

// The HBM regions (isa/hbm_layout.h) by base: [base, base + largest member) and their leader.
class Regions {
 public:
  explicit Regions(const std::vector<BufferDecl>& bufs) {
    const std::vector<size_t> leader = region_leaders(bufs);
    std::unordered_map<size_t, size_t> at;  // leader -> index in regions_
    for (size_t i = 0; i < bufs.size(); ++i) {
      auto [it, fresh] = at.emplace(leader[i], regions_.size());
      if (fresh) regions_.push_back({bufs[leader[i]].hbm_addr, bufs[leader[i]].hbm_addr});
      Region& r = regions_[it->second];
      r.end = std::max(r.end, r.base + static_cast<uint64_t>(bufs[i].bytes()));
    }
    std::sort(regions_.begin(), regions_.end(), [](const Region& a, const Region& b) { return a.base < b.base; });
  }
  // The region holding [lo, hi) whole, or -1.
  int64_t find(uint64_t lo, uint64_t hi) const {
    auto it =
        std::upper_bound(regions_.begin(), regions_.end(), lo, [](uint64_t a, const Region& r) { return a < r.base; });
    if (it == regions_.begin()) return -1;
    --it;
    return hi <= it->end && lo < it->end ? it - regions_.begin() : -1;
  }
  uint64_t base(int64_t r) const { return regions_[static_cast<size_t>(r)].base; }
  // Whether region r holds [lo, hi) whole.
  bool holds(int64_t r, uint64_t lo, uint64_t hi) const {
    const Region& g = regions_[static_cast<size_t>(r)];
    return lo >= g.base && hi <= g.end && lo < g.end;
  }
  size_t size() const { return regions_.size(); }

 private:
  struct Region {
    uint64_t base, end;
  };
  std::vector<Region> regions_;
};

// Checks blocks pairwise against the map between regions (see the header); the number of
// leading blocks that are all equivalent.
class BlockChecker {
 public:
  BlockChecker(const Program& p, const ArchConfig& arch, size_t first, size_t length)
      : p_(p), regions_(p.buffers), first_(first), length_(length), sigma_(regions_.size(), -1), inverse_(sigma_) {
    round_ = static_cast<uint64_t>(arch.hbm.interleave_bytes) * static_cast<uint64_t>(arch.hbm.channels);
    burst_ = static_cast<uint64_t>(std::max(arch.hbm.burst_bytes, 1));
    // Block 0's HBM extents relative to each instruction's hbm_addr (its counterparts have the
    // same fields, so the same extents around their own address).
    Footprint f;
    for (size_t i = 0; i < length; ++i) {
      const Instruction& in = p.code[first + i];
      footprint(in, p, f);
      const bool hbm = !(f.hbm_hull.lo == 0 && f.hbm_hull.hi == 0);
      extent_.push_back(
          {hbm, static_cast<int64_t>(f.hbm_hull.lo - in.hbm_addr), static_cast<int64_t>(f.hbm_hull.hi - in.hbm_addr)});
    }
  }
  std::pair<size_t, size_t> longest_run(size_t count);

 private:
  // The region of instruction i's (of a block) HBM access at `in`'s address: most often the
  // one the map gives its counterpart's region (`from`), else looked up.
  int64_t region_of(size_t i, const Instruction& in, int64_t from = -1) const {
    const Extent& x = extent_[i];
    const uint64_t lo = in.hbm_addr + static_cast<uint64_t>(x.lo), hi = in.hbm_addr + static_cast<uint64_t>(x.hi);
    const int64_t guess = from >= 0 ? sigma_[static_cast<size_t>(from)] : -1;
    return guess >= 0 && regions_.holds(guess, lo, hi) ? guess : regions_.find(lo, hi);
  }
  // Region `from` maps to `to`: consistent with the map so far, one-to-one, channels kept.
  bool maps(int64_t from, int64_t to) {
    const uint64_t a = regions_.base(from), b = regions_.base(to), d = a > b ? a - b : b - a;
    if (d % round_ != 0 || d % burst_ != 0) return false;
    int64_t &f = sigma_[static_cast<size_t>(from)], &r = inverse_[static_cast<size_t>(to)];
    if (f < 0 && r < 0) {
      f = to;
      r = from;
    }
    return f == to && r == from;
  }
  bool pair_ok(size_t r, int kernels, const std::vector<int64_t>& from, std::vector<int64_t>& to);
  struct Extent {
    bool hbm;
    int64_t lo, hi;
  };
  const Program& p_;
  Regions regions_;
  size_t first_, length_;
  uint64_t round_ = 1, burst_ = 1;
  std::vector<Extent> extent_;
  std::vector<int64_t> sigma_, inverse_;  // by region index; -1: not mapped yet
};

// Whether block r + 1 is block r's counterpart under the map (extended as needed); `from`
// holds block r's regions, `to` gets block r + 1's.
bool BlockChecker::pair_ok(size_t r, int kernels, const std::vector<int64_t>& from, std::vector<int64_t>& to) {
  const size_t a0 = first_ + r * length_, b0 = a0 + length_;
  for (size_t i = 0; i < length_; ++i) {
    const Instruction &a = p_.code[a0 + i], &b = p_.code[b0 + i];
    if (b.kernel != a.kernel + kernels || !a.same_but_placement(b)) return false;
    if (!extent_[i].hbm) continue;
    to[i] = region_of(i, b, from[i]);
    if (from[i] < 0 || to[i] < 0 || a.hbm_addr - regions_.base(from[i]) != b.hbm_addr - regions_.base(to[i]) ||
        !maps(from[i], to[i]))
      return false;
  }
  return true;
}

// The longest run of consecutive blocks whose neighbours are counterparts under one map: (its
// first block, its blocks). A pair that breaks the map so far starts a new run with a fresh
// map (the blocks before a decoder's first layer may read a region that the layers share, so
// layer 0 is not layer 1's counterpart while layers 1, 2, ... are each other's).
std::pair<size_t, size_t> BlockChecker::longest_run(size_t count) {
  const auto& code = p_.code;
  int lo = code[first_].kernel, hi = lo;
  for (size_t i = 0; i < length_; ++i) {
    if (!repeatable(code[first_ + i])) return {0, 0};
    lo = std::min(lo, code[first_ + i].kernel);
    hi = std::max(hi, code[first_ + i].kernel);
  }
  const int kernels = hi - lo + 1;
  std::vector<int64_t> from(length_, -1), to(length_, -1);
  auto restart = [&](size_t block) {
    std::fill(sigma_.begin(), sigma_.end(), -1);
    std::fill(inverse_.begin(), inverse_.end(), -1);
    for (size_t i = 0; i < length_; ++i)
      if (extent_[i].hbm) from[i] = region_of(i, code[first_ + block * length_ + i]);
  };
  std::pair<size_t, size_t> best{0, 1};
  size_t a = 0, r = 0;
  restart(0);
  while (r + 1 < count) {
    if (pair_ok(r, kernels, from, to)) {
      std::swap(from, to);
      ++r;
      continue;
    }
    if (r - a + 1 > best.second) best = {a, r - a + 1};
    a = a == r ? r + 1 : r;  // the failing pair again with a fresh map, unless it failed with one
    r = a;
    if (a < count) restart(a);
  }
  if (a < count && count - a > best.second) best = {a, count - a};
  return best;
}

}  // namespace

RepeatBlocks candidate_blocks(const Program& p) {
  const std::vector<KernelRun> runs = kernel_runs(p);
  const Stretch s = longest_stretch(runs);
  if (s.reps < 3) return {};
  RepeatBlocks rb;
  rb.first = runs[s.start].begin;
  rb.length = runs[s.start + s.period - 1].end - rb.first;
  rb.count = s.reps;
  return rb;
}

RepeatBlocks find_repeat_blocks(const Program& p, const ArchConfig& arch) {
  return find_repeat_blocks(p, arch, candidate_blocks(p));
}

RepeatBlocks find_repeat_blocks(const Program& p, const ArchConfig& arch, const RepeatBlocks& candidate) {
  if (candidate.count < 3) return {};
  RepeatBlocks rb = candidate;
  BlockChecker check(p, arch, rb.first, rb.length);
  const auto [block, count] = check.longest_run(candidate.count);
  if (count < 3) return {};
  rb.first += block * rb.length;
  rb.count = count;
  // Kernels: block 0's span [lo, hi]; no instruction outside the blocks may belong to one of
  // the blocks' kernels (a kernel's statistics are copied whole from block to block).
  int lo = p.code[rb.first].kernel, hi = lo;
  for (size_t i = rb.first; i < rb.first + rb.length; ++i) {
    lo = std::min(lo, p.code[i].kernel);
    hi = std::max(hi, p.code[i].kernel);
  }
  rb.first_kernel = lo;
  rb.kernels = hi - lo + 1;
  const int end_kernel = lo + rb.kernels * static_cast<int>(rb.count);
  for (size_t i = 0; i < p.code.size(); ++i) {
    if (i == rb.first) i += rb.length * rb.count;
    if (i >= p.code.size()) break;
    const int k = std::max(p.code[i].kernel, 0);
    if (k >= lo && k < end_kernel) return {};
  }
  return rb;
}

}  // namespace lpu::sim
