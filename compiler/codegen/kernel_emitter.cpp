#include "codegen/kernel_emitter.h"

#include <algorithm>

#include "codegen/gathered_weights.h"
#include "codegen/region_allocator.h"
#include "codegen/tile_plan.h"
#include "codegen/tile_replay.h"
#include "support/error.h"

namespace lpu {
namespace {

// An instruction whose local-memory addresses still name virtual registers.
struct Pending {
  Instruction in;
  int def = -1;              // vid written (lm_addr = its address + def_offset)
  int acc_def = -1;          // vid of a vector op's row reduction (acc_addr = its address)
  uint64_t def_offset = 0;   // several instructions may fill parts of one register
  std::vector<int> src_vid;  // per source operand, -1 when absolute or immediate
  int store_vid = -1;        // dma.store reads lm_addr from this vid (+ store_offset)
  uint64_t store_offset = 0;
};

// Rows [r0, r0 + rows) of an access split into runs whose HBM offsets advance by one
// stride: one DMA each (a single run when the rows are affine).
struct RowRun {
  int64_t row;  // first row, relative to r0
  int64_t count;
  int64_t first;   // element offset of the first row
  int64_t stride;  // elements between consecutive rows of the run (0 for one row)
};
std::vector<RowRun> row_runs(const AccessPattern& ap, int64_t r0, int64_t rows) {
  std::vector<RowRun> runs;
  for (int64_t r = 0; r < rows;) {
    RowRun run{r, 1, ap.row_offset(r0 + r), 0};
    if (r + 1 < rows) {
      run.stride = ap.row_offset(r0 + r + 1) - run.first;
      run.count = 2;
      while (r + run.count < rows && ap.row_offset(r0 + r + run.count) - run.first == run.stride * run.count)
        ++run.count;
    }
    runs.push_back(run);
    r += run.count;
  }
  return runs;
}

// A weight stored packed (graph/types.h, Quant) is read only through the SXE's input path,
// which dequantises it (a matmul's streamed B, sxe.gemm or sxe.gemm_gather): any other reader
// would see blocks of codes and scales, not elements.
void refuse_packed(const Buffer& b, const LoopNode& node, const char* how) {
  if (b.quant.on())
    throw InputError(strcat("node ", node.name, ": reads ", b.name, ", a weight stored packed (", quant_str(b.quant),
                            "), by ", how, "; only a matmul's streamed weights B may be packed"));
}

// The byte offset of element `e` of `b` where an sxe.gemm's B starts: packed B must start a
// block (the SXE counts blocks from its B address).
uint64_t packed_offset(const Buffer& b, const LoopNode& node, int64_t e) {
  if (!b.quant.on()) return static_cast<uint64_t>(e * dtype_bytes(b.type.dtype));
  if (e % b.quant.group)
    throw InputError(strcat("node ", node.name, ": streams ", b.name, " (", quant_str(b.quant), ") from element ", e,
                            ", which does not start a group"));
  return static_cast<uint64_t>(b.quant.block_offset(e));
}

Operand operand(const TileVal& v) {
  Operand o;
  if (v.imm) {
    o.immediate = true;
    o.value = v.value;
    return o;
  }
  o.addr = v.addr;
  o.rs = v.rows > 1 ? v.rs : 0;
  o.cs = v.cols > 1 ? v.cs : 0;
  return o;
}

}  // namespace

// The replay's sink for emitting: each hook writes the instructions of one op of the tile.
struct KernelEmitter::Impl {
  const TileWalk& walk;
  int id;
  const std::map<std::string, uint64_t>& hbm;
  TileReplay replay;
  int64_t r0 = 0;
  bool first_tile = true;
  std::vector<Instruction> hoisted_code;
  std::vector<Pending> loads, body;  // the tile's DMAs in, then its compute and stores

  Impl(const TileWalk& w, int kernel_id, const std::map<std::string, uint64_t>& hbm_map)
      : walk(w), id(kernel_id), hbm(hbm_map) {}

