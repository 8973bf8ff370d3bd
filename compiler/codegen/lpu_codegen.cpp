#include "codegen/lpu_codegen.h"

#include <algorithm>
#include <map>
#include <set>

#include "codegen/collective.h"
#include "codegen/column_split.h"
#include "codegen/gathered_weights.h"
#include "codegen/hbm_assign.h"
#include "codegen/kernel_emitter.h"
#include "codegen/tile_footprint.h"
#include "codegen/tile_plan.h"
#include "isa/hbm_layout.h"
#include "isa/program_template.h"
#include "codegen/tile_skew.h"
#include "graph/attrs_json.h"
#include "graph/collective.h"
#include "support/error.h"

namespace lpu {

// Folds tiles into a loop: groups of `group` consecutive tiles (one per local-memory buffer)
// that differ from the first group only by HBM addresses advancing linearly become one loop
// body with hbm steps; the tiles after the longest such run stay unrolled.
std::vector<Instruction> fold_tiles(const std::vector<std::vector<Instruction>>& tiles, size_t group, int kernel) {
  std::vector<Instruction> out;
  auto flat = [&](size_t g) {
    std::vector<const Instruction*> v;
    for (size_t t = g * group; t < (g + 1) * group && t < tiles.size(); ++t)
      for (const auto& in : tiles[t]) v.push_back(&in);
    return v;
  };
  size_t groups = tiles.size() / group;
  size_t n = 0;
  std::vector<int64_t> step;
  if (groups >= 2) {
    auto g0 = flat(0), g1 = flat(1);
    bool same = g0.size() == g1.size();
    for (size_t i = 0; same && i < g0.size(); ++i) {
      Instruction b = *g1[i];
      step.push_back(static_cast<int64_t>(b.hbm_addr) - static_cast<int64_t>(g0[i]->hbm_addr));
      b.hbm_addr = g0[i]->hbm_addr;
      same = b.same_as(*g0[i]);
    }
    if (same) {
      n = 2;
      for (; n < groups; ++n) {
        auto gj = flat(n);
        bool ok = gj.size() == g0.size();
        for (size_t i = 0; ok && i < g0.size(); ++i) {
          Instruction b = *gj[i];
          ok = static_cast<int64_t>(b.hbm_addr) ==
               static_cast<int64_t>(g0[i]->hbm_addr) + step[i] * static_cast<int64_t>(n);
          b.hbm_addr = g0[i]->hbm_addr;
          ok = ok && b.same_as(*g0[i]);
        }
        if (!ok) break;
      }
    }
  }
  size_t unrolled_from = 0;
  if (n >= 2) {
    Instruction begin;
    begin.opcode = Opcode::LoopBegin;
    begin.token = static_cast<int64_t>(n);
    begin.kernel = kernel;
    out.push_back(begin);
    auto g0 = flat(0);
    for (size_t i = 0; i < g0.size(); ++i) {
      Instruction in = *g0[i];
      in.hbm_step = step[i];
      out.push_back(in);
    }
    Instruction end;
    end.opcode = Opcode::LoopEnd;
    end.kernel = kernel;
    out.push_back(end);
    unrolled_from = n * group;
  }
  for (size_t t = unrolled_from; t < tiles.size(); ++t) out.insert(out.end(), tiles[t].begin(), tiles[t].end());
  return out;
}

namespace {
// A kernel's tiles in emission order: skewed into stages (tile_skew.h) where that applies,
// folded into loops when opts.fold_loops (the skew's prologue and epilogue steps outside the
// loop, its steady steps folded like tiles).
std::vector<Instruction> order_tiles(std::vector<std::vector<Instruction>> tiles, int64_t nbuf, int id,
                                     const CodegenOptions& opts) {
  if (opts.interleave_rows)
    for (auto& tile : tiles) tile = interleave_row_groups(tile);
  SkewedTiles sk;
  if (opts.skew_tiles) {
    sk = skew_tiles(std::move(tiles), nbuf);
  } else {
    sk.steps = std::move(tiles);
  }
  std::vector<Instruction> body;
  auto emit = [&](size_t from, size_t to) {
    for (size_t i = from; i < to; ++i) body.insert(body.end(), sk.steps[i].begin(), sk.steps[i].end());
  };
  const size_t steady_end = sk.steps.size() - sk.epilogue;
  if (!opts.fold_loops) {
    emit(0, sk.steps.size());
    return body;
  }
  emit(0, sk.prologue);
  std::vector<std::vector<Instruction>> steady(sk.steps.begin() + static_cast<std::ptrdiff_t>(sk.prologue),
                                               sk.steps.begin() + static_cast<std::ptrdiff_t>(steady_end));
  std::vector<Instruction> folded = fold_tiles(steady, static_cast<size_t>(nbuf), id);
  body.insert(body.end(), folded.begin(), folded.end());
  emit(steady_end, sk.steps.size());
  return body;
}
}  // namespace

EmittedTile measure_emitted_tile(const LoopProgram& p, const Kernel& k, const ColumnSplit* columns, int64_t r0,
                                 int64_t rows, int64_t c0, int64_t cw) {
  static const std::map<std::string, uint64_t> no_addresses;  // addresses do not change sizes
  TileAccessCache cache;
  const TileWalk walk = TileWalk::record(p, k, columns, cache);
  KernelEmitter e(walk, 0, no_addresses);
  std::vector<Instruction> code;
  EmittedTile t;
  t.peak_bytes = e.emit_tile(r0, rows, c0, cw, 0, UINT64_MAX / 2, code);
  for (const auto& in : code) t.hbm_bytes += instruction_hbm_bytes(in);
  // The resident rows as the emitted loads place them (each rounded up to the granule).
  for (const auto& in : e.hoisted_code()) {
    t.hoisted_bytes =
        std::max(t.hoisted_bytes, static_cast<int64_t>(in.lm_addr) + align_up(in.cols * kLmElem, kLmAlign));
    t.hoisted_hbm_bytes += instruction_hbm_bytes(in);
  }
  return t;
}

KernelCost kernel_cost(const LoopProgram& p, const Kernel& k, const CodegenOptions& opts, bool with_traffic,
                       TileAccessCache* cache) {
  KernelCost c;
  if (is_opaque(p.nodes[static_cast<size_t>(k.nodes.at(0))].kind)) {  // a graph break or collective: never fused
    c.hbm_bytes = untiled_hbm_bytes(p, k);
    return c;
  }
  std::unique_ptr<TileFootprintAnalysis> fa;
  TilePlan plan = plan_tiles(p, k, opts, !with_traffic, &fa, cache);
  c.lmu_bytes = plan.min_lmu_bytes;
  c.fits = plan.configured;
  c.col_tiled = plan.col_tiled;
  if (!plan.configured && !plan.columns.ok) c.no_columns = plan.columns.why_not;
  if (!plan.fits || !with_traffic) return c;
  c.tile_rows = plan.rows;
  auto tile_bytes = [&](int64_t r0, int64_t rows, int64_t j) {
    auto [c0, cw] = column_window(plan, j);
    return fa->hbm_bytes(r0, rows, c0, cw);
  };
  // A row of column tiles: the first (it also stores the unsplit nodes) and the last (narrower)
  // exactly, those between alike but for their HBM addresses.
  auto row_bytes = [&](int64_t r0, int64_t rows) {
    int64_t nc = plan.col_tiles, b = tile_bytes(r0, rows, 0);
    if (nc > 2) b += (nc - 2) * tile_bytes(r0, rows, 1);
    if (nc > 1) b += tile_bytes(r0, rows, nc - 1);
    return b;
  };
  // Tiles differ only in their HBM addresses, except where rows sharing a matmul B block
  // (attention groups) or row runs fall differently: the first tiles are counted exactly and
  // the rest of the full tiles extrapolated from their mean; the last tile is exact.
  constexpr int64_t kExactTiles = 8;
  int64_t full = k.rows / plan.rows, rem = k.rows % plan.rows;
  int64_t exact = std::min(full, kExactTiles), exact_bytes = 0;
  for (int64_t t = 0; t < exact; ++t) exact_bytes += row_bytes(t * plan.rows, plan.rows);
  c.hbm_bytes = exact_bytes + (exact ? (full - exact) * exact_bytes / exact : 0);
  if (rem) c.hbm_bytes += row_bytes(full * plan.rows, rem);
  c.hbm_bytes += fa->hoisted_hbm_bytes();
  return c;
}

namespace {
// The tiling plan_tiles decides for kernel `k` (a graph break: none); an InputError when no
// tiling fits local memory.
KernelTiling tile_kernel(const LoopProgram& p, const Kernel& k, const CodegenOptions& opts,
                         TileAccessCache* cache = nullptr) {
  const LoopNode& first = p.nodes[static_cast<size_t>(k.nodes.at(0))];
  if (is_opaque(first.kind)) return {k.name, 0, 0, 0, 0, 0, 0, 0};
  TilePlan plan = plan_tiles(p, k, opts, false, nullptr, cache);
  if (!plan.fits) {
    std::string cols = plan.columns.ok ? strcat("even in column tiles of ", plan.columns.granule, " columns it needs ",
                                                plan.min_lmu_bytes)
                                       : "it cannot be tiled in columns: " + plan.columns.why_not;
    throw InputError(strcat("kernel ", k.name, " needs ", plan.one_row_bytes,
                            " bytes of local memory for one row per tile, even single-buffered",
                            "; the config has lmu.capacity_kib = ", opts.lmu_bytes / 1024, " (", opts.lmu_bytes,
                            " bytes); ", cols));
  }
  int64_t tiles = (k.rows + plan.rows - 1) / plan.rows * plan.col_tiles;
  return {k.name,         plan.rows,   tiles, plan.hoisted, plan.tile_bytes, plan.col_tiled ? plan.cols : 0,
          plan.col_tiles, plan.buffers};
}

// The host-op entry of a graph break. The host reads and writes tensors in their dtype: a
// packed weight is the SXE's only.
HostOp host_op_of(const LoopProgram& p, const LoopNode& n) {
  for (const auto& in : n.host_inputs)
    if (p.buffers.at(in).quant.on())
      throw InputError(strcat("node ", n.origin, " (", n.host_op, ", a graph break) reads ", in,
                              ", a weight stored packed (", quant_str(p.buffers.at(in).quant),
                              "): only the SXE reads packed weights (a matmul's streamed B)"));
  HostOp h;
  h.op = n.host_op;
  h.node = n.origin;
  h.inputs = n.host_inputs;
  h.output = n.out();
  h.attrs_json = attrs_to_json(n.host_attrs);
  return h;
}
}  // namespace

std::vector<KernelTiling> plan_kernel_tiling(const LoopProgram& p, const Schedule& s, const CodegenOptions& opts,
                                             TileAccessCache* cache,
                                             const std::vector<std::optional<KernelTiling>>* known) {
  std::vector<KernelTiling> tiling;
  TileAccessCache own(opts.vector_chains);
  for (size_t i = 0; i < s.kernels.size(); ++i) {
    if (known && i < known->size() && (*known)[i])
      tiling.push_back(*(*known)[i]);
    else
      tiling.push_back(tile_kernel(p, s.kernels[i], opts, cache ? cache : &own));
  }
  return tiling;
}

namespace {
// Kernel `ki`'s code recorded with its HBM addresses relative to their buffers (prog.buffers'
// order), or copied back with them moved to this program's buffers.
void record_kernel_code(const Program& prog, size_t from, const KernelTiling& kt, KernelCodeReuse::Code& out) {
  std::vector<uint64_t> bases;
  for (const auto& b : prog.buffers) bases.push_back(b.hbm_addr);
  const RegionLookup regions(bases, region_leaders(prog.buffers));
  out.tiling = kt;
  for (size_t i = from; i < prog.code.size(); ++i) {
    Instruction in = prog.code[i];
    int64_t b = -1;
    if (uses_hbm_address(in.opcode) && !bases.empty()) {
      b = static_cast<int64_t>(regions.leader_at(in.hbm_addr));
      in.hbm_addr -= bases[static_cast<size_t>(b)];
    }
    out.code.push_back(std::move(in));
    out.buffer.push_back(b);
  }
}

void copy_kernel_code(const KernelCodeReuse::Code& c, Program& prog) {
  for (size_t i = 0; i < c.code.size(); ++i) {
    prog.code.push_back(c.code[i]);
    if (c.buffer[i] >= 0) prog.code.back().hbm_addr += prog.buffers.at(static_cast<size_t>(c.buffer[i])).hbm_addr;
  }
}

// A tiled kernel's code (its hoisted loads, then its tiles in issue order) appended to `code`;
// returns the tiling emitted.
KernelTiling emit_tiled_kernel(const LoopProgram& p, const Kernel& k, int id, const CodegenOptions& opts,
                               TileAccessCache& access, const std::map<std::string, uint64_t>& hbm,
                               std::vector<Instruction>& code) {
  // The tiling recorded in the schedule (the driver plans it after scheduling), else planned here.
  const KernelTiling kt = k.tiling ? *k.tiling : tile_kernel(p, k, opts, &access);
  if (kt.kernel != k.name || kt.tile_rows <= 0)
    throw InternalError(strcat("codegen: kernel ", k.name, " has no tiling of its own (", kt.kernel, ")"));
  TilePlan plan = plan_from_tiling(p, k, kt);
  int64_t rows = plan.rows, hoisted = plan.hoisted, tb = plan.tile_bytes, nbuf = plan.buffers;
  const TileWalk walk = TileWalk::record(p, k, plan.col_tiled ? &plan.columns : nullptr, access);
  KernelEmitter e(walk, id, hbm);
  std::vector<std::vector<Instruction>> tile_code;
  int64_t tiles = 0;
  uint64_t region0 = static_cast<uint64_t>(align_up(hoisted, kLmAlign));
  // Double-buffered regions start at fixed halves of the local memory above the hoisted
  // operands, not at multiples of the tile's size: a tile's size grows with the context in
  // steps of the allocation granule, and an address that follows it would not be affine in
  // the context (generate's symbolic programs, isa/program_template.h, need it to be).
  const int64_t region_stride =
      nbuf > 1 ? std::max(tb, (opts.lmu_bytes - static_cast<int64_t>(region0)) / nbuf / kLmAlign * kLmAlign) : tb;
  // Row tiles in order, each as its column tiles left to right (one tile without column tiling).
  for (int64_t r0 = 0; r0 < k.rows; r0 += rows)
    for (int64_t j = 0; j < plan.col_tiles; ++j, ++tiles) {
      uint64_t base = region0 + static_cast<uint64_t>((tiles % nbuf) * region_stride);
      auto [c0, cw] = column_window(plan, j);
      tile_code.emplace_back();
      e.emit_tile(r0, std::min(rows, k.rows - r0), c0, cw, base, static_cast<uint64_t>(tb), tile_code.back());
    }
  code.insert(code.end(), e.hoisted_code().begin(), e.hoisted_code().end());
  std::vector<Instruction> body = order_tiles(std::move(tile_code), nbuf, id, opts);
  code.insert(code.end(), body.begin(), body.end());
  return {k.name, rows, tiles, hoisted, tb, plan.col_tiled ? plan.cols : 0, plan.col_tiles, nbuf};
}

}  // namespace

CodegenResult generate_lpu_program(const LoopProgram& p, const Schedule& s, const CodegenOptions& opts,
                                   TileAccessCache* cache, KernelCodeReuse* reuse) {
  CodegenResult res;
  Program& prog = res.program;
  prog.name = p.name;

  // HBM memory map: weights, inputs, then every buffer some kernel writes to HBM, a layer's
  // intermediates sharing the bytes of the same ones of an earlier layer (codegen/hbm_assign.h).
  // An elided gather (codegen/gathered_weights.h) runs nowhere: its kernel emits nothing and its
  // output needs no HBM.
  auto elided = [&](const Kernel& k) {
    const LoopNode& n = p.nodes[static_cast<size_t>(k.nodes.at(0))];
    return k.nodes.size() == 1 && n.kind == LoopKind::Gather && gather_is_elided(p, n);
  };
  const HbmAssignment assigned = assign_hbm(p, s, elided);
  for (const auto& name : assigned.order) {
    const Buffer& b = p.buffers.at(name);
    prog.buffers.push_back({name, 0, b.type, b.role, b.quant});
  }
  const std::vector<uint64_t> bases = region_layout(prog.buffers, assigned.leader, opts.hbm_alignment);
  std::map<std::string, uint64_t> hbm;
  for (size_t i = 0; i < prog.buffers.size(); ++i) hbm[prog.buffers[i].name] = prog.buffers[i].hbm_addr = bases[i];

  // Collectives (tensor parallelism) receive above the local memory the kernels get.
  const CollectivePlacement collectives =
      place_collectives(p, static_cast<uint64_t>(opts.lmu_bytes), opts.lmu_bytes + opts.collective_lmu_bytes);
  int64_t collectives_seen = 0;
  TileAccessCache own(opts.vector_chains);  // the kernels' walks share the program's access analyses
  TileAccessCache& access = cache ? *cache : own;
  for (size_t ki = 0; ki < s.kernels.size(); ++ki) {
    const Kernel& k = s.kernels[ki];
    prog.kernels.push_back(k.name);
    int id = static_cast<int>(ki);
    const LoopNode& first = p.nodes[static_cast<size_t>(k.nodes.at(0))];
    if (first.kind == LoopKind::Collective) {  // over the ESL: codegen/collective.h
      auto code = emit_collective(p, first, id, collectives_seen++, hbm.at(first.host_inputs.at(0)),
                                  hbm.at(first.out()), collectives);
      prog.code.insert(prog.code.end(), code.begin(), code.end());
      res.tiling.push_back({k.name, 0, 0, 0, 0, 0, 0, 0});
      continue;
    }
    if (elided(k)) {
      res.tiling.push_back({k.name, 0, 0, 0, 0, 0, 0, 0});
      continue;
    }
    if (first.kind == LoopKind::Host) {  // a graph break: one host.call, no tiles
      if (k.nodes.size() != 1) throw InternalError("codegen: host node " + first.name + " fused into a kernel");
      Instruction call;
      call.opcode = Opcode::HostCall;
      call.host_op = static_cast<int64_t>(prog.host_ops.size());
      call.kernel = id;
      prog.host_ops.push_back(host_op_of(p, first));
      prog.code.push_back(call);
      res.tiling.push_back({k.name, 0, 0, 0, 0, 0, 0, 0});
      continue;
    }
    const bool reusable = reuse && ki < reuse->reusable.size() && reuse->reusable[ki];
    if (reusable && ki < reuse->kernels.size() && reuse->kernels[ki]) {
      copy_kernel_code(*reuse->kernels[ki], prog);
      res.tiling.push_back(reuse->kernels[ki]->tiling);
      continue;
    }
    const size_t kernel_start = prog.code.size();
    res.tiling.push_back(emit_tiled_kernel(p, k, id, opts, access, hbm, prog.code));
    if (reusable) {
      if (reuse->kernels.size() <= ki) reuse->kernels.resize(ki + 1);
      reuse->kernels[ki].emplace();
      record_kernel_code(prog, kernel_start, res.tiling.back(), *reuse->kernels[ki]);
    }
  }
  Instruction halt;
  halt.opcode = Opcode::Halt;
  prog.code.push_back(halt);
  return res;
}

}  // namespace lpu
