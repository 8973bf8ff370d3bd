// Tensor-parallel ranks are rotations of one another: device d's program is device 0's with
// every peer shifted by d (mod devices) and its own slot of a collective's local-memory region
// moved by one fixed offset, and (expert parallelism) the values of vector ops' scalar operands,
// which move no time; HBM layout, shapes and everything else are the same. The
// simulator then runs device 0 alone (SimOptions::mirror_symmetric_devices): whatever device 0
// sends to device k at time t, device devices-k sends to device 0 at t, so every transfer
// device 0 makes brings it the matching one, and the other devices' figures are device 0's.
#pragma once
#include <string>
#include <vector>

#include "isa/program.h"

namespace lpu {

// "" when every program of `others` (devices 1, 2, ...) is `p0` rotated as above, on `devices`
// devices; else why not (the first device and instruction that differ).
std::string rotation_asymmetry(const Program& p0, const std::vector<const Program*>& others, int devices);

}  // namespace lpu
