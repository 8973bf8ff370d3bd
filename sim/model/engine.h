// Base of every execution engine (DMA, VXE, later SXE): an issue queue filled by the ISU and
// `workers` processes that each take the oldest queued instruction, compute its duration
// (and, in functional mode, its data effect) in one call, wait once, and retire it.
// One wait per instruction keeps the model transaction-level (no per-cycle processes).
// The workers and the ISU are SC_METHODs, each activation running until its next wait, unless
// an RTL model runs in the device (processes_are_threads): its engine waits inside execute()
// for the clocked pipeline, which only an SC_THREAD can, and then every process of the device
// is an SC_THREAD. Both kinds run the same steps in the same order: SystemC keeps one FIFO of
// runnable methods and one of threads, and a device with processes of one kind only uses one,
// so the statistics are the same either way (scripts/stats_compare.sh); methods need no
// coroutine stack, whose mapping and unmapping was 60% of a short run's cost.
#pragma once
#include <deque>
#include <memory>

#include "model/sim_context.h"
#include "simulator.h"

namespace lpu::sim {

class Isu;

// Whether the device's processes are SC_THREADs (an RTL model waits inside execute()) rather
// than SC_METHODs. The one place that decides it: the engines and the ISU ask it.
bool processes_are_threads(const ArchConfig& arch);

// What an engine did, reported at the end of the simulation (SimStats' EngineStats is made
// from it): its own counters and how to read them.
struct EngineReport {
  std::string name;
  double busy_ps = 0;     // summed over workers (the SXE: time with a gemm in flight)
  double stalled_ps = 0;  // its next instruction waited at the ISU (hazard or full queue)
  double work = 0;        // useful work done (isa/operands.h: instruction_work), in `work_unit`
  uint64_t instructions = 0;
  int workers = 1;                 // busy fraction = busy / (cycles x workers)
  std::string work_unit;           // "MACs" | "element_ops" | "bytes" | "" (no peak rate)
  double peak_work_per_cycle = 0;  // 0: utilisation is the busy fraction
};

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
  friend class LayerMemo;  // reads and moves its state at block boundaries (layer_memo.h)

 public:
  Engine(sc_core::sc_module_name name, DeviceContext& ctx, Unit unit, int queue_depth, int workers);

  // The device's registry (Device::add_engine) numbers its engines and connects them to the ISU.
  void attach(Isu* isu, int index) {
    isu_ = isu;
    index_ = index;
  }
  Unit unit() const { return unit_; }
  bool full() const { return static_cast<int>(queue_.size()) >= depth_; }
  void push(const IssueTicket& t);
  size_t queued() const { return queue_.size(); }
  int busy_workers() const { return busy_; }
  // Occupancy values for a VCD (sampled by the trace file whenever they change).
  const int& traced_queue() const { return queued_; }
  const int& traced_busy() const { return busy_; }
  int engine_index() const { return index_; }
  bool in_order() const { return workers_ == 1; }
  // The ISU's side: its next instruction waited `ps` at the ISU.
  void add_stall(double ps) { counters_.stalled_ps += ps; }
  // Set at the end of the simulation (end_of_simulation).
  const EngineReport& report() const { return report_; }
  // What else it counted, for the run's statistics: of its device (per device), of the run
  // (device 0's only), and the energy events its work stands for.
  virtual void add_to(DeviceStats&) const {}
  virtual void add_to(SimStats&) const {}
  virtual void add_to(EnergyEvents&) const {}

 protected:
  // Executes the ticket's instruction starting at `start_ps`; returns its completion time
  // (ps). It may wait (SC_THREAD context), but the models other than the RTL SXE compute at once.
  virtual double execute(const IssueTicket& tk, double start_ps) = 0;
  // What an instruction of this engine is doing for its kernel while it is in flight, where
  // nothing of higher priority covers it (attribution.h): a DMA or an SXE stream waits on
  // memory (setup, HBM latency, channels busy with other kernels' bytes) unless its bytes are
  // on a channel; the VXE computes; the host and the ESL are the device waiting outside itself.
  virtual Span occupancy() const { return Span::Latency; }
  // Its counters as reported; engines with a unit of work and a peak rate say so.
  virtual EngineReport make_report() const;
  void end_of_simulation() override { report_ = make_report(); }
  DeviceContext& ctx_;
  struct Counters {
    double busy_ps = 0;      // summed over workers
    double occupied_ps = 0;  // time with at least one instruction running (the SXE's busy time)
    double work = 0;
    double stalled_ps = 0;
    uint64_t instructions = 0;
  };
  Counters counters_;

 private:
  void worker(size_t which);       // the SC_THREAD driver of worker `which`
  void worker_step(size_t which);  // the SC_METHOD driver: one activation of worker `which`
  // An instruction a worker started: which, and its start and end (ps).
  struct Started {
    size_t instr = 0;
    double start = 0, end = 0;
    bool running = false;  // the method driver waits for its end
  };
  bool start_next(Started& s);                  // takes the oldest queued instruction; false: stopped on an error
  void finish(const Started& s);                // at its end: counters, trace, retire
  std::vector<Started> method_work_;            // per worker, for the method driver
  std::unique_ptr<sc_core::sc_event[]> wakes_;  // per worker: its timed wait ends (wake_order.h)
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
  int index_ = 0;
  Unit unit_;
  EngineReport report_;
};

}  // namespace lpu::sim
