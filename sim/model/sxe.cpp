#include "model/sxe.h"

#include <algorithm>
#include <cmath>

#include "isa/operands.h"
#include "model/numeric.h"
#include "model/sxe_timing.h"
#include "ref/quantise.h"
#include "support/error.h"

namespace lpu::sim {

Sxe::Sxe(sc_core::sc_module_name name, DeviceContext& ctx, Lmu& lmu)
    : Engine(name, ctx, Unit::Sxe, ctx.arch->sxe.queue_depth, ctx.arch->sxe.streams),
      hbm_socket("hbm_socket"),
      lmu_(lmu) {
  if (ctx.arch->sxe.model == ArchConfig::Sxe::Model::Rtl) rtl_ = make_sxe_rtl_unit(ctx);
}

double Sxe::execute(const IssueTicket& tk, double start_ps) {
  const size_t i = tk.instr;
  const Instruction& in = ctx_.instr(i);
  const auto& cfg = ctx_.arch->sxe;
  const int64_t M = in.rows, K = in.depth, N = in.cols;
  const int64_t eb = dtype_bytes(in.dtype);
  lmu_.check(in.lm_addr, static_cast<uint64_t>(M * N * 4), "sxe.gemm destination");

  // Weight runs: whole block when B is dense, else one run per column (k contiguous) or per
  // row (n contiguous), else one per element (pays whole bursts: a layout to avoid).
  std::vector<Run>& runs = runs_;
  runs.clear();
  if ((in.hbm_rs == 1 && in.hbm_cs == K) || (in.hbm_cs == 1 && in.hbm_rs == N) || (K == 1 && in.hbm_cs == 1) ||
      (N == 1 && in.hbm_rs == 1)) {
    runs.push_back({0, K * N});
  } else if (in.hbm_rs == 1) {
    for (int64_t n = 0; n < N; ++n) runs.push_back({n * in.hbm_cs, K});
  } else if (in.hbm_cs == 1) {
    for (int64_t k = 0; k < K; ++k) runs.push_back({k * in.hbm_rs, N});
  } else {
    for (int64_t k = 0; k < K; ++k)
      for (int64_t n = 0; n < N; ++n) runs.push_back({k * in.hbm_rs + n * in.hbm_cs, 1});
  }
  double now = ctx_.now_ps();
  double hbm_done = start_ps;
  auto& kc = ctx_.kernel_of(in);
  ctx_.hbm_windows.clear();
  // sxe.gemm_gather: every row streams a [K, N] block of its own (an expert's weights), M blocks
  // in all. Which slab a row picks is data, known in functional runs only; the stream is timed
  // at slab 0's address in both modes (one bandwidth model: the address moves no time), so
  // timing and functional runs agree. Rows picking the same slab are not merged: an upper bound.
  const bool gathered = in.opcode == Opcode::SxeGemmGather;
  if (gathered && rtl_)
    throw InputError(strcat("device ", ctx_.device, ": ", print_instruction(in), " (line ", in.line,
                            "): sxe.model rtl runs sxe.gemm only; use sxe.model approx for gathered weights"));
  // Packed weights (docs/quantisation.md): the stream moves whole blocks (codes and f16
  // scales); the dequantiser on the input path adds its stages, and the trees take
  // sxe.packed_lanes narrow weights per lane and cycle.
  const Quant& q = in.quant;
  if (q.on() && rtl_)
    throw InputError(strcat("device ", ctx_.device, ": ", print_instruction(in), " (line ", in.line,
                            "): sxe.model rtl runs unpacked weights only; use sxe.model approx for packed weights"));
  const int lanes = q.on() ? cfg.lanes * cfg.packed_lanes_of(quant_format_name(q.format)) : cfg.lanes;
  const int depth = q.on() ? cfg.pipeline_depth + cfg.dequant_cycles : cfg.pipeline_depth;
  const int64_t blocks = gathered ? M : 1;
  for (int64_t blk = 0; blk < blocks; ++blk)
    for (const Run& run : runs) {
      int64_t lo = run.first * eb, hi = (run.first + run.elems) * eb;
      if (q.on()) packed_span(q, run.first, run.first + run.elems - 1, lo, hi);
      const auto len = static_cast<uint64_t>(hi - lo);
      tlm::tlm_generic_payload& trans = trans_;  // every field set again: one payload for all runs
      trans.set_command(tlm::TLM_READ_COMMAND);
      trans.set_address(in.hbm_addr + static_cast<uint64_t>(lo));
      trans.set_data_length(static_cast<unsigned>(len));
      trans.set_streaming_width(static_cast<unsigned>(len));
      trans.set_byte_enable_ptr(nullptr);
      trans.set_dmi_allowed(false);
      trans.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
      trans.set_data_ptr(nullptr);  // functional reads use the HBM store directly (compute())
      sc_core::sc_time delay = ctx_.ps(start_ps - now);
      hbm_socket->b_transport(trans, delay);
      if (trans.get_response_status() != tlm::TLM_OK_RESPONSE)
        throw InputError(strcat("device ", ctx_.device, ": ", print_instruction(in), " (line ", in.line,
                                ") reads HBM outside the allocated buffers"));
      hbm_done = std::max(hbm_done, now + delay.to_double());
      kc.hbm_read += len;
    }
  append_union(ctx_.hbm_windows, Span::Bandwidth, kc.log);
  double period = ctx_.period.to_double();
  int64_t cols_per_tree = (N + cfg.mac_trees - 1) / cfg.mac_trees;
  double stream_end = hbm_done + period * depth;  // the last beat drains the adder tree
  double lmu_end = lmu_.reserve(start_ps, static_cast<uint64_t>(M * K * 4), static_cast<uint64_t>(M * N * 4));
  // The RTL reads its operands before compute() writes the destination (which may alias them).
  // Weight prefetch (isu.weight_prefetch): the stream started at issue; the MAC work starts
  // when the activation is ready. With sxe.streams > 1 several gemms stream at once, but the
  // MAC trees are one resource: a gemm's first beat enters them after the previous gemm's last
  // beat (its drain overlaps the next gemm's beats).
  double compute_start = std::max({start_ps, tk.inputs_ready_ps, trees_free_ps_});
  // Gathered rows share no weights: M GEMVs, one after another through the trees.
  const double mac_cycles = gathered ? static_cast<double>(M) * mac_tree_cycles(K, cols_per_tree, 1, lanes, depth)
                                     : mac_tree_cycles(K, cols_per_tree, M, lanes, depth);
  double compute_end =
      rtl_ ? rtl_end(in, std::max(start_ps, tk.inputs_ready_ps), hbm_done) : compute_start + period * mac_cycles;
  trees_free_ps_ = std::max(compute_end - period * depth, hbm_done);
  if (q.on()) {
    dequantised_ += static_cast<double>(blocks) * static_cast<double>(K * N);
    widest_packed_lanes_ = std::max(widest_packed_lanes_, lanes / cfg.lanes);
  }
  // The MAC work's own window; the rest of the instruction (stream, drain) is not compute.
  kc.log.push_back({compute_start, compute_end, Span::Compute});
  if (ctx_.functional) compute(in);
  return std::max({compute_end, stream_end, lmu_end});
}

// The element offset of row m's weights: 0, or for sxe.gemm_gather its row index times the
// slab size (the index an fp32 value in local memory, as dma.gather's).
int64_t Sxe::row_slab_offset(const Instruction& in, int64_t m) const {
  if (in.opcode != Opcode::SxeGemmGather) return 0;
  const Operand& ix = in.srcs.at(1);
  const int64_t io = static_cast<int64_t>(ix.addr / 4) + m * ix.rs;
  if (io < 0 || io >= static_cast<int64_t>(ctx_.lmu_data.size()))
    throw InputError(
        strcat("device ", ctx_.device, ": ", print_instruction(in), " reads its row indices outside memory"));
  const float v = ctx_.lmu_data[static_cast<size_t>(io)];
  const double slab = in.srcs.at(2).value;
  if (!(v >= 0) || v != std::floor(v) || static_cast<double>(v) * slab > 9.0e15)
    throw InputError(strcat("device ", ctx_.device, ": ", print_instruction(in), " (line ", in.line, "): row ", m,
                            " index ", v, " is not a slab number"));
  return static_cast<int64_t>(v) * static_cast<int64_t>(slab);
}

void Sxe::compute(const Instruction& in) {
  const int64_t M = in.rows, K = in.depth, N = in.cols;
  const int64_t eb = dtype_bytes(in.dtype);
  const Quant& q = in.quant;
  const Operand& a = in.srcs.at(0);
  std::vector<float> out(static_cast<size_t>(M * N));
  for (int64_t m = 0; m < M; ++m) {
    const int64_t slab = row_slab_offset(in, m);
    for (int64_t n = 0; n < N; ++n) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k) {
        int64_t ao = static_cast<int64_t>(a.addr / 4) + m * a.rs + k * a.cs;
        const int64_t e = slab + k * in.hbm_rs + n * in.hbm_cs;
        // Packed: element e's block (its f16 scale and codes), dequantised on the input path.
        uint64_t bo = in.hbm_addr + static_cast<uint64_t>(q.on() ? q.block_offset(e) : e * eb);
        const auto width = static_cast<uint64_t>(q.on() ? q.block_bytes() : eb);
        if (ao < 0 || ao >= static_cast<int64_t>(ctx_.lmu_data.size()) || bo + width > ctx_.hbm_data.size())
          throw InputError(strcat("device ", ctx_.device, ": ", print_instruction(in), " reads outside memory"));
        const float w =
            q.on() ? quantised_element(&ctx_.hbm_data[bo], e % q.group, q) : load_element(&ctx_.hbm_data[bo], in.dtype);
        acc += static_cast<double>(ctx_.lmu_data[static_cast<size_t>(ao)]) * w;
      }
      out[static_cast<size_t>(m * N + n)] = static_cast<float>(acc);
    }
  }
  std::copy(out.begin(), out.end(), lmu_.data(in.lm_addr));
}

