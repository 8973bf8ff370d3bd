#include "rtl_vxe.h"

#include <verilated.h>
#include <verilated_vcd_sc.h>

#include <algorithm>
#include <memory>

#include "rtl_variants.h"  // generated: LPU_SFU_MAX_LANES, LPU_SFU_VARIANTS(X), the model headers
#include "sc_kernel.h"
#include "sfu_port.h"
#include "support/error.h"

namespace lpu::rtl {

namespace {

// The standalone bench: a free-running clock, reset for two edges, one pipeline; one
// SC_METHOD on the rising edge accounts the handshakes and drives the next cycle.
template <class Model>
class SfuBench : public sc_core::sc_module {
 public:
  using Pipe = SfuPipe<Model, LPU_SFU_MAX_LANES>;
  SC_HAS_PROCESS(SfuBench);

  SfuBench(sc_core::sc_module_name name, const SfuJob& job, int take_every, std::vector<uint32_t>& y)
      : sc_core::sc_module(name), job_(job), take_every_(take_every), y_(y) {
    pipe_.assign(job_);
    SC_METHOD(on_edge);
    sensitive << clk_.posedge_event();
    dont_initialize();
  }

  Pipe& pipe() { return pipe_; }
  bool finished() const { return finished_; }
  uint64_t cycles() const { return cycles_; }

 private:
  void drive(uint64_t c) {
    pipe_.drive();
    pipe_.out_ready.write(c % static_cast<uint64_t>(take_every_) == static_cast<uint64_t>(take_every_ - 1));
  }

  void on_edge() {
    if (reset_edges_ < 2) {
      if (++reset_edges_ == 2) {
        rst_.write(false);
        drive(0);
      }
      return;
    }
    pipe_.edge(&y_);
    if (pipe_.done() || cycle_ + 1 >= job_.max_cycles) {
      finished_ = pipe_.done();
      cycles_ = cycle_ + 1;
      sc_core::sc_stop();
      return;
    }
    drive(++cycle_);
  }

  SfuJob job_;
  int take_every_;
  std::vector<uint32_t>& y_;
  sc_core::sc_clock clk_{"clk", sc_core::sc_time(1, sc_core::SC_NS), 0.5, sc_core::sc_time(1, sc_core::SC_NS), true};
  sc_core::sc_signal<bool> rst_{"rst", true};
  Pipe pipe_{"pipe", clk_, rst_};
  int reset_edges_ = 0;
  uint64_t cycle_ = 0, cycles_ = 0;
  bool finished_ = false;
};

template <class Model>
RtlSfuResult run(const SfuJob& job, int take_every, const std::string& vcd_path, const std::string& what) {
  fresh_systemc_context();
  if (!vcd_path.empty()) Verilated::traceEverOn(true);  // before the model is built
  RtlSfuResult res;
  res.y.assign(static_cast<size_t>(job.elements), 0);
  auto bench = std::make_unique<SfuBench<Model>>("vxe_sfu", job, take_every, res.y);
  std::unique_ptr<VerilatedVcdSc> vcd;
  try {
    sc_core::sc_start(sc_core::SC_ZERO_TIME);  // elaborate: a Verilator trace opens only after
    if (!vcd_path.empty()) {
      vcd = std::make_unique<VerilatedVcdSc>();
      bench->pipe().rtl.trace(vcd.get(), 99);
      vcd->open(vcd_path.c_str());
      if (!vcd->isOpen()) throw InputError("run_sfu_rtl: cannot write VCD " + vcd_path);
    }
    sc_core::sc_start();
  } catch (const sc_core::sc_report& r) {
    throw InternalError(strcat("SystemC: ", r.what()));
  }
  if (vcd) vcd->close();
  if (!bench->finished())
    throw SimulationStuck(strcat("RTL ", what, ": not all results after ", bench->cycles(), " cycles (took ",
                                 bench->pipe().taken, " of ", bench->pipe().beats, " beats, delivered ",
                                 bench->pipe().results, ")"));
  res.cycles = bench->cycles();
  res.beats = bench->pipe().beats;
  return res;
}

std::string variant_list() {
  std::string s;
  for (const SfuVariant& v : rtl_sfu_variants())
    s += strcat(s.empty() ? "" : ", ", sfu_func_name(v.func), " latency ", v.latency, " ii ", v.ii);
  return s;
}

}  // namespace

const char* sfu_func_name(SfuFunc func) { return func == SfuFunc::Exp ? "exp" : "div"; }

std::vector<SfuVariant> rtl_sfu_variants() {
  std::vector<SfuVariant> v;
#define LPU_SFU_VARIANT(name, fn, lat, ii) v.push_back({SfuFunc::fn, lat, ii});
  LPU_SFU_VARIANTS(LPU_SFU_VARIANT)
#undef LPU_SFU_VARIANT
  return v;
}

int rtl_sfu_max_lanes() { return LPU_SFU_MAX_LANES; }

RtlSfuResult run_sfu_rtl(SfuFunc func, int latency, int ii, int lanes, const std::vector<int16_t>& a,
                         const std::vector<int16_t>& b, int take_every, const std::string& vcd_path) {
  if (lanes < 1 || lanes > LPU_SFU_MAX_LANES)
    throw InputError(strcat("run_sfu_rtl: lanes = ", lanes, " is out of range 1 .. ", LPU_SFU_MAX_LANES));
  if (a.empty() || a.size() > (size_t{1} << 28))
    throw InputError(strcat("run_sfu_rtl: ", a.size(), " operands; expected 1 .. 2^28"));
  if (func == SfuFunc::Div && b.size() != a.size())
    throw InputError(strcat("run_sfu_rtl: div needs as many divisors as dividends: ", b.size(), " vs ", a.size()));
  if (take_every < 1 || take_every > 1000)
    throw InputError(strcat("run_sfu_rtl: take_every = ", take_every, " is out of range 1 .. 1000"));
  SfuJob job;
  job.lanes = lanes;
  job.elements = static_cast<int64_t>(a.size());
  job.a = &a;
  job.b = func == SfuFunc::Div ? &b : nullptr;
  const auto beats = static_cast<uint64_t>((job.elements + lanes - 1) / lanes);
  job.max_cycles =
      2 * (beats * static_cast<uint64_t>(ii) * static_cast<uint64_t>(take_every) + static_cast<uint64_t>(latency)) +
      100;
  const std::string what = strcat(sfu_func_name(func), " of ", a.size(), " operands on ", lanes, " lanes");
#define LPU_SFU_RUN(name, fn, lat, i)                   \
  if (func == SfuFunc::fn && latency == lat && ii == i) \
    return run<Vvxe_sfu_##name##_l##lat##_i##i>(job, take_every, vcd_path, what);
  LPU_SFU_VARIANTS(LPU_SFU_RUN)
#undef LPU_SFU_RUN
  throw InputError(strcat("run_sfu_rtl: no verilated ", sfu_func_name(func), " pipeline with latency ", latency,
                          " and ii ", ii, "; built: ", variant_list(),
                          " (LPU_SFU_VARIANTS in sim/rtl/CMakeLists.txt)"));
}

}  // namespace lpu::rtl
