// The tile-footprint analysis (codegen/tile_footprint.h, issue #12) against the emitter: on
// every kernel of several workloads, under both fusion policies and on local memories small
// enough to column-tile, the analysis must give the tile-region peak, the HBM bytes of a tile
// and the hoisted bytes that emitting the tile measures (measure_emitted_tile). Tile planning
// reads only the analysis, so an emitter change that breaks agreement fails here, not as a
// silently different tiling. Both replay one recorded walk (codegen/tile_walk.h, tile_replay.h),
// so what this checks is the sizing sink's count of register uses and HBM bytes, and the walk's
// hoisted offsets, against the instructions the emitter's sink writes.
#include <gtest/gtest.h>

#include <iostream>
#include <set>

#include "codegen/column_split.h"
#include "codegen/lpu_codegen.h"
#include "codegen/tile_footprint.h"
#include "driver/compile.h"
#include "io/graph_file.h"
#include "support/error.h"
#include "workload/workload.h"

using namespace lpu;

namespace {

struct Counts {
  int kernels = 0, tiles = 0, column_tiles = 0;
  std::set<LoopKind> kinds;
};

// Compares one tile; `columns` null for whole rows.
void expect_tile(const LoopProgram& p, const Kernel& k, const ColumnSplit* columns, TileFootprintAnalysis& fa,
                 int64_t r0, int64_t rows, int64_t c0, int64_t cw, const std::string& where, Counts& n) {
  EmittedTile e = measure_emitted_tile(p, k, columns, r0, rows, c0, cw);
  TileFootprint f = fa.tile(r0, rows, c0, cw);
  std::string at = strcat(where, " kernel ", k.name, " rows [", r0, ", +", rows, ")",
                          columns ? strcat(" cols [", c0, ", +", cw, ")") : std::string());
  EXPECT_EQ(f.peak_bytes, e.peak_bytes) << at;
  EXPECT_EQ(f.hbm_bytes, e.hbm_bytes) << at;
  if (r0 == 0 && c0 == 0) {
    EXPECT_EQ(fa.peak_bytes(rows, cw), e.peak_bytes) << at;
  }
  EXPECT_EQ(fa.hoisted_bytes(), e.hoisted_bytes) << at;
  EXPECT_EQ(fa.hoisted_hbm_bytes(), e.hoisted_hbm_bytes) << at;
  ++(columns ? n.column_tiles : n.tiles);
}

void check_kernels(const Compilation& c, const std::string& where, Counts& n) {
  const LoopProgram& p = c.loop_ir;
  TileAccessCache cache;  // shared by the kernels of one program, as the driver shares it
  for (const Kernel& k : c.schedule.kernels) {
    const LoopNode& first = p.nodes[static_cast<size_t>(k.nodes.at(0))];
    if (first.kind == LoopKind::Host) continue;
    ++n.kernels;
    for (int i : k.nodes) n.kinds.insert(p.nodes[static_cast<size_t>(i)].kind);
    // Whole rows: the sizes plan_tiles asks for, the planned tile, and tiles not at row 0
    // (rows sharing a matmul B block fall differently).
    TileFootprintAnalysis whole(p, k, nullptr, &cache);
    std::set<int64_t> sizes = {1, 2, 3, 7, k.rows};
    if (k.tiling && k.tiling->tile_rows > 0) sizes.insert(k.tiling->tile_rows);
    for (int64_t rows : sizes) {
      if (rows > k.rows || rows > 512) continue;
      expect_tile(p, k, nullptr, whole, 0, rows, 0, 0, where, n);
      if (k.rows - rows >= 3) expect_tile(p, k, nullptr, whole, 3, rows, 0, 0, where, n);
    }
    // Column tiles of every kernel that can be split, wherever a plan would put them.
    ColumnSplit cs = analyze_column_split(p, k);
    if (!cs.ok) continue;
    TileFootprintAnalysis split(p, k, &cs, &cache);
    int64_t G = cs.granule, W = cs.width;
    for (int64_t cw : {G, 2 * G, 32 * G, W}) {
      cw = std::min(cw, W) / G * G;
      if (cw <= 0) continue;
      for (int64_t rows : {int64_t{1}, int64_t{2}, k.rows}) {
        if (rows > k.rows || rows > 64) continue;
        expect_tile(p, k, &cs, split, 0, rows, 0, cw, where, n);
        if (W - cw >= cw) expect_tile(p, k, &cs, split, 0, rows, cw, cw, where, n);         // a middle tile
        if (W % cw) expect_tile(p, k, &cs, split, 0, rows, W / cw * cw, W % cw, where, n);  // the narrow last
      }
    }
  }
}

Counts check_graph(const Graph& g, const std::string& name, int64_t lmu_bytes) {
  Counts n;
  for (const char* fusion : {"none", "greedy"}) {
    CompileOptions o;
    o.fusion = fusion;
    o.codegen.lmu_bytes = lmu_bytes;
    Compilation c = compile_graph(g, o);
    check_kernels(c, strcat(name, " --fusion ", fusion, " lmu ", lmu_bytes), n);
  }
  return n;
}

Counts check_workload(const std::string& file, int64_t lmu_bytes) {
  return check_graph(build_graph(load_workload_file(std::string(LPU_SOURCE_DIR) + "/workloads/" + file)), file,
                     lmu_bytes);
}

void add(Counts& n, const Counts& m) {
  n.kernels += m.kernels;
  n.tiles += m.tiles;
  n.column_tiles += m.column_tiles;
  n.kinds.insert(m.kinds.begin(), m.kinds.end());
}

}  // namespace

