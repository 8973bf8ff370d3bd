#include "jobs/manifest.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "host_pricing.h"
#include "support/error.h"
#include "support/input_file.h"
#include "support/units.h"

namespace lpu {

namespace fs = std::filesystem;

namespace {

nlohmann::json read_json(const std::string& path) {
  std::string text = read_input_file(path);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(strcat(path, ": not valid JSON: ", e.what()));
  }
}

struct Reader {
  std::string path;
  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw InputError(strcat(path, ": ", where, ": ", what));
  }
  const nlohmann::json& get(const nlohmann::json& o, const std::string& key, const std::string& where) const {
    if (!o.is_object()) fail(where, "expected an object");
    if (!o.contains(key)) fail(where, strcat("missing key '", key, "'"));
    return o[key];
  }
  std::string str(const nlohmann::json& o, const std::string& key, const std::string& where) const {
    const auto& v = get(o, key, where);
    if (!v.is_string()) fail(where, strcat("'", key, "' must be a string"));
    return v.get<std::string>();
  }
  int integer(const nlohmann::json& o, const std::string& key, const std::string& where) const {
    const auto& v = get(o, key, where);
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > 1000000)
      fail(where, strcat("'", key, "' must be a non-negative integer"));
    return v.get<int>();
  }
  void keys(const nlohmann::json& o, std::initializer_list<const char*> allowed, const std::string& where) const {
    for (const auto& [k, _] : o.items()) {
      bool ok = false;
      for (const char* a : allowed) ok = ok || k == a;
      if (!ok) fail(where, strcat("unknown key '", k, "'"));
    }
  }
};

const Node* placeholder(const Graph& g, const std::string& name) {
  for (const auto& n : g.nodes())
    if (n.kind == NodeKind::Placeholder && n.name == name) return &n;
  return nullptr;
}

}  // namespace

bool is_manifest_file(const std::string& path) {
  if (fs::path(path).extension() != ".json" || !fs::is_regular_file(path)) return false;
  // The format key is near the top: read a little, not a whole graph file.
  std::ifstream f(path);
  std::string head(4096, '\0');
  f.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(f.gcount()));
  return head.find("\"lpu-manifest\"") != std::string::npos;
}

Manifest load_manifest(const std::string& path) {
  Reader r{path};
  nlohmann::json doc = read_json(path);
  r.keys(doc, {"format", "version", "name", "meta", "graphs", "outputs"}, "top level");
  if (r.str(doc, "format", "top level") != "lpu-manifest") r.fail("format", "expected \"lpu-manifest\"");
  const auto& ver = r.get(doc, "version", "top level");
  if (!ver.is_number_integer() || ver.get<int64_t>() != kManifestFormatVersion)
    r.fail("version", strcat("file has manifest version ", ver.dump(), "; this build reads version ", kManifestFormatVersion));
  Manifest m;
  m.path = path;
  m.name = doc.contains("name") ? r.str(doc, "name", "top level") : fs::path(path).stem().string();
  const auto& graphs = r.get(doc, "graphs", "top level");
  if (!graphs.is_array() || graphs.empty()) r.fail("graphs", "must be a non-empty list");
  std::string dir = fs::path(path).parent_path().string();
  std::vector<Graph> loaded;
  for (size_t gi = 0; gi < graphs.size(); ++gi) {
    const auto& gj = graphs[gi];
    std::string where = strcat("graphs[", gi, "]");
    r.keys(gj, {"name", "file", "inputs", "outputs"}, where);
    ManifestGraph g;
    g.name = r.str(gj, "name", where);
    g.file = r.str(gj, "file", where);
    g.path = fs::path(g.file).is_absolute() || dir.empty() ? g.file : (fs::path(dir) / g.file).string();
    if (!fs::is_regular_file(g.path)) r.fail(where + ".file", strcat("no such graph file ", g.path));
    loaded.push_back(load_graph_file(g.path).graph);
    const Graph& graph = loaded.back();
    const auto& ins = r.get(gj, "inputs", where);
    if (!ins.is_array()) r.fail(where + ".inputs", "must be a list");
    for (size_t ii = 0; ii < ins.size(); ++ii) {
      std::string w = strcat(where, ".inputs[", ii, "]");
      const auto& ij = ins[ii];
      r.keys(ij, {"name", "from", "index", "parameter", "graph", "output"}, w);
      ManifestInput in;
      in.name = r.str(ij, "name", w);
      in.from = r.str(ij, "from", w);
      const Node* ph = placeholder(graph, in.name);
      if (!ph) r.fail(w, strcat("graph ", g.file, " has no placeholder %", in.name));
      if (in.from == "graph") {
        in.graph = r.integer(ij, "graph", w);
        in.output = r.integer(ij, "output", w);
        if (in.graph >= static_cast<int>(gi)) r.fail(w, strcat("'graph' ", in.graph, " is not an earlier graph"));
        const Graph& src = loaded[static_cast<size_t>(in.graph)];
        if (in.output >= static_cast<int>(src.outputs().size()))
          r.fail(w, strcat("graph ", in.graph, " has ", src.outputs().size(), " outputs, not ", in.output + 1));
        const TensorType& produced = src.node(src.outputs()[static_cast<size_t>(in.output)]).type;
        if (!(produced == ph->type))
          r.fail(w, strcat("%", in.name, " is ", type_str(ph->type), " but graph ", in.graph, " output ", in.output,
                           " is ", type_str(produced)));
      } else if (in.from != "input" && in.from != "parameter" && in.from != "host") {
        r.fail(w, strcat("'from' must be input, parameter, graph or host, got '", in.from, "'"));
      }
      g.inputs.push_back(in);
    }
    const auto& outs = r.get(gj, "outputs", where);
    if (!outs.is_array() || outs.size() != graph.outputs().size())
      r.fail(where + ".outputs", strcat("must list the graph's ", graph.outputs().size(), " outputs"));
    for (size_t oi = 0; oi < outs.size(); ++oi) {
      std::string w = strcat(where, ".outputs[", oi, "]");
      r.keys(outs[oi], {"index", "to"}, w);
      if (r.integer(outs[oi], "index", w) != static_cast<int>(oi)) r.fail(w, strcat("'index' must be ", oi));
      std::string to = r.str(outs[oi], "to", w);
      if (to != "graph" && to != "output" && to != "host") r.fail(w, strcat("'to' must be graph, output or host, got '", to, "'"));
      g.output_to.push_back(to);
    }
    m.graphs.push_back(std::move(g));
  }
  return m;
}

