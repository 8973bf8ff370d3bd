// The binary sidecar: raw little-endian arrays at the byte offsets the JSON index gives.
// Nothing here runs when a graph is loaded; arrays are read one at a time when a functional
// run or the reference check asks for them.
#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "io/graph_file.h"
#include "support/error.h"
#include "support/input_file.h"

namespace lpu {
namespace {

constexpr int64_t kAlignment = 64;  // each array starts on a 64-byte boundary (mmap/DMA friendly)

template <typename T>
T load_le(const unsigned char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  if constexpr (std::endian::native == std::endian::big && sizeof(T) > 1) {
    auto* b = reinterpret_cast<unsigned char*>(&v);
    for (size_t i = 0; i < sizeof(T) / 2; ++i) std::swap(b[i], b[sizeof(T) - 1 - i]);
  }
  return v;
}

template <typename T>
void store_le(std::string& out, T v) {
  unsigned char b[sizeof(T)];
  std::memcpy(b, &v, sizeof v);
  if constexpr (std::endian::native == std::endian::big && sizeof(T) > 1)
    for (size_t i = 0; i < sizeof(T) / 2; ++i) std::swap(b[i], b[sizeof(T) - 1 - i]);
  out.append(reinterpret_cast<const char*>(b), sizeof b);
}

float decode(const unsigned char* p, DType t) {
  switch (t) {
    case DType::f32: return load_le<float>(p);
    case DType::f16: return half_bits_to_float(load_le<uint16_t>(p));
    case DType::bf16: return bf16_bits_to_float(load_le<uint16_t>(p));
    case DType::i64: return static_cast<float>(load_le<int64_t>(p));
    case DType::i32: return static_cast<float>(load_le<int32_t>(p));
    case DType::boolean: return *p ? 1.0f : 0.0f;
  }
  return 0;
}

void encode(std::string& out, float v, DType t) {
  switch (t) {
    case DType::f32: store_le(out, v); break;
    case DType::f16: store_le(out, float_to_half_bits(v)); break;
    case DType::bf16: store_le(out, float_to_bf16_bits(v)); break;
    case DType::i64: store_le(out, static_cast<int64_t>(v)); break;
    case DType::i32: store_le(out, static_cast<int32_t>(v)); break;
    case DType::boolean: out.push_back(v != 0 ? 1 : 0); break;
  }
}

std::string sidecar_path(const GraphFile& f, const TensorEntry& e) {
  std::filesystem::path p(e.file);
  if (p.is_absolute() || f.dir.empty()) return p.string();
  return (std::filesystem::path(f.dir) / p).string();
}

}  // namespace

Tensor read_tensor(const GraphFile& f, const TensorEntry& e) {
  std::string path = sidecar_path(f, e);
  std::string what = strcat("sidecar ", path, " (", e.role, " ", e.name, ")");
  if (std::string problem = input_path_problem(path); !problem.empty())
    throw InputError(strcat(what, ": cannot open: ", problem));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(strcat(what, ": cannot open"));
  int64_t bytes = e.type.bytes();
  std::error_code ec;
  auto size = static_cast<int64_t>(std::filesystem::file_size(path, ec));
  int64_t end = 0;
  if (__builtin_add_overflow(e.offset, bytes, &end))
    throw InputError(strcat(what, ": needs bytes [", e.offset, ", ", e.offset, " + ", bytes,
                            "), beyond any file (the offset overflows)"));
  if (ec || size < end)
    throw InputError(strcat(what, ": needs bytes [", e.offset, ", ", end, ") but the file has ", ec ? 0 : size));
  std::vector<unsigned char> buf(static_cast<size_t>(bytes));
  in.seekg(e.offset);
  in.read(reinterpret_cast<char*>(buf.data()), bytes);
  if (!in) throw InputError(strcat(what, ": read failed"));
  Tensor t(e.type);
  int w = dtype_bytes(e.type.dtype);
  for (int64_t i = 0; i < t.numel(); ++i) t.data[static_cast<size_t>(i)] = decode(buf.data() + i * w, e.type.dtype);
  return t;
}

TensorMap load_graph_inputs(const GraphFile& f, const Graph& g) {
  TensorMap m;
  for (const Node& n : g.nodes()) {
    if (n.kind != NodeKind::Placeholder && n.kind != NodeKind::Parameter) continue;
    const char* role = n.kind == NodeKind::Placeholder ? "input" : "parameter";
    const TensorEntry* e = f.find(role, n.name);
    if (!e) throw InputError(strcat("graph ", g.name(), ": the sidecar index has no ", role, " data for %", n.name));
    if (!(e->type == n.type))
      throw InputError(strcat("graph ", g.name(), ": sidecar data for %", n.name, " is ", type_str(e->type),
                              ", the node is ", type_str(n.type)));
    m[n.name] = read_tensor(f, *e);
  }
  return m;
}

std::vector<Tensor> load_expected_outputs(const GraphFile& f) {
  std::vector<Tensor> out;
  size_t k = f.graph.outputs().size();
  for (size_t i = 0; i < k; ++i) {
    const TensorEntry* e = f.find("expected", strcat("output", i));
    if (!e) throw InputError(strcat("graph ", f.graph.name(), ": the sidecar index has no expected output", i));
    out.push_back(read_tensor(f, *e));
  }
  return out;
}

GraphFile save_graph_file(const std::string& json_path, const Graph& g, const TensorMap& data,
                          const std::vector<Tensor>& expected, const nlohmann::ordered_json& meta) {
  namespace fs = std::filesystem;
  fs::path jp(json_path);
  std::string bin_name = jp.stem().string() + ".bin";
  GraphFile f;
  f.graph = g;
  f.meta = meta;
  f.dir = jp.parent_path().string();
  std::string blob;
  auto add = [&](const std::string& role, const std::string& name, const Tensor& t, const TensorType& type) {
    if (t.numel() != type.numel())
      throw InputError(strcat("save_graph_file: data for ", role, " ", name, " has ", t.numel(), " elements, expected ",
                              type.numel()));
    blob.resize(static_cast<size_t>((static_cast<int64_t>(blob.size()) + kAlignment - 1) / kAlignment * kAlignment), '\0');
    f.tensors.push_back({name, role, type, bin_name, static_cast<int64_t>(blob.size())});
    for (float v : t.data) encode(blob, v, type.dtype);
  };
  for (const Node& n : g.nodes()) {
    if (n.kind != NodeKind::Placeholder && n.kind != NodeKind::Parameter) continue;
    auto it = data.find(n.name);
    if (it == data.end()) throw InputError(strcat("save_graph_file: no data for %", n.name));
    add(n.kind == NodeKind::Placeholder ? "input" : "parameter", n.name, it->second, n.type);
  }
  auto outs = g.outputs();
  for (size_t i = 0; i < expected.size() && i < outs.size(); ++i)
    add("expected", strcat("output", i), expected[i], g.node(outs[i]).type);
  if (!jp.parent_path().empty()) fs::create_directories(jp.parent_path());
  std::ofstream bin((jp.parent_path() / bin_name).string(), std::ios::binary);
  bin.write(blob.data(), static_cast<std::streamsize>(blob.size()));
  std::ofstream js(json_path);
  js << print_graph_json(f);
  if (!bin || !js) throw InputError(strcat("cannot write ", json_path, " or its sidecar"));
  return f;
}

}  // namespace lpu
