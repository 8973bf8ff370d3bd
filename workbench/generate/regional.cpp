#include "generate/regional.h"

#include <algorithm>

#include "isa/layer_template.h"
#include "support/error.h"

namespace lpu {

int64_t decoder_depth(const WorkloadSpec& w) {
  const TransformerShape* m = decoder_of(w);
  if (!m || !w.graph.empty()) return -1;
  return w.layers > 0 ? std::min(w.layers, m->layers) : m->layers;
}

bool regional_applies(const WorkloadSpec& w, std::string* why_not) {
  auto no = [&](std::string why) {
    if (why_not) *why_not = std::move(why);
    return false;
  };
  const int64_t L = decoder_depth(w);
  if (L < 0) return no("not a built-in decoder");
  if (L < 5) return no(strcat(L, " layers: compiling them whole is cheaper than at 3 and 4"));
  return true;
}

RegionalProgram compile_regional(const WorkloadSpec& w, const CompileOptions& opts,
                                 const std::function<Compilation(const Graph&, const CompileOptions&)>& compile) {
  return compile_regional(
      w, opts,
      std::function<Compilation(const WorkloadSpec&, const CompileOptions&)>(
          [&](const WorkloadSpec& s, const CompileOptions& o) { return compile(build_graph(s), o); }));
}

RegionalProgram compile_regional(
    const WorkloadSpec& w, const CompileOptions& opts,
    const std::function<Compilation(const WorkloadSpec&, const CompileOptions&)>& compile) {
  RegionalProgram r;
  r.layers = decoder_depth(w);
  auto whole = [&] {
    Compilation c = compile(w, opts);
    r.program = std::move(c.code.program);
    r.kernels = c.schedule.kernels.size();
    r.compulsory_hbm_bytes = c.compulsory_hbm_bytes;
    r.regional = false;
    return r;
  };
  if (!regional_applies(w, &r.why_not)) return whole();
  auto at = [&](int64_t layers) {
    WorkloadSpec s = w;
    s.layers = layers;
    return compile(s, opts);
  };
  Compilation three = at(3), four = at(4);
  std::string why;
  auto t = LayerTemplate::make(three.code.program, four.code.program, opts.codegen.hbm_alignment, why);
  if (!t) {
    r.why_not = "the 3- and 4-layer programs make no template: " + why;
    return whole();
  }
  r.program = t->instantiate(r.layers);
  r.regional = true;
  r.layer_instructions = t->repeated_instructions();
  r.kernels = r.program.kernels.size();
  // Compulsory bytes (every input and output once) are a sum over layers: affine in the depth.
  const int64_t c3 = three.compulsory_hbm_bytes, c4 = four.compulsory_hbm_bytes;
  r.compulsory_hbm_bytes = c4 + (c4 - c3) * (r.layers - 4);
  return r;
}

}  // namespace lpu
