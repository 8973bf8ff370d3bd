// main() of the test binaries that run one test per graph exported from the PyTorch zoo
// (tests/frontend/export_models.py): each *.json in EXPORT_DIR becomes a test named after it.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

inline int run_per_exported_graph(int argc, char** argv, const char* suite,
                                  const std::function<testing::Test*(std::filesystem::path)>& make) {
  namespace fs = std::filesystem;
  testing::InitGoogleTest(&argc, argv);
  if (argc != 2 || !fs::is_directory(argv[1])) {
    std::cerr << "usage: " << argv[0] << " EXPORT_DIR (written by tests/frontend/export_models.py)\n";
    return 2;
  }
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(argv[1]))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    std::cerr << "no exported graphs in " << argv[1] << "\n";
    return 1;
  }
  for (const auto& p : files)
    testing::RegisterTest(suite, p.stem().string().c_str(), nullptr, nullptr, __FILE__, __LINE__,
                          [p, make]() -> testing::Test* { return make(p); });
  return RUN_ALL_TESTS();
}
