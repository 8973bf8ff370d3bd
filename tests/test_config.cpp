#include <gtest/gtest.h>

#include <filesystem>

#include "config/arch_config.h"
#include "support/error.h"

using namespace lpu;

namespace {
const char* kGood = R"(name: t
clock_ghz: 1.0
devices: 1
hbm:
  bandwidth_gbps: 100
  channels: 4
  capacity_gib: 1
lmu:
  capacity_kib: 64
vxe:
  lanes: 16
sxe:
  mac_trees: 4
  lanes: 8
)";

std::string error_of(const std::string& yaml, const std::vector<std::string>& sets = {}) {
  try {
    load_arch_config_string(yaml, "t.yaml", sets);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(Config, MinimalConfigGetsDocumentedDefaults) {
  ArchConfig a = load_arch_config_string(kGood, "t.yaml");
  EXPECT_EQ(a.hbm.channels, 4);
  EXPECT_DOUBLE_EQ(a.hbm.efficiency, 0.9);
  EXPECT_EQ(a.lmu_bytes(), 64 * 1024);
  EXPECT_EQ(a.vxe.timing("exp").latency, 16);
}

TEST(Config, MisspelledKeyNamesFileLineAndKey) {
  std::string y = kGood;
  y.replace(y.find("  channels: 4"), 13, "  chanels: 4");
  std::string m = error_of(y);
  EXPECT_NE(m.find("t.yaml:6:"), std::string::npos) << m;
  EXPECT_NE(m.find("hbm.chanels"), std::string::npos) << m;
  EXPECT_NE(m.find("did you mean 'channels'"), std::string::npos) << m;
}

TEST(Config, NegativeBandwidthIsOutOfRange) {
  std::string y = kGood;
  y.replace(y.find("100"), 3, "-5");
  std::string m = error_of(y);
  EXPECT_NE(m.find("t.yaml:5:"), std::string::npos) << m;
  EXPECT_NE(m.find("hbm.bandwidth_gbps"), std::string::npos) << m;
  EXPECT_NE(m.find("out of range"), std::string::npos) << m;
}

TEST(Config, MissingRequiredKey) {
  std::string y = kGood;
  y.erase(y.find("  capacity_kib: 64\n"), 19);
  std::string m = error_of(y);
  EXPECT_NE(m.find("lmu.capacity_kib"), std::string::npos) << m;
  EXPECT_NE(m.find("missing"), std::string::npos) << m;
}

TEST(Config, NonNumberIsRejected) {
  std::string y = kGood;
  y.replace(y.find("16"), 2, "many");
  EXPECT_NE(error_of(y).find("vxe.lanes: expected an integer"), std::string::npos) << error_of(y);
}

TEST(Config, SetOverridesBeforeValidation) {
  ArchConfig a = load_arch_config_string(kGood, "t.yaml", {"hbm.bandwidth_gbps=50", "vxe.ops.exp.latency=40"});
  EXPECT_DOUBLE_EQ(a.hbm.bandwidth_gbps, 50);
  EXPECT_EQ(a.vxe.timing("exp").latency, 40);
  EXPECT_NE(error_of(kGood, {"hbm.bandwidth_gbps=0"}).find("out of range"), std::string::npos);
  EXPECT_NE(error_of(kGood, {"hbm.nope=1"}).find("unknown key"), std::string::npos);
  EXPECT_NE(error_of(kGood, {"garbage"}).find("key.path=value"), std::string::npos);
}

TEST(Config, YamlSyntaxErrorHasLine) {
  std::string m = error_of("name: [unclosed\n");
  EXPECT_NE(m.find("t.yaml:"), std::string::npos) << m;
  EXPECT_NE(m.find("YAML syntax error"), std::string::npos) << m;
}

TEST(Config, ShippedConfigsAllValidate) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(std::string(LPU_SOURCE_DIR) + "/configs"))
    if (e.path().extension() == ".yaml") {
      EXPECT_NO_THROW(load_arch_config(e.path().string())) << e.path();
      ++n;
    }
  EXPECT_GE(n, 1);
}

TEST(Config, SxeModelDefaultsToApproxAndIsValidated) {
  EXPECT_EQ(load_arch_config_string(kGood, "t.yaml").sxe.model, ArchConfig::Sxe::Model::Approx);
  ArchConfig a = load_arch_config_string(kGood, "t.yaml", {"sxe.model=rtl"});
  EXPECT_EQ(a.sxe.model, ArchConfig::Sxe::Model::Rtl);
  EXPECT_EQ(arch_to_json(a)["sxe"]["model"], "rtl");
  std::string m = error_of(kGood + std::string("  model: verilog\n"));
  EXPECT_NE(m.find("t.yaml:15:"), std::string::npos) << m;
  EXPECT_NE(m.find("sxe.model"), std::string::npos) << m;
  EXPECT_NE(m.find("expected approx or rtl, got 'verilog'"), std::string::npos) << m;
}

