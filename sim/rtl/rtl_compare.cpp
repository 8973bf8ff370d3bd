// build/rtl_compare [--vcd FILE]: the RTL vs approximate-model table of docs/rtl.md.
// --vcd also writes the waveforms of the first case (every tree) to FILE.
// Exit 0 when every RTL result equals the reference, 1 otherwise, 2 on a bad flag,
// 4 on an internal error.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "compare.h"
#include "rtl_sxe.h"
#include "support/error.h"

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
    std::printf("(%zu RTL runs in %.1f s wall)\n", rows.size(), s);
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
