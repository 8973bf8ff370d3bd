#include "model/dma.h"

#include "model/numeric.h"
#include "support/error.h"

namespace lpu::sim {

Dma::Dma(sc_core::sc_module_name name, DeviceContext& ctx, Lmu& lmu)
    : Engine(name, ctx, Unit::Dma, ctx.arch->dma.queue_depth, ctx.arch->dma.engines),
      hbm_socket("hbm_socket"),
      lmu_(lmu) {}

double Dma::execute(const IssueTicket& tk, double start_ps) {
  const size_t i = tk.instr;
  const Instruction& in = ctx_.instr(i);
  const bool gather = has_role(in.opcode, role::LmIndices);
  const bool load = has_role(in.opcode, role::HbmTileRead) || gather;
  const int64_t eb = dtype_bytes(in.dtype);
  const int64_t R = in.rows, C = in.cols;
  lmu_.check(in.lm_addr, static_cast<uint64_t>(R * C * 4), gather ? "dma.gather" : load ? "dma.load" : "dma.store");

  // Runs: (first element row, first element col, element count) of contiguous HBM bytes.
  std::vector<Run>& runs = runs_;
  runs.clear();
  bool row_contig = C == 1 || in.hbm_cs == 1;
  // HBM element offset of each row: r * rs, or for a gather the row's table index * rs (the
  // indices are only known in functional mode; timing assumes distinct consecutive rows).
  std::vector<int64_t>& row_base = row_base_;
  row_base.resize(static_cast<size_t>(R));
  for (int64_t r = 0; r < R; ++r) {
    int64_t row = r;
    if (gather && ctx_.functional) {
      const Operand& ix = in.srcs.at(0);
      int64_t off = static_cast<int64_t>(ix.addr / 4) + r * ix.rs;
      if (off < 0 || off >= static_cast<int64_t>(ctx_.lmu_data.size()))
        throw InputError(
            strcat("device ", ctx_.device, ": ", print_instruction(in), " reads indices outside local memory"));
      row = static_cast<int64_t>(ctx_.lmu_data[static_cast<size_t>(off)]);
      if (row < 0)
        throw InputError(strcat("device ", ctx_.device, ": ", print_instruction(in), ": negative index ", row));
    }
    row_base[static_cast<size_t>(r)] = row * in.hbm_rs;
  }
  if (!gather && row_contig && (R == 1 || in.hbm_rs == C)) {
    runs.push_back({0, 0, R * C});
  } else if (row_contig) {
    for (int64_t r = 0; r < R; ++r) runs.push_back({r, 0, C});
  } else {
    for (int64_t r = 0; r < R; ++r)
      for (int64_t c = 0; c < C; ++c) runs.push_back({r, c, 1});
  }

  double setup_end = start_ps + ctx_.period.to_double() * ctx_.arch->dma.setup_cycles;
  double now = ctx_.now_ps();
  double hbm_done = setup_end;
  auto& kc = ctx_.kernel_of(in);
  ctx_.hbm_windows.clear();
  for (const Run& run : runs) {
    int64_t elem = row_base[static_cast<size_t>(run.r)] + run.c * in.hbm_cs;
    uint64_t addr = in.hbm_addr + static_cast<uint64_t>(elem * eb);
    uint64_t len = static_cast<uint64_t>(run.n * eb);
    tlm::tlm_generic_payload& trans = trans_;  // every field set again: one payload for all runs
    trans.set_command(load ? tlm::TLM_READ_COMMAND : tlm::TLM_WRITE_COMMAND);
    trans.set_address(addr);
    trans.set_data_length(static_cast<unsigned>(len));
    trans.set_streaming_width(static_cast<unsigned>(len));
    trans.set_byte_enable_ptr(nullptr);
    trans.set_dmi_allowed(false);
    trans.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    float* lm = ctx_.functional ? lmu_.data(in.lm_addr) + run.r * C + run.c : nullptr;
    if (ctx_.functional) {
      staging_.resize(len);
      trans.set_data_ptr(staging_.data());
      if (!load)
        for (int64_t k = 0; k < run.n; ++k) store_element(&staging_[static_cast<size_t>(k * eb)], in.dtype, lm[k]);
    } else {
      trans.set_data_ptr(nullptr);
    }
    sc_core::sc_time delay = ctx_.ps(setup_end - now);
    hbm_socket->b_transport(trans, delay);
    if (trans.get_response_status() != tlm::TLM_OK_RESPONSE)
      throw InputError(strcat("device ", ctx_.device, ": ", print_instruction(in), " (line ", in.line,
                              ") accesses HBM outside the allocated buffers"));
    hbm_done = std::max(hbm_done, now + delay.to_double());
    if (ctx_.functional && load)
      for (int64_t k = 0; k < run.n; ++k) lm[k] = load_element(&staging_[static_cast<size_t>(k * eb)], in.dtype);
    if (load)
      kc.hbm_read += len;
    else
      kc.hbm_write += len;
  }
  append_union(ctx_.hbm_windows, Span::Bandwidth, kc.log);
  const auto tile = static_cast<uint64_t>(R * C * 4);  // a load writes the tile, a store reads it
  double lmu_done = lmu_.reserve(setup_end, load ? 0 : tile, load ? tile : 0);
  return std::max(hbm_done, lmu_done);
}

EngineReport Dma::make_report() const {
  EngineReport r = Engine::make_report();
  r.work_unit = "bytes";
  r.peak_work_per_cycle = ctx_.arch->hbm_bytes_per_cycle();
  return r;
}

}  // namespace lpu::sim
