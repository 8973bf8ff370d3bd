#include "codegen/tile_footprint.h"

#include <algorithm>
#include <array>
#include <optional>

#include "codegen/region_allocator.h"
#include "codegen/tile_plan.h"
#include "codegen/tile_replay.h"
#include "support/error.h"

namespace lpu {

void tile_region_exhausted() { throw InternalError("codegen: tile region exhausted"); }

namespace {

// An instruction (or a run of instructions of one register: a load's DMAs, a matmul's row
// groups, a store's parts) as the register allocator sees it.
struct Step {
  int def = -1, def2 = -1;  // def2: a row reduction's column
  std::array<int, 3> src{-1, -1, -1};
  int store = -1;
};

// The HBM bytes of `elems` elements of a matmul's streamed B: its packed blocks where the weights
// are stored packed (instruction_hbm_bytes counts the emitted sxe.gemm the same way), else the
// elements at `eb` bytes each.
int64_t b_bytes(const Buffer& b, int64_t elems, int64_t eb) { return b.quant.on() ? b.quant.bytes(elems) : elems * eb; }

// The replay's sink for sizing: each hook is the register uses and the HBM bytes of the
// instructions the emitter's hook of the same name writes.
struct FootprintSink {
  std::vector<Step> load_steps, body;
  int64_t hbm = 0, r0 = 0;
  bool with_hbm = false;  // a matmul's B bytes look at every row: only when asked for

  static int vid(const TileVal& v) { return v.imm ? -1 : v.vid; }
  void step(std::vector<Step>& seq, int def, std::initializer_list<const TileVal*> srcs, int store = -1) {
    Step s;
    s.def = def;
    size_t i = 0;
    for (const TileVal* v : srcs) s.src[i++] = vid(*v);
    s.store = store;
    seq.push_back(s);
  }

  void tile_load(const TileWalk::Load& l, const TileVal& dst, int64_t) {
    step(load_steps, dst.vid, {});
    hbm += dst.rows * dst.cols * l.eb;
  }
  void block_load(const TileWalk::Load& l, const TileVal& dst, int64_t c0) {
    int64_t parts = dst.rows * ((c0 + dst.cols) / l.block - c0 / l.block);
    if (parts > 0) step(load_steps, dst.vid, {});
    hbm += parts * l.block * l.eb;
  }
  void hoisted_load(const TileWalk::Load&, const TileVal&) {}  // below the tile region
  void vxe_op(ScalarOp, const TileVal& dst, const TileVal* const* srcs, size_t n, const VxeChain& chain) {
    Step s;
    s.def = dst.vid;
    if (chain.acc) s.def2 = chain.acc_dst.vid;
    for (size_t j = 0; j < n; ++j) s.src[j] = vid(*srcs[j]);
    body.push_back(s);
  }
  void vxe_reduce(ReductionType, int64_t, const TileVal& dst, const TileVal& src) { step(body, dst.vid, {&src}); }
  void vxe_mov(const TileVal& dst, const TileVal& src) { step(body, dst.vid, {&src}); }
  void matmul(const TileWalk::Op& op, const TileVal& a, const TileVal& dst, int64_t) {
    step(body, dst.vid, {&a});
    if (!with_hbm) return;
    const TileWalk::MatmulB& m = *op.matmul;
    int64_t groups = 0;
    for (int64_t r = 0; r < dst.rows; ++groups) {  // rows sharing one B matrix: one instruction
      int64_t base = m.rows_of_b.row_offset(r0 + r);
      int64_t n = 1;
      while (r + n < dst.rows && m.rows_of_b.row_offset(r0 + r + n) == base) ++n;
      r += n;
    }
    hbm += groups * b_bytes(*m.buf, m.K * dst.cols, m.eb);
  }
  void matmul_gathered(const TileWalk::Op& op, const TileVal& a, const TileVal& idx, const TileVal& dst, int64_t) {
    step(body, dst.vid, {&a, &idx});  // one slab block per row
    if (with_hbm) hbm += dst.rows * b_bytes(*op.buf, op.node->reduction_ranges.at(0) * dst.cols, op.eb);
  }
  void gather(const TileWalk::Op& op, const TileVal& idx, const TileVal& dst, int64_t) {
    step(body, dst.vid, {&idx});
    hbm += dst.rows * dst.cols * op.eb;
  }
  void store(const TileWalk::Op& op, const TileVal& v, int64_t c0) {
    int64_t parts = v.rows, cols = v.cols;
    if (op.block) {  // two-level columns: a DMA per row and block
      parts = v.rows * ((c0 + v.cols) / op.block - c0 / op.block);
      cols = op.block;
    }
    if (parts > 0) step(body, -1, {}, v.vid);
    hbm += parts * cols * op.eb;
  }
};

}  // namespace

struct TileFootprintAnalysis::Impl {
  const LoopProgram& p;
  const Kernel& k;
  const ColumnSplit* columns;
  TileAccessCache& cache;
  std::optional<TileWalk> walk;  // recorded at the first question
  TileReplay replay;
  FootprintSink sink;

