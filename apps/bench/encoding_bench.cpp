// Encoded vs text program form: time encode+decode against print+parse on a large generated
// program (ln_gelu_add unfused, small local memory: many small tiles). Prints sizes and the
// best of several repetitions of each step. Usage: lpu_encoding_bench [tokens [d_model [reps]]]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>

#include "driver/compile.h"
#include "isa/encoding.h"
#include "workload/workload.h"

using namespace lpu;

namespace {
double best_ms(int reps, const std::function<void()>& f) {
  double best = 1e300;
  for (int i = 0; i < reps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}
}  // namespace

int main(int argc, char** argv) {
  WorkloadSpec w;
  w.name = w.model = "ln_gelu_add";
  w.seq_len = argc > 1 ? std::atoll(argv[1]) : 8192;
  w.params["d_model"] = argc > 2 ? std::atoll(argv[2]) : 1024;
  int reps = argc > 3 ? std::atoi(argv[3]) : 5;
  CompileOptions o;
  o.fusion = "none";
  o.codegen.lmu_bytes = 32 * 1024;
  Program p = compile_graph(build_graph(w), o).code.program;

  std::string text;
  Program parsed, decoded;
  std::vector<uint8_t> bin;
  double print = best_ms(reps, [&] { text = print_program(p); });
  double parse = best_ms(reps, [&] { parsed = parse_program(text, "bench.s"); });
  double encode = best_ms(reps, [&] { bin = encode_program(p); });
  double decode = best_ms(reps, [&] { decoded = decode_program(bin, "bench.lpubin"); });
  for (size_t i = 0; i < p.code.size(); ++i)
    if (!decoded.code[i].same_as(p.code[i]) || !parsed.code[i].same_as(p.code[i])) {
      std::fprintf(stderr, "round trip differs at instruction %zu\n", i);
      return 1;
    }
  std::printf("program: ln_gelu_add tokens=%lld d_model=%lld fusion=none lmu=32KiB, %zu instructions\n",
              static_cast<long long>(w.seq_len), static_cast<long long>(w.params["d_model"]), p.code.size());
  std::printf("%-8s %12s %10s %10s %12s %14s\n", "form", "bytes", "write_ms", "read_ms", "total_ms", "instr/s (r+w)");
  auto row = [&](const char* form, size_t bytes, double wr, double rd) {
    std::printf("%-8s %12zu %10.2f %10.2f %12.2f %14.3g\n", form, bytes, wr, rd, wr + rd,
                static_cast<double>(p.code.size()) / ((wr + rd) / 1000));
  };
  row("text", text.size(), print, parse);
  row("binary", bin.size(), encode, decode);
  std::printf("binary/text: size %.2fx, encode+decode is %.1fx faster than print+parse (best of %d)\n",
              static_cast<double>(bin.size()) / static_cast<double>(text.size()), (print + parse) / (encode + decode), reps);
  return 0;
}
