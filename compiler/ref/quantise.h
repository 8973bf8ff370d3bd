// Packed weights (graph/types.h, Quant): writing values into blocks of codes and f16 scales,
// and reading an element back. One place for both directions, so the simulator's functional
// HBM (which packs a weight buffer and dequantises it on the SXE's input path) and the
// reference executor's view of the same weight (fake_quantise: what the packing holds) agree
// bit for bit.
//
// Scales: each block's scale is absmax / qmax (qmax: 127 for int8, 7 for int4, 448 for fp8_e4m3)
// rounded UP to the next f16, so no code clips and the largest magnitude gets code +-qmax.
// That makes packing idempotent: packing what fake_quantise returned gives the same bytes
// (the functional run packs the values the reference computes with). Codes are symmetric
// (int4 uses -7..7, int8 -127..127); fp8_e4m3 is OCP FP8 E4M3 (bias 7, max 448, no infinities).
#pragma once
#include <cstdint>
#include <vector>

#include "graph/types.h"

namespace lpu {

// Packs `n` values (a whole number of q.group) into n / q.group blocks at `out`
// (q.bytes(n) bytes).
void pack_quantised(const float* v, int64_t n, const Quant& q, uint8_t* out);
// Element `o` (0 <= o < q.group) of the block at `block`: code x scale, exact in fp32.
float quantised_element(const uint8_t* block, int64_t o, const Quant& q);
// `v` (a whole number of groups) replaced by the values its packing holds.
void fake_quantise(std::vector<float>& v, const Quant& q);

// OCP FP8 E4M3 (the "fn" variant: no infinities, 0x7f/0xff NaN): decode, and encode with
// round to nearest even and saturation at +-448.
float fp8_e4m3_to_float(uint8_t b);
uint8_t float_to_fp8_e4m3(float f);

}  // namespace lpu
