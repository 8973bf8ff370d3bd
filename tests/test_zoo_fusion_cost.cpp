// The fusion cost model on every exported PyTorch zoo graph (issue 13): greedy moves no more
// HBM bytes and takes no more cycles than one kernel per op, on the small and the ASIC preset.
// Usage: test_zoo_fusion_cost EXPORT_DIR (written by tests/frontend/export_models.py).
#include <gtest/gtest.h>

#include "zoo_main.h"

#include <filesystem>

#include "jobs/jobs.h"
#include "workload/workload.h"

using namespace lpu;
namespace fs = std::filesystem;

namespace {

class ZooFusionCost : public testing::Test {
 public:
  explicit ZooFusionCost(fs::path json) : json_(std::move(json)) {}

  void TestBody() override {
    WorkloadSpec w = resolve_workload(json_.string());
    for (const char* a : {"lpu-small", "lpu-asic"}) {
      ArchConfig arch = load_arch_config(std::string(LPU_SOURCE_DIR) + "/configs/" + a + ".yaml");
      RunOutcome n = run_job(w, arch, "none", false);
      RunOutcome g = run_job(w, arch, "greedy", false);
      EXPECT_LE(g.sim.stats.hbm_read_bytes + g.sim.stats.hbm_write_bytes,
                n.sim.stats.hbm_read_bytes + n.sim.stats.hbm_write_bytes) << a;
      EXPECT_LE(g.sim.stats.cycles, n.sim.stats.cycles) << a;
    }
  }

 private:
  fs::path json_;
};

}  // namespace

int main(int argc, char** argv) {
  return run_per_exported_graph(argc, argv, "ZooFusionCost", [](fs::path p) -> testing::Test* { return new ZooFusionCost(p); });
}