TEST(TileFootprint, MatchesTheEmitterOnDecoders) {
  Counts n;
  for (const char* f :
       {"tiny-llama-decode-32.yaml", "tiny-opt-decode.yaml", "gpt2-decode.yaml", "opt-1.3b-prefill.yaml"})
    add(n, check_workload(f, 512 * 1024));
  // HuggingFace exports that look their tokens up (gather kernels), prefill and decode.
  for (const char* f : {"hf_llama_decode_eager_ids_tiny.json", "hf_gpt2_eager.json", "hf_bert_sdpa.json"}) {
    GraphFile gf = load_graph_file(std::string(LPU_SOURCE_DIR) + "/tests/fixtures/hf/" + f);
    add(n, check_graph(gf.graph, f, 512 * 1024));
  }
  std::cout << n.kernels << " kernels, " << n.tiles << " whole-row tiles, " << n.column_tiles << " column tiles\n";
  EXPECT_GT(n.kernels, 100);
  EXPECT_GT(n.tiles, 400);
  EXPECT_GT(n.column_tiles, 100);
  // Matmul, pointwise, reduction and gather kernels are all covered.
  for (LoopKind kind : {LoopKind::Matmul, LoopKind::Pointwise, LoopKind::Reduction, LoopKind::Gather})
    EXPECT_TRUE(n.kinds.count(kind)) << "no kernel of loop kind " << static_cast<int>(kind);
}

TEST(TileFootprint, MatchesTheEmitterOnSmallKernels) {
  for (const char* f : {"attention_decode.yaml", "ln_gelu_add.yaml", "softmax.yaml", "rms_norm.yaml", "gemv.yaml"})
    EXPECT_GT(check_workload(f, 512 * 1024).kernels, 0) << f;
}

// A local memory small enough that gpt2's LM head is column-tiled, and planned with the analysis.
TEST(TileFootprint, MatchesTheEmitterOnColumnTiledKernels) {
  Counts n = check_workload("gpt2-decode.yaml", 64 * 1024);
  EXPECT_GT(n.column_tiles, 20);
}

// Weights stored packed (weight_dtype int8 / int4): a matmul's streamed B is counted at its
// packed blocks' bytes, as the emitted sxe.gemm reads them (instruction_hbm_bytes), not at the
// unpacked element size.
TEST(TileFootprint, MatchesTheEmitterOnPackedWeights) {
  for (const char* q : {"int4", "int8"}) {
    WorkloadSpec w = load_workload_file(std::string(LPU_SOURCE_DIR) + "/workloads/tiny-llama-decode-32.yaml");
    w = resolve_workload(w.file, {strcat("weight_dtype=", q), "group_size=32"});
    EXPECT_GT(check_graph(build_graph(w), strcat("tiny-llama ", q), 512 * 1024).kernels, 0) << q;
  }
}
