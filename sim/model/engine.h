// Base of every execution engine (DMA, VXE, later SXE): an issue queue filled by the ISU and
// `workers` SC_THREADs that each take the oldest queued instruction, compute its duration
// (and, in functional mode, its data effect) in one call, wait once, and retire it.
// One wait per instruction keeps the model transaction-level (no per-cycle processes).
#pragma once
#include <deque>

#include "model/sim_context.h"

namespace lpu::sim {

// Useful work of one instruction: MACs (sxe.gemm), element operations (vxe.*), bytes (dma.*).
double useful_work(const Instruction& in);

class Isu;

// The ISU -> engine half of their interface: an instruction to run, and when its last input
// is ready when that is later than its issue (isu.chaining: a VXE op issued on a running
// sxe.gemm's first results; isu.weight_prefetch: an sxe.gemm issued before its activation).
// The engine -> ISU half is Isu::started (when the instruction will finish, known once the
// engine starts it) and Isu::retire.
struct IssueTicket {
  size_t instr = 0;
  double inputs_ready_ps = 0;  // 0: every input is ready at issue
};

class Engine : public sc_core::sc_module {
 public:
  Engine(sc_core::sc_module_name name, DeviceContext& ctx, int queue_depth, int workers);

  void attach(Isu* isu) { isu_ = isu; }
  bool full() const { return static_cast<int>(queue_.size()) >= depth_; }
  void push(const IssueTicket& t);
  size_t queued() const { return queue_.size(); }
  int busy_workers() const { return busy_; }
  // Occupancy values for a VCD (sampled by the trace file whenever they change).
  const int& traced_queue() const { return queued_; }
  const int& traced_busy() const { return busy_; }
  int engine_index() const { return index_; }
  bool in_order() const { return workers_ == 1; }

 protected:
  // Executes the ticket's instruction starting at `start_ps`; returns its completion time
  // (ps). It may wait (SC_THREAD context), but the models other than the RTL SXE compute at once.
  virtual double execute(const IssueTicket& tk, double start_ps) = 0;
  // What an instruction of this engine is doing for its kernel while it is in flight, where
  // nothing of higher priority covers it (attribution.h): a DMA or an SXE stream waits on
  // memory (setup, HBM latency, channels busy with other kernels' bytes) unless its bytes are
  // on a channel; the VXE computes; the host and the ESL are the device waiting outside itself.
  virtual Span occupancy() const { return Span::Latency; }
  DeviceContext& ctx_;

 private:
  void worker();
  struct Queued {
    IssueTicket ticket;
    double pushed_ps;  // queue time is issue-path time (Span::Issue)
  };
  std::deque<Queued> queue_;
  sc_core::sc_event pushed_;
  Isu* isu_ = nullptr;
  int depth_;
  int busy_ = 0;
  double occupied_since_ = 0;  // when busy_ last rose from 0
  int queued_ = 0;
  int workers_;
  int index_;
};

}  // namespace lpu::sim
