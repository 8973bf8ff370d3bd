// The HBM layout rule every program follows: buffers in regions, regions one after another.
//
// A region is one buffer, or several intermediates whose lifetimes do not overlap and that share
// the same bytes (the code generator's buffer assignment, codegen/hbm_assign.h). Its leader is
// its first buffer in .buffer order. Regions are laid out in the order of their leaders, each at
// the previous region's base plus its largest member's bytes rounded up to the alignment; every
// member sits at its region's base. Without shared regions this is the plain sequential layout.
//
// The program templates (program_template.h, layer_template.h) place the buffers of a program
// they instantiate by this rule, and find the region an HBM address points into with
// RegionLookup, so an instruction's address is (region, offset) whichever member it touches.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "isa/program.h"

namespace lpu {

// Per buffer, its region's leader: the first buffer at the same HBM address. A zero-byte buffer
// shares its address with the next region, whose size it cannot change, so grouping it there
// lays out the same bytes.
std::vector<size_t> region_leaders(const std::vector<BufferDecl>& bufs);

// Per buffer, its HBM base under the rule above. `leader[i] <= i`, and leader[leader[i]] ==
// leader[i] (InternalError otherwise).
std::vector<uint64_t> region_layout(const std::vector<BufferDecl>& bufs, const std::vector<size_t>& leader,
                                    int64_t alignment);

// The region an HBM address points into, by the regions' bases (ascending by construction).
class RegionLookup {
 public:
  RegionLookup(const std::vector<uint64_t>& bases, const std::vector<size_t>& leader);
  // The leader of the region whose [base, next region's base) holds `addr` (the first region
  // when `addr` is below every base; 0 when there are no buffers).
  size_t leader_at(uint64_t addr) const;

 private:
  std::vector<std::pair<uint64_t, size_t>> regions_;  // (base, leader), ascending
};

}  // namespace lpu
