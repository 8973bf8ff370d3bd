// The GPU prefill pool's cost model (serve/gpu_model.h) against the prefill latencies measured on
// an H200 (docs/gpu/prefill-h200-2026-12-03.jsonl): configs/gpus/h200.yaml reproduces every
// prefill row's GPU time within 15%. And the config reader's errors name the file, line and key.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>

#include "serve/gpu_model.h"
#include "support/error.h"
#include "support/json_util.h"

using namespace lpu;
using namespace lpu::serve;
using ::testing::HasSubstr;

namespace {

const std::string kSource = LPU_SOURCE_DIR;
const std::string kH200 = kSource + "/configs/gpus/h200.yaml";
const std::string kTable = kSource + "/docs/gpu/prefill-h200-2026-12-03.jsonl";

// The measured models as the caller converts them from the compiler's TransformerShape.
ModelDims dims_of(const std::string& name) {
  ModelDims m;
  if (name == "llama2-7b") {
    m = {32, 4096, 32, 32, 128, 11008, 32000, true, true, true, 2, 2, 6738415616};
  } else if (name == "opt-1.3b") {
    m = {24, 2048, 32, 32, 64, 8192, 50272, false, false, false, 2, 2, 1315758080};
  } else {
    ADD_FAILURE() << "unknown model " << name;
  }
  return m;
}

struct Row {
  std::string model, kind;
  int64_t batch, context_before, new_tokens;
  double gpu_ms;
};

std::vector<Row> measured_rows(const std::string& variant) {
  std::ifstream f(kTable);
  EXPECT_TRUE(f.good()) << kTable;
  std::vector<Row> rows;
  int line_no = 0;
  for (std::string line; std::getline(f, line);) {
    auto j = parse_json_strict(line, strcat(kTable, ":", ++line_no));
    if (j["variant"] != variant) continue;
    rows.push_back({j["model"].get<std::string>(), j["kind"].get<std::string>(), j["batch"].get<int64_t>(),
                    j["context_before"].get<int64_t>(), j["new_tokens"].get<int64_t>(), j["gpu_ms"].get<double>()});
  }
  return rows;
}

double model_ms(GpuStepCost& cost, const Row& r) {
  StepBatch b;
  for (int64_t i = 0; i < r.batch; ++i) b.seqs.push_back({i, r.context_before, r.new_tokens, true});
  return cost.cost(b).time_s * 1e3;
}

}  // namespace

TEST(ServeGpu, H200ReproducesEveryMeasuredPrefillWithin15Percent) {
  GpuConfig gpu = load_gpu_config(kH200);
  std::map<std::string, GpuStepCost> models;
  for (const char* name : {"llama2-7b", "opt-1.3b"}) models.emplace(name, GpuStepCost(gpu, dims_of(name)));
  double worst = 0;
  std::string worst_row;
  int n = 0;
  for (const Row& r : measured_rows("eager")) {
    if (r.kind != "prefill") continue;
    double err = model_ms(models.at(r.model), r) / r.gpu_ms - 1;
    EXPECT_LE(std::abs(err), 0.15) << r.model << " batch " << r.batch << " x " << r.new_tokens << " tokens";
    if (std::abs(err) > std::abs(worst)) {
      worst = err;
      worst_row = strcat(r.model, " batch ", r.batch, " x ", r.new_tokens, ": measured ", r.gpu_ms, " ms");
    }
    ++n;
  }
  EXPECT_GE(n, 50);
  std::printf("[ GPU model ] %d prefill rows, worst error %+.1f%% (%s)\n", n, 100 * worst, worst_row.c_str());
}

TEST(ServeGpu, CostGrowsWithTokensAndWeightsAreReadOncePerStep) {
  GpuStepCost cost(load_gpu_config(kH200), dims_of("llama2-7b"));
  StepBatch one{{{0, 0, 512, true}}}, two{{{0, 0, 512, true}, {1, 0, 512, true}}};
  StepBatch longer{{{0, 0, 1024, true}}};
  double t1 = cost.cost(one).time_s, t2 = cost.cost(two).time_s;
  EXPECT_GT(t2, t1);
  EXPECT_LT(t2, 2 * t1);                    // the second prompt shares the weight reads and the launches
  EXPECT_GT(cost.cost(longer).time_s, t2);  // the same tokens, more attention
  StepCost c = cost.cost(one);
  EXPECT_DOUBLE_EQ(c.energy_j, c.time_s * 660);
  GpuStepBreakdown b = cost.breakdown(one);
  EXPECT_NEAR(b.total_s(), t1, 1e-12);
  EXPECT_DOUBLE_EQ(b.kernels, 20 + 32 * (4 + 3 + 1 + 2 + 2 + 16 + 2 + 10));
}

