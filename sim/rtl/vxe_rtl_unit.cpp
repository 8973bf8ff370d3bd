// make_vxe_rtl_unit() with Verilator (compiled into lpu_sim when LPU_WITH_RTL): one verilated
// special-function pipeline inside the device simulation (see model/vxe_rtl.h), on a gated
// clock (gated_clock.h) like the MAC tree's unit (sxe_rtl_unit.cpp).
#include <cmath>
#include <string>
#include <systemc>

#include "gated_clock.h"
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
  Unit(sc_core::sc_module_name name, const DeviceContext& ctx, rtl::SfuFunc func, int lanes, int latency, int ii)
      : sc_core::sc_module(name), clock_("clock", ctx.period), func_(func), lanes_(lanes), latency_(latency), ii_(ii) {}

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
    const uint64_t cycles = clock_.run([this](uint64_t) { pipe_.drive(); },
                                       [this](uint64_t c) {
                                         pipe_.edge(job_.a ? &y_ : nullptr);
                                         return pipe_.done() || c + 1 >= job_.max_cycles;
                                       });
    if (!pipe_.done())
      throw InternalError(strcat("vxe.model rtl: ", elements, " operands: the RTL took ", pipe_.taken, " of ",
                                 pipe_.beats, " beats and delivered ", pipe_.results, " in ", cycles, " cycles"));
    if (a) check(*a, b, what);
    return cycles;
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

  GatedClock clock_;
  rtl::SfuFunc func_;
  int lanes_, latency_, ii_;
  rtl::SfuPipe<Model, LPU_SFU_MAX_LANES> pipe_{"pipe", clock_.clk, clock_.rst};
  rtl::SfuJob job_;
  std::vector<uint32_t> y_;  // results of a run with operands
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