  uint64_t hbm_base(const std::string& b) const {
    auto it = hbm.find(b);
    return it == hbm.end() ? 0 : it->second;
  }
  // Elements [off, off + col_stride * (count - 1)] inside the load's buffer.
  static void check_bounds(const TileWalk::Load& l, int64_t off, int64_t count) {
    int64_t last = off + l.col_stride * (count - 1);
    if (off < 0 || last >= l.buf->type.numel() || last < 0)
      throw InternalError(
          strcat("codegen: load of ", l.expr->buffer, "[", l.expr->index.str(), "] out of bounds in ", l.node->name));
  }
  Instruction dma_load(const TileWalk::Load& l, int64_t ncols) const {
    Instruction in;
    in.opcode = Opcode::DmaLoad;
    in.dtype = l.buf->type.dtype;
    in.cols = ncols;
    in.hbm_cs = l.col_stride;
    in.kernel = id;
    return in;
  }
  void emit(Instruction in, const TileVal& dst, const TileVal* const* srcs, size_t n) {
    in.kernel = id;
    // A window of a wider register (a concatenation's part): its rows lie a joined row apart.
    if (dst.rows > 1 && dst.rs != dst.cols) in.lm_rs = dst.rs;
    Pending pd;
    pd.def = dst.vid;
    pd.def_offset = dst.addr;
    for (size_t i = 0; i < n; ++i) {
      in.srcs.push_back(operand(*srcs[i]));
      pd.src_vid.push_back(srcs[i]->imm ? -1 : srcs[i]->vid);
    }
    pd.in = std::move(in);
    body.push_back(std::move(pd));
  }

  // One DMA per run of rows whose HBM offsets advance by one stride (all rows when affine).
  void tile_load(const TileWalk::Load& l, const TileVal& dst, int64_t coff) {
    refuse_packed(*l.buf, *l.node, "a DMA load");
    const uint64_t hbase = hbm_base(l.expr->buffer);
    for (const RowRun& run : row_runs(*l.ap, r0, dst.rows)) {
      check_bounds(l, run.first + coff, dst.cols);
      check_bounds(l, run.first + coff + run.stride * (run.count - 1), dst.cols);
      Pending pd;
      pd.in = dma_load(l, dst.cols);
      pd.in.rows = run.count;
      pd.in.hbm_addr = hbase + static_cast<uint64_t>((run.first + coff) * l.eb);
      pd.in.hbm_rs = run.count > 1 ? run.stride : 0;
      pd.def = dst.vid;
      pd.def_offset = static_cast<uint64_t>(run.row * dst.cols * kLmElem);
      loads.push_back(pd);
    }
  }
  // Two-level columns: one DMA per row and block.
  void block_load(const TileWalk::Load& l, const TileVal& dst, int64_t c0) {
    refuse_packed(*l.buf, *l.node, "a DMA load");
    const AccessPattern& ap = *l.ap;
    const int64_t D = l.block, cw = dst.cols;
    for (int64_t r = 0; r < dst.rows; ++r)
      for (int64_t j = c0 / D; j < (c0 + cw) / D; ++j) {
        int64_t first = ap.row_offset(r0 + r) + j * ap.col_outer_stride;
        check_bounds(l, first, D);
        Pending pd;
        pd.in = dma_load(l, D);
        pd.in.rows = 1;
        pd.in.hbm_addr = hbm_base(l.expr->buffer) + static_cast<uint64_t>(first * l.eb);
        pd.def = dst.vid;
        pd.def_offset = static_cast<uint64_t>((r * cw + j * D - c0) * kLmElem);
        loads.push_back(pd);
      }
  }
  void hoisted_load(const TileWalk::Load& l, const TileVal& v) {
    refuse_packed(*l.buf, *l.node, "a DMA load");
    if (!first_tile) return;
    check_bounds(l, l.ap->base, v.cols);
    Instruction in = dma_load(l, v.cols);
    in.rows = 1;
    in.lm_addr = v.addr;
    in.hbm_addr = hbm_base(l.expr->buffer) + static_cast<uint64_t>(l.ap->base * l.eb);
    hoisted_code.push_back(in);
  }

  void vxe_op(ScalarOp sop, const TileVal& dst, const TileVal* const* srcs, size_t n, const VxeChain& chain) {
    Instruction in;
    in.opcode = Opcode::VxeOp;
    in.vop = sop;
    in.post = chain.post;
    in.acc = chain.acc;
    in.rows = dst.rows;
    in.cols = dst.cols;
    emit(std::move(in), dst, srcs, n);
    if (chain.acc) body.back().acc_def = chain.acc_dst.vid;
  }
  void vxe_reduce(ReductionType rop, int64_t cols, const TileVal& dst, const TileVal& src) {
    Instruction in;
    in.opcode = Opcode::VxeReduce;
    in.rop = rop;
    in.rows = src.rows;
    in.cols = cols;
    const TileVal* s = &src;
    emit(std::move(in), dst, &s, 1);
  }
  void vxe_mov(const TileVal& dst, const TileVal& src) {
    Instruction in;
    in.opcode = Opcode::VxeMov;
    in.rows = dst.rows;
    in.cols = dst.cols;
    const TileVal* s = &src;
    emit(std::move(in), dst, &s, 1);
  }

