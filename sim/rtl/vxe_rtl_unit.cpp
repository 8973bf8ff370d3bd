// make_vxe_rtl_unit() with Verilator (compiled into lpu_sim when LPU_WITH_RTL): one verilated
// special-function pipeline inside the device simulation (see model/vxe_rtl.h). Clocked like
// the MAC tree's unit (sxe_rtl_unit.cpp): a thread toggles the clock at the configured period
// only while an instruction is in flight, after two reset edges of a 2 ps clock at time 0.
#include <cmath>
#include <string>
#include <systemc>

#include "model/vxe_rtl.h"
#include "rtl_variants.h"  // generated: LPU_SFU_MAX_LANES, LPU_SFU_VARIANTS(X), the model headers
#include "sfu_port.h"
#include "support/error.h"
#include "vxe_sfu_ref.h"

namespace lpu::sim {

namespace {

template <class Model>
class Unit : public sc_core::sc_module, public VxeRtlUnit {
 public:
  SC_HAS_PROCESS(Unit);

  Unit(sc_core::sc_module_name name, const DeviceContext& ctx, rtl::SfuFunc func, int lanes, int latency, int ii)
      : sc_core::sc_module(name),
        high_(ctx.period / 2),
        low_(ctx.period - high_),
        func_(func),
        lanes_(lanes),
        latency_(latency),
        ii_(ii) {
    SC_THREAD(clock);
    SC_METHOD(on_edge);
    sensitive << clk_.posedge_event();
    dont_initialize();
  }

  uint64_t run(int64_t elements, const std::vector<int16_t>* a, const std::vector<int16_t>* b,
               const std::string& what) override {
    job_ = rtl::SfuJob{};
    job_.lanes = lanes_;
    job_.elements = elements;
    job_.a = a;
    job_.b = b;
    const auto beats = static_cast<uint64_t>((elements + lanes_ - 1) / lanes_);
    job_.max_cycles = 2 * (beats * static_cast<uint64_t>(ii_) + static_cast<uint64_t>(latency_)) + 100;
    if (a) y_.assign(static_cast<size_t>(elements), 0);
    pipe_.assign(job_);
    pending_ = true;
    start_.notify(sc_core::SC_ZERO_TIME);
    sc_core::wait(done_);
    if (!pipe_.done())
      throw InternalError(strcat("vxe.model rtl: ", elements, " operands: the RTL took ", pipe_.taken, " of ",
                                 pipe_.beats, " beats and delivered ", pipe_.results, " in ", cycle_ + 1, " cycles"));
    if (a) check(*a, b, what);
    return cycle_ + 1;
  }

 private:
  // The in-device driver must deliver each operand's result in its place: compare with the
  // C++ reference of the fixed-point pipeline.
  void check(const std::vector<int16_t>& a, const std::vector<int16_t>* b, const std::string& what) const {
    for (size_t i = 0; i < y_.size(); ++i) {
      const int16_t bi = b ? (*b)[i] : int16_t{0};
      const uint32_t want = rtl::sfu_ref(func_, a[i], bi);
      if (y_[i] != want)
        throw InternalError(strcat("vxe.model rtl: ", what, ": the RTL gave ", y_[i], " for element ", i, " (operands ",
                                   a[i], ", ", bi, "), expected ", want));
    }
  }

  void clock() {
    const sc_core::sc_time reset_half(1, sc_core::SC_PS);
    for (int e = 0; e < 2; ++e) {
      clk_.write(true);
      wait(reset_half);
      clk_.write(false);
      wait(reset_half);
    }
    rst_.write(false);
    for (;;) {
      while (!pending_) wait(start_);
      pending_ = false;
      running_ = true;
      cycle_ = 0;
      pipe_.drive();
      while (running_) {  // edge c at high + c * period after the start ends cycle c
        wait(high_);
        clk_.write(true);
        wait(low_);
        clk_.write(false);
      }
    }
  }

  void on_edge() {
    if (!running_) return;  // reset edges
    pipe_.edge(job_.a ? &y_ : nullptr);
    if (pipe_.done() || cycle_ + 1 >= job_.max_cycles) {
      running_ = false;
      done_.notify(sc_core::SC_ZERO_TIME);
      return;
    }
    ++cycle_;
    pipe_.drive();
  }

  // The two halves of a cycle add up to the period exactly, though it may not be a whole number
  // of time units (0.22 GHz: 4545 ps rounded): the last edge then never passes start + cycles x
  // period, the end the VXE reports, as a clock of two rounded halves could.
  sc_core::sc_time high_, low_;
  rtl::SfuFunc func_;
  int lanes_, latency_, ii_;
  sc_core::sc_signal<bool> clk_{"clk", false};
  sc_core::sc_signal<bool> rst_{"rst", true};
  rtl::SfuPipe<Model, LPU_SFU_MAX_LANES> pipe_{"pipe", clk_, rst_};
  rtl::SfuJob job_;
  std::vector<uint32_t> y_;  // results of a run with operands
  sc_core::sc_event start_, done_;
  bool pending_ = false, running_ = false;
  uint64_t cycle_ = 0;
};

std::string built_variants() {
  std::string s;
#define LPU_SFU_NAME(name, fn, lat, ii) s += strcat(s.empty() ? "" : ", ", #name " latency " #lat " ii " #ii);
  LPU_SFU_VARIANTS(LPU_SFU_NAME)
#undef LPU_SFU_NAME
  return s;
}

}  // namespace

std::unique_ptr<VxeRtlUnit> make_vxe_rtl_unit(DeviceContext& ctx, VxeRtlFunc func, const char* op) {
  const auto& cfg = ctx.arch->vxe;
  if (cfg.lanes > LPU_SFU_MAX_LANES)
    throw InputError(strcat("vxe.model: rtl: vxe.lanes = ", cfg.lanes, " exceeds the verilated pipeline's ",
                            LPU_SFU_MAX_LANES, " lanes (LPU_SFU_MAX_LANES in sim/rtl/CMakeLists.txt)"));
  const VxeOpTiming t = cfg.timing(op);
  const auto f = func == VxeRtlFunc::Exp ? rtl::SfuFunc::Exp : rtl::SfuFunc::Div;
  const std::string name = strcat("vxe_rtl_", op);
#define LPU_SFU_MAKE(nm, fn, lat, i)                              \
  if (f == rtl::SfuFunc::fn && t.latency == (lat) && t.ii == (i)) \
    return std::make_unique<Unit<Vvxe_sfu_##nm##_l##lat##_i##i>>(name.c_str(), ctx, f, cfg.lanes, lat, i);
  LPU_SFU_VARIANTS(LPU_SFU_MAKE)
#undef LPU_SFU_MAKE
  throw InputError(strcat("vxe.model: rtl: no verilated ", (func == VxeRtlFunc::Exp ? "exp" : "div"),
                          " pipeline with vxe.ops.", op, " latency ", t.latency, " ii ", t.ii,
                          "; built: ", built_variants(), " (LPU_SFU_VARIANTS in sim/rtl/CMakeLists.txt)"));
}

}  // namespace lpu::sim
