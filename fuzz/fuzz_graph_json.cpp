// Graph JSON + sidecar: the input is the JSON text, optionally followed by "\n#SIDECAR\n" and
// the sidecar's bytes. Every tensor the JSON indexes is then read from that sidecar.
#include "fuzz_util.h"
#include "io/graph_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string in(reinterpret_cast<const char*>(data), size);
  static const std::string kSplit = "\n#SIDECAR\n";
  size_t cut = in.find(kSplit);
  std::string json = in.substr(0, cut);
  std::string sidecar;
  if (cut != std::string::npos)
    sidecar = lpu::fuzz::scratch_file(".bin", data + cut + kSplit.size(), size - cut - kSplit.size());
  lpu::fuzz::expect_input_error_only([&] {
    lpu::GraphFile f = lpu::parse_graph_json(json, "fuzz.json");
    if (sidecar.empty()) return;
    for (lpu::TensorEntry e : f.tensors) {
      e.file = sidecar;  // never follow a path the input names
      lpu::fuzz::expect_input_error_only([&] { lpu::read_tensor(f, e); });
    }
  });
  if (!sidecar.empty()) std::remove(sidecar.c_str());
  return 0;
}