  void matmul(const TileWalk::Op& op, const TileVal& a, const TileVal& dst, int64_t c0);
  void matmul_gathered(const TileWalk::Op& op, const TileVal& a, const TileVal& idx, const TileVal& dst, int64_t c0);
  void gather(const TileWalk::Op& op, const TileVal& idx, const TileVal& dst, int64_t c0);
  void store(const TileWalk::Op& op, const TileVal& v, int64_t c0);
  int64_t place(uint64_t base, uint64_t limit, std::vector<Instruction>& out);
};

// B streams from HBM; rows sharing one B matrix form one instruction (GQA groups, GEMM rows).
// Under column tiling N is the tile's window of columns [c0, c0 + N): B's columns of the tile.
void KernelEmitter::Impl::matmul(const TileWalk::Op& op, const TileVal& a, const TileVal& dst, int64_t c0) {
  const TileWalk::MatmulB& m = *op.matmul;
  const Buffer& bbuf = *m.buf;
  const int64_t K = m.K, N = dst.cols, rows = dst.rows;
  for (int64_t r = 0; r < rows;) {
    int64_t base = m.rows_of_b.row_offset(r0 + r);
    int64_t n = 1;
    while (r + n < rows && m.rows_of_b.row_offset(r0 + r + n) == base) ++n;
    base += m.ns * c0;
    int64_t last = base + m.ks * (K - 1) + m.ns * (N - 1);
    if (base < 0 || last >= bbuf.type.numel())
      throw InternalError(strcat("codegen: matmul B of ", op.node->name, " out of bounds"));
    Pending pd;
    Instruction& in = pd.in;
    in.opcode = Opcode::SxeGemm;
    in.dtype = bbuf.type.dtype;
    in.rows = n;
    in.depth = K;
    in.cols = N;
    in.hbm_addr = hbm_base(m.b->buffer) + packed_offset(bbuf, *op.node, base);
    in.quant = bbuf.quant;
    in.hbm_rs = m.ks;
    in.hbm_cs = m.ns;
    in.kernel = id;
    TileVal arow = a;
    if (a.rows > 1) arow.addr = a.addr + static_cast<uint64_t>(r * a.rs * kLmElem);
    in.srcs.push_back(operand(arow));
    if (n > 1 && a.rows == 1) in.srcs[0].rs = 0;
    pd.def = dst.vid;
    pd.def_offset = static_cast<uint64_t>(r * N * kLmElem);
    pd.src_vid.push_back(a.vid);
    body.push_back(pd);
    r += n;
  }
}

// A matmul streaming an elided gather's slabs from its table: one sxe.gemm_gather.
void KernelEmitter::Impl::matmul_gathered(const TileWalk::Op& op, const TileVal& a, const TileVal& idx,
                                          const TileVal& dst, int64_t c0) {
  const GatheredWeights& gw = *op.gathered;
  const LoopNode& node = *op.node;
  const std::string& table = gw.gather->gather_table;
  const Buffer& tbuf = *op.buf;
  if (tbuf.quant.on() && gw.slab % tbuf.quant.group)
    throw InputError(strcat("node ", node.name, ": packed weights ", table, " (", quant_str(tbuf.quant),
                            ") picked in slabs of ", gw.slab, " elements, not a whole number of groups"));
  Pending pd;
  Instruction& in = pd.in;
  in.opcode = Opcode::SxeGemmGather;
  in.dtype = tbuf.type.dtype;
  in.rows = dst.rows;
  in.depth = node.reduction_ranges.at(0);
  in.cols = dst.cols;
  in.hbm_addr = hbm_base(table) + packed_offset(tbuf, node, gw.offset + gw.ns * c0);
  in.quant = tbuf.quant;
  in.hbm_rs = gw.ks;
  in.hbm_cs = gw.ns;
  in.kernel = id;
  in.srcs.push_back(operand(a));
  if (dst.rows > 1 && a.rows == 1) in.srcs[0].rs = 0;
  in.srcs.push_back(operand(idx));
  Operand slab;
  slab.immediate = true;
  slab.value = static_cast<double>(gw.slab);
  in.srcs.push_back(slab);
  pd.def = dst.vid;
  pd.src_vid = {a.vid, idx.vid, -1};
  body.push_back(pd);
}

// The indices' rows pick table rows: one dma.gather of the tile's window [c0, c0 + D) of each.
void KernelEmitter::Impl::gather(const TileWalk::Op& op, const TileVal& idx, const TileVal& dst, int64_t c0) {
  const LoopNode& node = *op.node;
  const Buffer& table = *op.buf;
  refuse_packed(table, node, "a row gather");
  Pending pd;
  Instruction& in = pd.in;
  in.opcode = Opcode::DmaGather;
  in.dtype = table.type.dtype;
  in.rows = dst.rows;
  in.cols = dst.cols;
  in.hbm_addr = hbm_base(node.gather_table) + static_cast<uint64_t>(c0 * dtype_bytes(table.type.dtype));
  in.hbm_rs = node.cols();
  in.hbm_cs = 1;
  in.kernel = id;
  in.srcs.push_back(operand(idx));
  if (idx.rows > 1) in.srcs[0].rs = idx.rs;
  pd.def = dst.vid;
  pd.src_vid.push_back(idx.vid);
  body.push_back(pd);
}

void KernelEmitter::Impl::store(const TileWalk::Op& op, const TileVal& v, int64_t c0) {
  const AccessPattern& sp = *op.store_ap;
  const int64_t rows = v.rows, ncols = v.cols, eb = op.eb;
  const uint64_t hbase = hbm_base(op.node->out());
  Pending st;
  st.in.opcode = Opcode::DmaStore;
  st.in.dtype = op.buf->type.dtype;
  st.in.rows = rows;
  st.in.cols = ncols;
  st.in.hbm_cs = ncols > 1 ? sp.col_stride : 0;
  st.in.kernel = id;
  st.store_vid = v.vid;
  if (op.block) {  // two-level columns: a DMA per row and block
    const int64_t D = op.block;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = c0 / D; j < (c0 + ncols) / D; ++j) {
        Pending part = st;
        part.in.rows = 1;
        part.in.cols = D;
        part.in.hbm_addr = hbase + static_cast<uint64_t>((sp.row_offset(r0 + r) + j * sp.col_outer_stride) * eb);
        part.in.hbm_rs = 0;
        part.store_offset = static_cast<uint64_t>((r * ncols + j * D - c0) * kLmElem);
        body.push_back(part);
      }
    return;
  }
  // One DMA per run of rows whose HBM offsets advance by one stride.
  for (const RowRun& run : row_runs(sp, r0, rows)) {
    Pending part = st;
    part.in.rows = run.count;
    part.in.hbm_addr = hbase + static_cast<uint64_t>((run.first + sp.col_stride * c0) * eb);
    part.in.hbm_rs = run.count > 1 ? run.stride : 0;
    part.store_offset = static_cast<uint64_t>(run.row * ncols * kLmElem);
    body.push_back(part);
  }
}