  Impl(const LoopProgram& prog, const Kernel& kernel, const ColumnSplit* cs, TileAccessCache& access)
      : p(prog), k(kernel), columns(cs), cache(access) {}

  const TileWalk& recorded() {
    if (!walk) walk = TileWalk::record(p, k, columns, cache);  // an error leaves none: asked again, thrown again
    return *walk;
  }
  void run(int64_t r0, int64_t rows, int64_t c0, int64_t cw, bool with_hbm) {
    const TileWalk& w = recorded();
    sink.load_steps.clear();
    sink.body.clear();
    sink.hbm = 0;
    sink.r0 = r0;
    sink.with_hbm = with_hbm;
    replay.run(w, TileWindow{r0, rows, c0, cw}, sink);
  }
  int64_t place() const;
};

// The emitter's placement (region_allocator.h) of the registers on the counted instructions.
int64_t TileFootprintAnalysis::Impl::place() const {
  const std::vector<Step>&load_steps = sink.load_steps, &body = sink.body;
  auto at = [&](size_t i) -> const Step& {
    return i < load_steps.size() ? load_steps[i] : body[i - load_steps.size()];
  };
  auto uses = [&](size_t i, auto&& use) {
    for (int v : at(i).src) use(v);
    use(at(i).store);
  };
  RegionAllocator ra(0, UINT64_MAX / 2);
  return static_cast<int64_t>(place_registers(
      load_steps.size() + body.size(), replay.register_bytes(), ra,
      [&](size_t i, auto&& def) {
        def(at(i).def);
        def(at(i).def2);
      },
      uses, [](size_t, const std::vector<uint64_t>&) {}));
}

TileFootprintAnalysis::TileFootprintAnalysis(const LoopProgram& p, const Kernel& k, const ColumnSplit* columns,
                                             TileAccessCache* cache, bool vector_chains)
    : own_cache_(cache ? nullptr : std::make_unique<TileAccessCache>(vector_chains)),
      impl_(std::make_unique<Impl>(p, k, columns, cache ? *cache : *own_cache_)) {}
TileFootprintAnalysis::~TileFootprintAnalysis() = default;

TileFootprint TileFootprintAnalysis::tile(int64_t r0, int64_t rows, int64_t c0, int64_t cw) {
  impl_->run(r0, rows, c0, cw, true);
  return {impl_->place(), impl_->sink.hbm};
}

int64_t TileFootprintAnalysis::peak_bytes(int64_t rows, int64_t cw) {
  impl_->run(0, rows, 0, cw, false);
  return impl_->place();
}

int64_t TileFootprintAnalysis::hbm_bytes(int64_t r0, int64_t rows, int64_t c0, int64_t cw) {
  impl_->run(r0, rows, c0, cw, true);
  return impl_->sink.hbm;
}

int64_t TileFootprintAnalysis::hoisted_bytes() { return impl_->recorded().hoisted_bytes; }

int64_t TileFootprintAnalysis::hoisted_hbm_bytes() { return impl_->recorded().hoisted_hbm_bytes; }

}  // namespace lpu
