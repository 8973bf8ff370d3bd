// `lpu compile --emit triton-data`: the inputs and reference outputs scripts/triton_check.py
// needs to check an emitted Triton module without lpu.
#pragma once
#include <string>

#include "driver/compile.h"
#include "workload/workload.h"

namespace lpu {

// Writes OUTDIR/triton_data.json and OUTDIR/triton_data.bin (fp32 little-endian).
void write_triton_data(const WorkloadSpec& w, const Compilation& c, const std::string& outdir);

}  // namespace lpu