// sxe.model: rtl. The busiest tree's block (ceil(N / mac_trees) columns, all M rows as one
// stream of M x cols dot products) runs through the verilated tree, its weight beats arriving
// at the average rate the HBM reservation delivers them: the tree's M x cols x ceil(K / lanes)
// beats (each weight beat serves the M rows, so the stream needs to deliver only 1/M of them)
// over the cycles from the start to the last weight byte, capped at one beat per cycle. So a memory-bound GEMV stalls
// the RTL just as the stream throttles the closed form. The HBM latency is part of that average rather than a delay of
// the first beat (same end time). Returns when the tree delivered its last result. The verilated tree takes the gemm
// from `earliest_ps` (issue, and the activation ready) or when it is done with the one before: with sxe.streams > 1
// several gemms stream at once (other workers of this engine), and their weights wait in the tree's input buffer
// meanwhile. The beats arrive at the average rate of the rest of the stream (capped at one a cycle).
double Sxe::rtl_end(const Instruction& in, double earliest_ps, double hbm_done) {
  const auto& cfg = ctx_.arch->sxe;
  const int64_t M = in.rows, K = in.depth;
  const int64_t cols = (in.cols + cfg.mac_trees - 1) / cfg.mac_trees;
  const double period = ctx_.period.to_double();
  for (const uint64_t ticket = rtl_next_ticket_++; ticket != rtl_serving_;) sc_core::wait(rtl_turn_);
  const double now = ctx_.now_ps();
  if (earliest_ps > now) sc_core::wait(ctx_.ps(earliest_ps - now));
  const double tree_start = std::max(earliest_ps, now);
  double beats = static_cast<double>(M * cols) * std::ceil(static_cast<double>(K) / cfg.lanes);
  double stream_cycles = (hbm_done - tree_start) / period;
  double rate = stream_cycles > 0 ? std::min(1.0, beats / stream_cycles) : 1.0;
  SxeRtlRun r =
      ctx_.functional ? run_rtl_checked(in, cols, rate) : rtl_->run(M, K, cols, rate, nullptr, nullptr, nullptr);
  ++rtl_serving_;
  rtl_turn_.notify(sc_core::SC_ZERO_TIME);
  ++rtl_gemms_;
  rtl_cycles_ += r.cycles;
  rtl_stall_cycles_ += r.stall_cycles;
  return tree_start + period * static_cast<double>(r.cycles);
}