namespace {

int64_t output_bytes(const RunOutcome& o, size_t index) {
  const Graph& g = o.comp.captured;
  return static_cast<int64_t>(g.node(g.outputs()[index]).type.bytes());
}

}  // namespace

ManifestRun run_manifest(const Manifest& m, const ArchConfig& arch, const std::string& fusion, bool functional,
                         const BreakOptions& b) {
  ManifestRun run;
  run.manifest = m;
  for (const auto& g : m.graphs) {
    WorkloadSpec w = resolve_workload(g.path);
    w.name = g.name;
    run.graphs.push_back(run_job(w, arch, fusion, functional, false, b));
    const RunOutcome& o = run.graphs.back();
    run.latency_us += o.sim.stats.latency_us;
    run.cycles += o.sim.stats.cycles;
    run.hbm_read_bytes += o.sim.stats.hbm_read_bytes;
    run.hbm_write_bytes += o.sim.stats.hbm_write_bytes;
    run.compulsory_hbm_bytes += o.comp.compulsory_hbm_bytes;
    if (o.check && !o.check->ok) run.functional_ok = false;
  }
  // Between graph i and i + 1 the host reads what only it consumes from graph i and makes
  // the inputs graph i + 1 takes from it.
  for (size_t i = 0; i + 1 < m.graphs.size(); ++i) {
    GraphBreakStats br;
    br.node = strcat(m.graphs[i].name, " -> ", m.graphs[i + 1].name);
    br.op = "dynamo graph break";
    for (size_t o = 0; o < m.graphs[i].output_to.size(); ++o)
      if (m.graphs[i].output_to[o] == "host") br.bytes += output_bytes(run.graphs[i], o);
    const Graph& next = run.graphs[i + 1].comp.captured;
    for (const auto& in : m.graphs[i + 1].inputs)
      if (in.from == "host")
        if (const Node* ph = placeholder(next, in.name)) br.bytes += static_cast<int64_t>(ph->type.bytes());
    br.host_us = sim::graph_break_us(arch, br.bytes);
    run.latency_us += br.host_us;
    run.breaks.push_back(br);
  }
  return run;
}

nlohmann::json ManifestRun::to_json() const {
  nlohmann::json j;
  j["manifest"] = manifest.path;
  j["latency_us"] = latency_us;
  j["cycles"] = cycles;
  j["hbm_read_bytes"] = hbm_read_bytes;
  j["hbm_write_bytes"] = hbm_write_bytes;
  j["compulsory_hbm_bytes"] = compulsory_hbm_bytes;
  nlohmann::json brs = nlohmann::json::array();
  double host = 0;
  for (const auto& b : breaks) {
    brs.push_back({{"node", b.node}, {"op", b.op}, {"bytes", b.bytes}, {"host_us", b.host_us}});
    host += b.host_us;
  }
  j["graph_breaks"] = brs;
  j["graph_breaks_host_us"] = host;
  nlohmann::json gs = nlohmann::json::array();
  for (const auto& g : graphs) gs.push_back(g.to_json());
  j["graphs"] = gs;
  if (!graphs.empty() && graphs.front().check) j["functional"] = {{"ok", functional_ok}};
  return j;
}

}  // namespace lpu

namespace lpu {

std::string format_manifest_run(const ManifestRun& r) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& g : r.graphs) {
    std::string check = g.check ? (g.check->ok ? "PASS" : "FAIL") + format_number(" (max abs error %.3g)", g.check->max_abs_error) : "-";
    rows.push_back({g.workload.name, std::to_string(g.comp.schedule.kernels.size()), std::to_string(g.sim.stats.cycles),
                    format_number("%.3f", g.sim.stats.latency_us), format_bytes(g.sim.stats.hbm_read_bytes),
                    format_bytes(g.sim.stats.hbm_write_bytes), format_bytes(g.comp.compulsory_hbm_bytes),
                    check});
  }
  std::string s = strcat("program ", r.manifest.name, " (", r.manifest.path, "): ", r.graphs.size(), " graphs, ",
                         r.breaks.size(), " graph breaks\n");
  s += format_table({"graph", "kernels", "cycles", "latency_us", "HBM read", "HBM written", "compulsory", "functional"}, rows);
  double host = 0;
  for (const auto& b : r.breaks) {
    s += strcat("break ", b.node, ": ", b.op, ", ", format_bytes(b.bytes), " over the host link, ",
                format_number("%.3f us", b.host_us), " on the host\n");
    host += b.host_us;
  }
  s += strcat("total: latency ", format_number("%.3f us", r.latency_us), " (graphs ",
              format_number("%.3f us", r.latency_us - host), " + breaks ", format_number("%.3f us", host), "), HBM read ",
              format_bytes(r.hbm_read_bytes), ", written ", format_bytes(r.hbm_write_bytes), "\n");
  return s;
}

}  // namespace lpu
