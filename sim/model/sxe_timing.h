// Closed-form timing of the SXE (matrix engine): the "approximate" model, checked against
// the Verilator RTL of one MAC tree (sim/rtl/, issue 8).
//
// One MAC tree is a `lanes`-wide dot-product unit feeding a pipelined adder tree of
// `pipeline_depth` stages and an accumulator. Per cycle it consumes one *beat*: `lanes`
// weights (streamed from HBM) and the matching `lanes` activations (broadcast from the LMU).
// An output element of a K-long dot product needs ceil(K / lanes) beats. Beats arrive at
// `beats_per_cycle` <= 1 when the weight stream is slower than the tree (back-pressure).
//
// Checked against the RTL (sim/rtl/sxe_mac_tree.sv, tests/test_rtl.cpp): `pipeline_depth` is
// the number of register stages from an accepted beat to the delivered result, the
// accumulator/output register included, and the accumulator starts the next dot product
// without a bubble. So no write-back constant is needed: a GEMV takes ceil(beats / rate) +
// pipeline_depth cycles, counting the cycle in which the last result is handed over, exactly
// on every benchmark (floating-point rounding of beats / rate could cost one cycle at worst).
// Beat j of a stream at rate r is taken in the first cycle c with floor((c + 1) * r) > j
// (a beat is usable once all its bytes have arrived).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>

namespace lpu::sim {

// Cycles for one tree to produce `outputs` dot products of length K, for `rows` activation
// rows each (GEMM: every weight beat is used once per activation row).
inline double mac_tree_cycles(int64_t K, int64_t outputs, int64_t rows, int lanes, int pipeline_depth,
                              double beats_per_cycle = 1.0) {
  if (outputs <= 0 || rows <= 0) return 0;
  double beats = static_cast<double>(outputs) * static_cast<double>(rows) *
                 std::ceil(static_cast<double>(K) / lanes);
  return std::ceil(beats / std::min(1.0, beats_per_cycle)) + pipeline_depth;
}

// Cycles for the whole SXE (`mac_trees` trees, output columns split evenly) to compute
// [rows, K] x [K, N], weights arriving at `weight_bytes_per_cycle` in total (HBM share).
inline double sxe_gemm_cycles(int64_t rows, int64_t K, int64_t N, int mac_trees, int lanes, int pipeline_depth,
                              int weight_bytes, double weight_bytes_per_cycle) {
  int64_t cols_per_tree = (N + mac_trees - 1) / mac_trees;
  // Each tree wants lanes * weight_bytes per cycle; the stream delivers its share.
  double want = static_cast<double>(mac_trees) * lanes * weight_bytes;
  // A beat is reused for every activation row, so rows > 1 need proportionally less stream.
  double beats_per_cycle = weight_bytes_per_cycle * static_cast<double>(rows) / want;
  return mac_tree_cycles(K, cols_per_tree, rows, lanes, pipeline_depth, beats_per_cycle);
}

}  // namespace lpu::sim