namespace {

// Symmetric int16 quantisation of `v` by its largest magnitude.
std::vector<int16_t> quantise(const std::vector<double>& v) {
  double amax = 0;
  for (double e : v) amax = std::max(amax, std::abs(e));
  std::vector<int16_t> q(v.size(), 0);
  if (amax == 0) return q;
  for (size_t i = 0; i < v.size(); ++i) q[i] = static_cast<int16_t>(std::lround(v[i] / amax * 32767.0));
  return q;
}

}  // namespace

// Functional mode with sxe.model: rtl. The values the program sees come from compute()
// (fp32): the RTL is an integer stand-in for FP16 arithmetic. But the tree is fed the real
// operands, quantised to int16, and its exact integer results must equal a C++ reference:
// a wrong beat order, lane mapping or lost result in the in-device driver fails the run.
SxeRtlRun Sxe::run_rtl_checked(const Instruction& in, int64_t cols, double beats_per_cycle) {
  const int64_t M = in.rows, K = in.depth;
  cols = std::min(cols, in.cols);
  const int64_t eb = dtype_bytes(in.dtype);
  const Operand& a = in.srcs.at(0);
  auto outside = [&] {
    return InputError(strcat("device ", ctx_.device, ": ", print_instruction(in), " reads outside memory"));
  };
  std::vector<double> wv(static_cast<size_t>(K * cols)), xv(static_cast<size_t>(M * K));
  for (int64_t k = 0; k < K; ++k) {
    for (int64_t n = 0; n < cols; ++n) {
      uint64_t bo = in.hbm_addr + static_cast<uint64_t>((k * in.hbm_rs + n * in.hbm_cs) * eb);
      if (bo + static_cast<uint64_t>(eb) > ctx_.hbm_data.size()) throw outside();
      wv[static_cast<size_t>(k * cols + n)] = load_element(&ctx_.hbm_data[bo], in.dtype);
    }
    for (int64_t m = 0; m < M; ++m) {
      int64_t ao = static_cast<int64_t>(a.addr / 4) + m * a.rs + k * a.cs;
      if (ao < 0 || ao >= static_cast<int64_t>(ctx_.lmu_data.size())) throw outside();
      xv[static_cast<size_t>(m * K + k)] = ctx_.lmu_data[static_cast<size_t>(ao)];
    }
  }
  std::vector<int16_t> W = quantise(wv), x = quantise(xv);
  std::vector<int64_t> y;
  SxeRtlRun run = rtl_->run(M, K, cols, beats_per_cycle, &W, &x, &y);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < cols; ++n) {
      int64_t ref = 0;
      for (int64_t k = 0; k < K; ++k)
        ref += int64_t{W[static_cast<size_t>(k * cols + n)]} * x[static_cast<size_t>(m * K + k)];
      if (y[static_cast<size_t>(m * cols + n)] != ref)
        throw InternalError(strcat("sxe.model rtl: ", print_instruction(in), " (line ", in.line, "): the RTL gave ",
                                   y[static_cast<size_t>(m * cols + n)], " for output [", m, ", ", n, "], expected ",
                                   ref, " (int16-quantised operands)"));
    }
  return run;
}

// Busy while any of its gemm streams is in flight (sxe.streams may overlap them).
EngineReport Sxe::make_report() const {
  EngineReport r = Engine::make_report();
  r.busy_ps = counters_.occupied_ps;
  r.workers = 1;
  r.work_unit = "MACs";
  // Packed weights: a lane takes sxe.packed_lanes of them a cycle (the widest format it ran).
  r.peak_work_per_cycle = static_cast<double>(ctx_.arch->sxe.mac_trees) * ctx_.arch->sxe.lanes * widest_packed_lanes_;
  return r;
}

void Sxe::add_to(SimStats& s) const {
  s.sxe_rtl_gemms = rtl_gemms_;
  s.sxe_rtl_cycles = rtl_cycles_;
  s.sxe_rtl_stall_cycles = rtl_stall_cycles_;
}

void Sxe::add_to(EnergyEvents& ev) const {
  ev.sxe_macs += counters_.work;
  ev.sxe_dequantised += dequantised_;
}

}  // namespace lpu::sim
