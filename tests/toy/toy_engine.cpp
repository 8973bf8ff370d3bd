// The toy engine's module (docs/adding-an-engine.md): an engine behind the ISU that doubles a
// local-memory tile in `toy.latency_cycles + ceil(elements / toy.lanes)` cycles. It registers
// itself and its config section; nothing outside this file and toy_isa.h knows it.
#include <cmath>

#include "config/arch_config.h"
#include "model/device.h"
#include "support/error.h"

namespace lpu::sim {
namespace {

const ConfigSectionRegistration kToySection({"toy", {{"lanes", 4, 1, 1 << 16}, {"latency_cycles", 2, 0, 1 << 10}}});

class Toy : public Engine {
 public:
  Toy(sc_core::sc_module_name name, DeviceContext& ctx, Device& device)
      : Engine(name, ctx, Unit::Toy, /*queue_depth=*/4, /*workers=*/1), lmu_(device.lmu) {}

 protected:
  double execute(const IssueTicket& tk, double start_ps) override {
    const Instruction& in = ctx_.instr(tk.instr);
    const int64_t R = in.rows, C = in.cols;
    const int64_t rs = in.lm_row_stride();  // form Unary: the destination may be a column window
    lmu_.check(in.lm_addr, static_cast<uint64_t>(((R - 1) * rs + C) * 4), "toy destination");
    if (ctx_.functional) {
      const Operand& s = in.srcs.at(0);
      std::vector<float> out(static_cast<size_t>(R * C));
      for (int64_t r = 0; r < R; ++r)
        for (int64_t c = 0; c < C; ++c) {
          const int64_t off = static_cast<int64_t>(s.addr / 4) + r * s.rs + c * s.cs;
          if (s.immediate || off < 0 || off >= static_cast<int64_t>(ctx_.lmu_data.size()))
            throw InputError(strcat(print_instruction(in), " reads outside local memory"));
          out[static_cast<size_t>(r * C + c)] = 2 * ctx_.lmu_data[static_cast<size_t>(off)];
        }
      for (int64_t r = 0; r < R; ++r)
        std::copy(out.begin() + r * C, out.begin() + (r + 1) * C, lmu_.data(in.lm_addr) + r * rs);
    }
    const double cycles = ctx_.arch->extension("toy", "latency_cycles") +
                          std::ceil(static_cast<double>(R * C) / ctx_.arch->extension("toy", "lanes"));
    return start_ps + ctx_.period.to_double() * cycles;
  }
  Span occupancy() const override { return Span::Compute; }
  EngineReport make_report() const override {
    EngineReport r = Engine::make_report();
    r.work_unit = "element_ops";
    r.peak_work_per_cycle = ctx_.arch->extension("toy", "lanes");
    return r;
  }

 private:
  Lmu& lmu_;
};

const EngineRegistration kToyEngine(Unit::Toy,
                                    [](const char* name, DeviceContext& ctx,
                                       Device& device) -> std::unique_ptr<Engine> {
                                      return std::make_unique<Toy>(name, ctx, device);
                                    });

}  // namespace
}  // namespace lpu::sim
