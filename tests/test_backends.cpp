// The --emit backends (workbench/jobs/backends.h): one list that `lpu compile --emit`, its
// --help text and this test enumerate. Every backend renders or writes its files for a small
// workload, and the help and the error for an unknown name name every one of them.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <sstream>

#include "jobs/backends.h"
#include "support/error.h"

namespace fs = std::filesystem;
using namespace lpu;

namespace {

CompileRequest request(const std::string& emit, const std::string& outdir) {
  CompileRequest r;
  r.workload = resolve_workload("ln_gelu_add", {});
  r.arch = load_arch_config(resolve_config_path(default_config_name()), {});
  r.fusion = "greedy";
  r.breaks = [] { return BreakOptions{}; };
  r.emit = emit;
  r.outdir = outdir;
  return r;
}

}  // namespace

TEST(Backends, NamesAreUniqueAndEachHasAFile) {
  std::set<std::string> names;
  for (const auto& b : backends()) {
    EXPECT_TRUE(names.insert(b.name).second) << b.name;
    EXPECT_FALSE(b.files.empty()) << b.name;
    EXPECT_TRUE(b.render || b.write) << b.name;
    EXPECT_EQ(find_backend(b.name), &b);
  }
  EXPECT_EQ(find_backend("bogus"), nullptr);
}

TEST(Backends, HelpAndErrorsListEveryBackend) {
  for (const auto& b : backends()) {
    EXPECT_NE(emit_help().find(b.name), std::string::npos) << b.name;
    EXPECT_NE(backend_names().find(b.name), std::string::npos) << b.name;
  }
  std::ostringstream out;
  try {
    compile_command(request("bogus", ""), out);
    FAIL() << "an unknown backend must be refused";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("(" + backend_names() + ")"), std::string::npos) << e.what();
  }
}

// Every backend, with -o DIR: it writes each file it lists and says so.
TEST(Backends, EveryBackendWritesItsFiles) {
  fs::path dir =
      fs::temp_directory_path() / ("lpu-backends-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  fs::remove_all(dir);
  for (const auto& b : backends()) {
    std::ostringstream out;
    fs::path d = dir / b.name;
    EXPECT_EQ(compile_command(request(b.name, d.string()), out), 0) << b.name;
    for (const auto& f : b.files) EXPECT_TRUE(fs::exists(d / f)) << b.name << ": " << f;
    EXPECT_NE(out.str().find("wrote"), std::string::npos) << b.name;
  }
  fs::remove_all(dir);
}

// Without -o the text backends print; the binary ones ask for a directory.
TEST(Backends, TextBackendsPrintBinaryOnesNeedADirectory) {
  for (const auto& b : backends()) {
    std::ostringstream out;
    if (b.binary) {
      EXPECT_THROW(compile_command(request(b.name, ""), out), InputError) << b.name;
      continue;
    }
    EXPECT_EQ(compile_command(request(b.name, ""), out), 0) << b.name;
    EXPECT_FALSE(out.str().empty()) << b.name;
  }
}
