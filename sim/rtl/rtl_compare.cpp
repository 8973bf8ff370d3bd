// build/rtl_compare [--vcd FILE]: the RTL vs approximate-model tables of docs/rtl.md, the SXE's
// MAC tree (GEMVs) and the VXE's special-function pipeline (exp and div vectors).
// --vcd also writes the waveforms of the first GEMV case (every tree) to FILE.
// Exit 0 when every RTL result equals the reference, 1 otherwise, 2 on a bad flag,
// 4 on an internal error.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "compare.h"
#include "model/vxe_timing.h"
#include "rtl_sxe.h"
#include "rtl_vxe.h"
#include "support/error.h"

namespace {

// exp and div vectors of several lengths (1040: an attention row at context 1040; 32768: a
// 16-head tile at context 2048) on every verilated pipeline and three VXE widths; random
// operands (exp: x in [-16, 4)). Prints cycles against the closed form, whether every value
// equals the C++ reference, and the worst error against the real function: exp's relative
// error, div's absolute error in units of the quotient's last bit (2^-16; truncation: < 1).
bool print_sfu_table() {
  using namespace lpu::rtl;
  std::printf("\n%-4s %4s %3s %6s %9s %9s %10s %7s %7s %10s\n", "func", "lat", "ii", "lanes", "elements", "rtl_cyc",
              "approx_cyc", "err%", "values", "worst_err");
  bool ok = true;
  for (const SfuVariant& v : rtl_sfu_variants())
    for (int lanes : {16, 64, 128})
      for (int64_t n : {int64_t{1}, int64_t{1040}, int64_t{32768}}) {
        std::vector<int16_t> a = random_int16(static_cast<size_t>(n), 3), b = random_int16(static_cast<size_t>(n), 4);
        if (v.func == SfuFunc::Exp)
          for (auto& x : a) x = static_cast<int16_t>(-16384 + (static_cast<uint16_t>(x) % 20480));
        RtlSfuResult r = run_sfu_rtl(v.func, v.latency, v.ii, lanes, a, b);
        double approx = lpu::sim::vxe_compute_cycles(n, lanes, v.latency, v.ii), worst = 0;
        bool exact = true;
        for (size_t i = 0; i < a.size(); ++i) {
          exact = exact && r.y[i] == sfu_ref(v.func, a[i], b[i]);
          double got = v.func == SfuFunc::Exp ? sfu_exp_value(r.y[i]) : static_cast<int32_t>(r.y[i]) / 65536.0;
          double want = v.func == SfuFunc::Exp ? std::exp(a[i] / 1024.0) : static_cast<double>(a[i]) / b[i];
          if (v.func == SfuFunc::Exp)
            worst = std::max(worst, std::abs(got - want) / want);
          else if (b[i] != 0 && std::abs(want) < 32767)
            worst = std::max(worst, std::abs(got - want) * 65536);
        }
        ok = ok && exact;
        std::printf("%-4s %4d %3d %6d %9lld %9llu %10.0f %+7.2f %7s %10.2e\n", sfu_func_name(v.func), v.latency, v.ii,
                    lanes, static_cast<long long>(n), static_cast<unsigned long long>(r.cycles), approx,
                    100.0 * (approx - static_cast<double>(r.cycles)) / static_cast<double>(r.cycles),
                    exact ? "exact" : "WRONG", worst);
      }
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  std::string vcd;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--vcd") == 0 && i + 1 < argc) {
      vcd = argv[++i];
    } else {
      std::fprintf(stderr, "usage: rtl_compare [--vcd FILE]\n");
      return 2;
    }
  }
  try {
    auto t0 = std::chrono::steady_clock::now();
    std::vector<lpu::rtl::GemvComparison> rows;
    bool ok = true;
    std::vector<lpu::rtl::GemvCase> cases = lpu::rtl::standard_cases();
    for (const auto& c : cases) {
      rows.push_back(lpu::rtl::compare_gemv(c));
      ok = ok && rows.back().values_ok;
    }
    std::fputs(lpu::rtl::format_comparison(rows).c_str(), stdout);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ok = print_sfu_table() && ok;
    s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("(%zu GEMV and %zu exp/div RTL runs in %.1f s wall)\n", rows.size(),
                lpu::rtl::rtl_sfu_variants().size() * 9, s);
    if (!vcd.empty()) {
      const auto& c = cases.front();
      auto W = lpu::rtl::random_int16(static_cast<size_t>(c.K * c.N), 1);
      auto x = lpu::rtl::random_int16(static_cast<size_t>(c.K), 2);
      lpu::rtl::run_gemv_rtl(c.lanes, c.pipeline_depth, c.mac_trees, c.beats_per_cycle, c.K, c.N, W, x, vcd);
      std::printf("waveforms of %lldx%lld, depth %d: %s\n", static_cast<long long>(c.K), static_cast<long long>(c.N),
                  c.pipeline_depth, vcd.c_str());
    }
    return ok ? 0 : 1;
  } catch (const lpu::InputError& e) {
    std::fprintf(stderr, "rtl_compare: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rtl_compare: %s\n", e.what());
    return 4;
  }
}