// The tile's registers placed (region_allocator.h) over its sequence, loads first (prefetch),
// then compute and stores; each instruction gets its addresses.
int64_t KernelEmitter::Impl::place(uint64_t base, uint64_t limit, std::vector<Instruction>& out) {
  std::vector<Pending*> seq;
  for (auto& pd : loads) seq.push_back(&pd);
  for (auto& pd : body) seq.push_back(&pd);
  RegionAllocator ra(base, limit);
  auto defs = [&](size_t i, auto&& def) {
    def(seq[i]->def);
    def(seq[i]->acc_def);
  };
  auto uses = [&](size_t i, auto&& use) {
    for (int v : seq[i]->src_vid) use(v);
    use(seq[i]->store_vid);
  };
  auto placed = [&](size_t i, const std::vector<uint64_t>& addr) {
    Pending& pd = *seq[i];
    if (pd.def >= 0) pd.in.lm_addr = addr[static_cast<size_t>(pd.def)] + pd.def_offset;
    if (pd.acc_def >= 0) pd.in.acc_addr = addr[static_cast<size_t>(pd.acc_def)];
    for (size_t k = 0; k < pd.src_vid.size(); ++k)
      if (pd.src_vid[k] >= 0) pd.in.srcs[k].addr += addr[static_cast<size_t>(pd.src_vid[k])];
    if (pd.store_vid >= 0) pd.in.lm_addr = addr[static_cast<size_t>(pd.store_vid)] + pd.store_offset;
    out.push_back(pd.in);
  };
  return static_cast<int64_t>(place_registers(seq.size(), replay.register_bytes(), ra, defs, uses, placed));
}

KernelEmitter::KernelEmitter(const TileWalk& walk, int kernel_id, const std::map<std::string, uint64_t>& hbm)
    : impl_(std::make_unique<Impl>(walk, kernel_id, hbm)) {}
KernelEmitter::~KernelEmitter() = default;

int64_t KernelEmitter::emit_tile(int64_t r0, int64_t rows, int64_t c0, int64_t cw, uint64_t base, uint64_t limit,
                                 std::vector<Instruction>& out) {
  Impl& e = *impl_;
  e.r0 = r0;
  e.loads.clear();
  e.body.clear();
  e.replay.run(e.walk, TileWindow{r0, rows, c0, cw}, e);
  e.first_tile = false;
  return e.place(base, limit, out);
}

const std::vector<Instruction>& KernelEmitter::hoisted_code() const { return impl_->hoisted_code; }

}  // namespace lpu
