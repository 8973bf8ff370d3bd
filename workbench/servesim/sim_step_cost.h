// Serving step costs from the compiled program on the cycle model (docs/serving.md, "Step
// costs"). Two models behind serve::StepCostModel:
//
// ExactStepCost compiles and simulates every step (`lpu serve --exact`): the truth, and slow.
//
// FittedStepCost builds itself from the simulator on demand. A step of S sequences, N tokens,
// sequence i computing n_i tokens on c_i cached ones, costs
//     Z(m, S, k) + sum_j [E(0, n_j) - E(0, m_k)] + sum_i [E(c_i, n_i) - E(b_i, n_i)],
// m = N - S + 1, where k of the sequences (the j) compute more than one token. Z(m, S, k) is
// the simulated step of S - k decodes (one token on a one-token cache) and k sequences sharing
// m + k - 1 tokens evenly (m_k each) on empty caches: the projections, the MLP, the LM head
// and the per-sequence kernels over the step's tokens and sequences. E(c, n) is the simulated
// step of one sequence of n tokens on c cached ones: the middle sum turns the probe's even
// chunks into the step's (their attention within the chunk; the rest of E(0, n) is near affine
// in n and cancels), the last adds each sequence's attention over its cache beyond the probe's
// (b_i = 1 for a decode, 0 for a chunk). Each is simulated at grid points (m, S and n on a
// geometric grid of ratio about 1.5; c at 1, 2, 4, ... below `context_step`, then every
// `context_step` tokens), exact there, and
// interpolated linearly between them; a decode step (every n_i = 1, k = 0, m = 1) interpolates
// in S and in each c_i only. Points are simulated with the decoder at 1 and 2 layers extended
// to its depth (StepRunner::run_by_layers), memoised for the run and, given a file, across runs.
// Time and energy are modelled alike.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "generate/step_runner.h"
#include "serve/step_cost.h"

namespace lpu {

class ExactStepCost : public serve::StepCostModel {
 public:
  // `in_sequence`: the steps priced are a run's, one after another (`--exact`), so their programs
  // are symbolic in the cached contexts (StepRunner::run_in_sequence); else each is compiled
  // (or taken from the exact cache) alone: the sampled steps of the error check.
  ExactStepCost(const WorkloadSpec& base, StepRunner& runner, bool in_sequence)
      : base_(base), runner_(runner), in_sequence_(in_sequence) {}
  serve::StepCost cost(const serve::StepBatch& batch) override;
  size_t steps() const { return steps_; }

 private:
  const WorkloadSpec& base_;
  StepRunner& runner_;
  bool in_sequence_;
  size_t steps_ = 0;
};

struct FittedStepCostOptions {
  int64_t context_step = 256;  // grid spacing of cached contexts
  // The on-disk memo (a JSON file; "" for none): read when the model is made, written by
  // save(). Its key (cache_key below) must match, else it is ignored and rewritten.
  std::string cache_file;
};

class FittedStepCost : public serve::StepCostModel {
 public:
  // `key` names everything the points depend on: model, architecture, fusion, compiler version.
  FittedStepCost(const WorkloadSpec& base, StepRunner& runner, std::string key, FittedStepCostOptions o = {});
  serve::StepCost cost(const serve::StepBatch& batch) override;
  // Writes the memo to the cache file (atomically: a temporary renamed over it). Not on a
  // file system error: the run's results do not depend on it (a warning is the caller's).
  bool save(std::string* error = nullptr) const;
  size_t points() const { return points_.size(); }
  size_t simulated() const { return simulated_; }  // points simulated by this run (the others came from the file)
  size_t loaded() const { return loaded_; }

  // The grids (exposed for tests): the geometric token grid and where x falls in it.
  static const std::vector<int64_t>& token_grid();
  static std::pair<int64_t, int64_t> bracket_tokens(int64_t x);

 private:
  struct Point {
    double time_s = 0, energy_j = 0;
  };
  Point simulate(const serve::StepBatch& b, const std::string& point_key);
  Point z(int64_t m, int64_t s, int64_t k);
  Point e(int64_t c, int64_t n);
  Point context_growth(int64_t c, int64_t n);  // E(c, n) - E(0, n), interpolated in c and n
  Point z_interpolated(int64_t m, int64_t s, int64_t k);
  Point prefill(double n);  // one sequence's n tokens on an empty cache, interpolated

  const WorkloadSpec& base_;
  StepRunner& runner_;
  std::string key_;
  FittedStepCostOptions o_;
  std::map<std::string, Point> points_;
  std::vector<Point> decode_growth_;  // context_growth(c, 1) by c, filled on demand
  std::vector<bool> decode_growth_set_;
  size_t simulated_ = 0, loaded_ = 0;
};

// The memo's key: the served decoder, the architecture (as JSON), the fusion policy and the
// compiler's version (the sources' git revision the build records, or the build's timestamp).
std::string step_cost_cache_key(const WorkloadSpec& base, const ArchConfig& arch, const std::string& fusion);

}  // namespace lpu