TEST(Config, WallClockLimitHasADefaultAndIsValidated) {
  EXPECT_DOUBLE_EQ(load_arch_config_string(kGood, "t.yaml").sim.max_wall_s, 600);
  EXPECT_DOUBLE_EQ(load_arch_config_string(kGood, "t.yaml", {"sim.max_wall_s=2"}).sim.max_wall_s, 2);
  for (const char* bad : {"sim.max_wall_s=0", "sim.max_wall_s=-1", "sim.max_wall_s=nan"}) {
    std::string m = error_of(kGood, {bad});
    EXPECT_NE(m.find("sim.max_wall_s"), std::string::npos) << bad << ": " << m;
  }
}

// A sweep checks every axis value against one parsed base (sweep_spec.cpp): each load must
// give what parsing the text again gives, the error message with its line included, and
// leave the parsed document as it was.
TEST(Config, PreparsedConfigLoadsAsTheTextDoes) {
  const std::vector<std::string> texts = {kGood, kGood + std::string("  model: verilog\n"), "name: [unclosed\n", "",
                                          "- a\n- b\n"};
  const std::vector<std::vector<std::string>> sets = {{},
                                                      {"hbm.bandwidth_gbps=50", "vxe.ops.exp.latency=40"},
                                                      {"hbm.bandwidth_gbps=-1"},
                                                      {"hbm.bandwith_gbps=50"},
                                                      {"sxe=3"},
                                                      {"clock_ghz=[1"},
                                                      {"energy.sxe_pj_per_mac=1"},
                                                      {"sim.max_wall_s=2"}};
  for (const auto& text : texts) {
    PreparsedArchConfig pre(text, "t.yaml");
    for (int round = 0; round < 2; ++round)
      for (const auto& s : sets) {
        std::string label = text.substr(0, 20) + " | " + (s.empty() ? "" : s.front());
        std::string want = error_of(text, s), got;
        try {
          ArchConfig a = pre.load(s);
          EXPECT_EQ(arch_to_json(a), arch_to_json(load_arch_config_string(text, "t.yaml", s))) << label;
        } catch (const InputError& e) {
          got = e.what();
        }
        EXPECT_EQ(got, want) << label;
      }
  }
  EXPECT_NE(error_of(texts[1]).find("t.yaml:15:"), std::string::npos);  // the case above names a line
  EXPECT_DOUBLE_EQ(PreparsedArchConfig(kGood, "t.yaml").load({}).hbm.bandwidth_gbps, 100);
}

// The checks of one axis: the same keys assigned again over one kept copy. Every load must
// give what the text with fixed + varying gives, rejected values and nested keys included.
TEST(Config, PreparsedConfigReassignsTheSameKeysAsAFreshLoad) {
  PreparsedArchConfig pre(kGood, "t.yaml");
  const std::vector<std::string> fixed = {"hbm.channels=8"};
  const std::vector<std::vector<std::string>> steps = {
      {"hbm.bandwidth_gbps=50"},  {"hbm.bandwidth_gbps=55"},    {"hbm.bandwidth_gbps=-1"},
      {"hbm.bandwidth_gbps=60"},  {"hbm.bandwidth_gbps=65"},    {"hbm.bandwidth_gbps={a: 1}"},
      {"hbm.bandwidth_gbps=70"},  {"hbm=5", "hbm.channels=2"},
      {"hbm={bandwidth_gbps: 1, channels: 2, capacity_gib: 1}", "hbm.channels=3"},
      {"hbm.channels=3", "hbm={bandwidth_gbps: 1, channels: 2, capacity_gib: 1}"},
      {"hbm.channels=x", "hbm={bandwidth_gbps: 1, channels: 2, capacity_gib: 1}"},
      {"vxe.lanes=8", "clock_ghz=2"}, {"vxe.lanes=16", "clock_ghz=2"}, {"vxe.lanes=0", "clock_ghz=2"},
      {"vxe.lanes=8", "clock_ghz=3"}, {"vxe.lanes=8", "clock_ghz=30"}, {"vxe.lanes=32", "clock_ghz=1"},
      {"sxe.model=rtl"},          {"sxe.model=verilog"},         {"sxe.model=approx"}, {"sxe.model=rtl"}};
  for (int round = 0; round < 2; ++round)
    for (const auto& v : steps) {
      std::vector<std::string> all = fixed;
      all.insert(all.end(), v.begin(), v.end());
      std::string want = error_of(kGood, all), got;
      try {
        ArchConfig a = pre.load(fixed, v);
        EXPECT_EQ(arch_to_json(a), arch_to_json(load_arch_config_string(kGood, "t.yaml", all))) << v.front();
      } catch (const InputError& e) {
        got = e.what();
      }
      EXPECT_EQ(got, want) << v.front();
    }
}
