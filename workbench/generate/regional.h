// Regional compilation of a built-in decoder (isa/layer_template.h): compile the model at 3 and
// 4 layers, derive the repeated middle layer, and instantiate it for the model's depth, instead
// of compiling every layer. `lpu generate` compiles its steps this way; `lpu compile --regional`
// and `lpu-bench compile` show it; tests/test_regional.cpp checks it against full compiles.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "driver/compile.h"
#include "isa/program.h"
#include "workload/workload.h"

namespace lpu {

struct RegionalProgram {
  Program program;
  size_t kernels = 0;
  int64_t compulsory_hbm_bytes = 0;
  bool regional = false;  // false: compiled whole (why_not says why)
  std::string why_not;
  int64_t layers = 0;             // the depth compiled
  size_t layer_instructions = 0;  // regional: instructions of one repeated layer
};

// The depth a workload's decoder runs at (its `layers` key capped by the model's), or -1 when
// it is no built-in decoder.
int64_t decoder_depth(const WorkloadSpec& w);

// Whether `w` can be compiled regionally: a built-in decoder of 5 or more layers (a shallower
// one compiles whole faster than at 3 and 4 layers); a tensor-parallel rank's too (w.tp, tp_rank).
bool regional_applies(const WorkloadSpec& w, std::string* why_not = nullptr);

// `compile` is the compile pipeline to use (compile_graph, or one with a shared cost memo);
// it is called on the graphs at 3 and 4 layers, or on the whole graph when regional
// compilation does not apply or the two programs make no template (why_not says which).
RegionalProgram compile_regional(const WorkloadSpec& w, const CompileOptions& opts,
                                 const std::function<Compilation(const Graph&, const CompileOptions&)>& compile);
// The same with a pipeline that takes the workload at each depth (it builds the graph when it
// needs one: generate's front-end templates, generate/front_end_steps.h, may not).
RegionalProgram compile_regional(const WorkloadSpec& w, const CompileOptions& opts,
                                 const std::function<Compilation(const WorkloadSpec&, const CompileOptions&)>& compile);

}  // namespace lpu
