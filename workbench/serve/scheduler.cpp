#include "serve/scheduler.h"

#include <algorithm>

#include "support/error.h"

namespace lpu::serve {

Replica::Replica(const SchedulerConfig& config, ReplicaRole role)
    : config_(config), role_(role), kv_(config.block_size, config.kv_capacity_blocks) {}

// The tokens of `s`'s prefill that fit this step. Without chunked prefill a prompt runs whole or
// waits for a step with budget for it; only a recomputation longer than the whole budget (a
// preempted sequence that had generated many tokens) is split, or it could never resume.
int64_t Replica::prefill_piece(const Seq& s, int64_t budget) const {
  int64_t remaining = s.prefill_target - s.computed;
  if (config_.chunked_prefill) return std::min({remaining, config_.chunk_size, budget});
  if (remaining <= config_.max_num_batched_tokens) return remaining <= budget ? remaining : 0;
  return std::min(remaining, budget);
}

// Evicts the newest running sequence; recomputation later rebuilds its KV from its tokens.
void Replica::preempt_newest(int64_t* budget, std::vector<int64_t>* preempted) {
  Seq victim = running_.back();
  *budget += planned_.back();
  kv_.release(victim.blocks);
  running_.pop_back();
  planned_.pop_back();
  victim.prefill_target = victim.prompt + victim.generated;
  victim.computed = 0;
  victim.blocks = 0;
  waiting_.push_front(victim);  // older victims are pushed later, so they end up in front
  preempted->push_back(victim.req);
}

// Gives running sequence i the blocks for `tokens` more tokens, preempting newer sequences
// while none are free. False if i itself had to go.
bool Replica::grow(size_t i, int64_t tokens, int64_t* budget, std::vector<int64_t>* preempted) {
  int64_t need = kv_.blocks_for(running_[i].computed + tokens) - running_[i].blocks;
  while (need > kv_.free()) {
    bool self = running_.size() - 1 == i;
    preempt_newest(budget, preempted);
    if (self) return false;
  }
  kv_.allocate(need);
  running_[i].blocks += need;
  return true;
}

// One pass over the running sequences: the decoding ones, or the ones still prefilling.
void Replica::schedule_running(bool decodes, int64_t* budget, std::vector<int64_t>* preempted) {
  for (size_t i = 0; i < running_.size(); ++i) {
    const Seq& s = running_[i];
    if (planned_[i] > 0 || decodes == s.prefilling()) continue;
    int64_t want = decodes ? 1 : prefill_piece(s, *budget);
    if (want == 0 || want > *budget) continue;
    if (!grow(i, want, budget, preempted)) break;  // i was the newest: nothing after it
    planned_[i] = want;
    *budget -= want;
  }
}

// FCFS admission: the first request that does not fit stops it (no overtaking, as vLLM).
void Replica::admit_waiting(int64_t* budget) {
  while (!waiting_.empty() && static_cast<int64_t>(running_.size()) < config_.max_num_seqs && *budget > 0) {
    Seq s = waiting_.front();
    int64_t want = s.prefilling() ? prefill_piece(s, *budget) : 1;
    if (want == 0) break;
    int64_t need = kv_.blocks_for(s.computed + want) - s.blocks;
    if (need > kv_.free()) break;
    kv_.allocate(need);
    s.blocks += need;
    waiting_.pop_front();
    running_.push_back(s);
    planned_.push_back(want);
    *budget -= want;
  }
}

StepBatch Replica::plan_step(std::vector<int64_t>* preempted) {
  LPU_CHECK(!busy_, "planning a step on a busy replica");
  planned_.assign(running_.size(), 0);
  int64_t budget = config_.max_num_batched_tokens;
  size_t evicted = preempted->size();
  schedule_running(true, &budget, preempted);
  schedule_running(false, &budget, preempted);
  // A step that had to preempt admits nobody (as vLLM v1): the blocks just freed would
  // otherwise go to a newcomer, or straight back to the victim, which would restart from zero.
  if (preempted->size() == evicted) admit_waiting(&budget);
  StepBatch batch;
  planned_reqs_.clear();
  for (size_t i = 0; i < running_.size(); ++i) {
    if (planned_[i] == 0) continue;
    const Seq& s = running_[i];
    batch.seqs.push_back(SeqWork{s.id, s.computed, planned_[i], s.prefilling()});
    planned_reqs_.push_back(s.req);
  }
  busy_ = !batch.seqs.empty();
  return batch;
}

SeqOutcome Replica::advance(Seq& s, int64_t tokens) {
  SeqOutcome o;
  o.req = s.req;
  o.new_tokens = tokens;
  bool was_prefilling = s.prefilling();
  s.computed += tokens;
  // A decode step, or the step that completes a prefill, produces the next token.
  o.emitted = !was_prefilling || !s.prefilling();
  if (o.emitted) ++s.generated;
  o.finished = o.emitted && s.generated >= s.output;
  o.handed_off = role_ == ReplicaRole::Prefill && o.emitted && !o.finished;
  if (o.handed_off) o.kv_tokens = s.computed, o.kv_blocks = s.blocks;
  return o;
}

std::vector<SeqOutcome> Replica::finish_step() {
  LPU_CHECK(busy_, "finishing a step that was not planned");
  busy_ = false;
  std::vector<SeqOutcome> out;
  std::vector<Seq> still;
  for (size_t i = 0; i < running_.size(); ++i) {
    if (planned_[i] == 0) {
      still.push_back(running_[i]);
      continue;
    }
    SeqOutcome o = advance(running_[i], planned_[i]);
    if (o.finished) kv_.release(running_[i].blocks);
    if (!o.finished && !o.handed_off) still.push_back(running_[i]);
    out.push_back(o);
  }
  running_ = std::move(still);
  planned_.clear();
  return out;
}

int64_t Replica::outstanding_tokens() const {
  int64_t n = 0;
  auto add = [&](const Seq& s) {
    n += s.prefill_target - s.computed;
    if (role_ != ReplicaRole::Prefill) n += s.output - s.generated;
  };
  for (const Seq& s : waiting_) add(s);
  for (const Seq& s : running_) add(s);
  return n;
}

}  // namespace lpu::serve