TEST(ServeGpu, TensorParallelDevicesSplitTheWork) {
  GpuConfig gpu = load_gpu_config(kH200);
  GpuStepCost one(gpu, dims_of("llama2-7b"));
  gpu.devices = 2;
  GpuStepCost two(gpu, dims_of("llama2-7b"));
  StepBatch b{{{0, 0, 2048, true}}};
  EXPECT_LT(two.cost(b).time_s, one.cost(b).time_s);
  EXPECT_GT(two.cost(b).time_s, one.cost(b).time_s / 2);  // the kernels' fixed costs stay
}

TEST(ServeGpu, ModelWithoutLayersIsAnInputError) {
  ModelDims m = dims_of("opt-1.3b");
  m.layers = 0;
  EXPECT_THROW(GpuStepCost(load_gpu_config(kH200), m), InputError);
}

namespace {

std::string config_text() {
  std::ifstream f(kH200);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

std::string error_of(const std::string& text) {
  try {
    load_gpu_config_string(text, "gpu.yaml");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

// The shipped config with `key: value` replaced on its line (key at the line's start).
std::string with(const std::string& key, const std::string& value) {
  std::string t = config_text();
  size_t at = t.find("\n" + key + ":");
  EXPECT_NE(at, std::string::npos) << key;
  size_t end = t.find('\n', at + 1);
  return t.substr(0, at + 1) + key + ": " + value + t.substr(end);
}

int line_of(const std::string& key) {
  std::string t = config_text();
  size_t at = t.find("\n" + key + ":");
  return 2 + static_cast<int>(std::count(t.begin(), t.begin() + static_cast<long>(at), '\n'));
}

}  // namespace

TEST(ServeGpu, ShippedConfigReads) {
  GpuConfig g = load_gpu_config(kH200);
  EXPECT_EQ(g.name, "h200-sxm-hf-eager");
  EXPECT_EQ(g.devices, 1);
  EXPECT_DOUBLE_EQ(g.elementwise.rms_norm.kernels, 8);
  EXPECT_EQ(g.file, kH200);
}

TEST(ServeGpu, BadConfigsNameFileLineAndKey) {
  std::string line = strcat("gpu.yaml:", line_of("gemm_efficiency"), ": gemm_efficiency: ");
  EXPECT_THAT(error_of(with("gemm_efficiency", ".nan")), HasSubstr(line + "must be a finite number"));
  EXPECT_THAT(error_of(with("gemm_efficiency", "-0.5")), HasSubstr(line + "must be > 0 and <= 1, got -0.5"));
  EXPECT_THAT(error_of(with("gemm_efficiency", "1.5")), HasSubstr(line + "must be > 0 and <= 1"));
  EXPECT_THAT(error_of(with("gemm_efficiency", "fast")), HasSubstr(line + "expected a number, got 'fast'"));
  EXPECT_THAT(error_of(with("peak_tflops", "0")),
              HasSubstr(strcat("gpu.yaml:", line_of("peak_tflops"), ": peak_tflops: must be > 0, got 0")));
  EXPECT_THAT(error_of(with("hbm_bandwidth_gbps", ".inf")), HasSubstr("hbm_bandwidth_gbps: must be a finite number"));
  EXPECT_THAT(error_of(with("devices", "2.5")), HasSubstr("devices: expected an integer, got '2.5'"));
  EXPECT_THAT(error_of(with("devices", "0")), HasSubstr("devices: must be >= 1 and <= 4096, got 0"));
  EXPECT_THAT(error_of(config_text() + "peak_tflop: 5\n"),
              HasSubstr("peak_tflop: unknown key (did you mean 'peak_tflops'?)"));
  EXPECT_THAT(error_of(with("power_w", "-1")), HasSubstr("power_w: must be > 0, got -1"));
  std::string t = config_text();
  t.erase(t.find("\nkernel_overhead_us:") + 1,
          t.find('\n', t.find("\nkernel_overhead_us:") + 1) - t.find("\nkernel_overhead_us:"));
  EXPECT_THAT(error_of(t), HasSubstr("gpu.yaml:"));  // the line of the map that lacks it
  EXPECT_THAT(error_of(t), HasSubstr(": kernel_overhead_us: missing required key"));
  std::string rms = config_text();
  rms.replace(rms.find("{kernels: 8,"), 12, "{kernels: -8,");
  EXPECT_THAT(error_of(rms), HasSubstr("elementwise.rms_norm.kernels: must be >= 0, got -8"));
  EXPECT_THAT(error_of(config_text() + "  fused_rope: {kernels: 1, passes: 1}\n"),
              HasSubstr("elementwise.fused_rope: unknown key"));
}

TEST(ServeGpu, MissingConfigFileNamesIt) {
  try {
    load_gpu_config("configs/gpus/no-such-gpu.yaml");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("GPU config configs/gpus/no-such-gpu.yaml: cannot open: no such file"));
  }
  try {
    load_gpu_config(kSource + "/configs/gpus");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("configs/gpus: cannot open: it is a directory"));
  }
  EXPECT_THAT(error_of(""), HasSubstr("gpu.yaml: empty; expected a GPU config"));
}
