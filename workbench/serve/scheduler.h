// One replica's scheduler: vLLM-style continuous batching over a paged KV cache.
//
// Each step: (1) every running sequence that is decoding gets one token, oldest first ("decode
// first": a decode never waits behind a prefill); (2) running sequences still prefilling (a
// chunked prompt, or a recomputation) get their next chunk; (3) waiting requests are admitted
// in arrival order (FCFS: the first that does not fit stops admission, no overtaking) while the
// token budget, the sequence cap and free KV blocks allow. Blocks are allocated for the tokens
// a step computes (as vLLM v1 does), so admission needs blocks only for the first chunk. When a
// running sequence needs a block and none is free, the newest running sequence is preempted by
// recomputation: its blocks are freed and it goes back to the front of the waiting queue, to
// prefill its prompt and the tokens it had generated again.
#pragma once
#include <cstdint>
#include <deque>
#include <vector>

#include "serve/kv_cache.h"
#include "serve/step_cost.h"

namespace lpu::serve {

struct SchedulerConfig {
  int64_t max_num_batched_tokens = 2048;  // token budget per step
  int64_t max_num_seqs = 256;             // sequences per step
  bool chunked_prefill = true;
  int64_t chunk_size = 512;                // longest prefill chunk of one sequence in a step
  int64_t block_size = 16;                 // tokens per KV block
  int64_t kv_capacity_blocks = 1'000'000;  // from device memory; the caller computes it
};

// What a replica does: everything, or one phase of a disaggregated cluster.
enum class ReplicaRole { Unified, Prefill, Decode };

// A request inside a replica. `computed` tokens have KV in the cache; `prefill_target` is how
// many must be computed before the next token comes out (the prompt, or after a preemption
// the prompt and every token generated so far).
struct Seq {
  int64_t req = 0;  // index into the simulation's request table
  int64_t id = 0;   // the request's id (what the step-cost model sees)
  int64_t prompt = 0, output = 0;
  int64_t prefill_target = 0;
  int64_t computed = 0;
  int64_t generated = 0;
  int64_t blocks = 0;
  bool prefilling() const { return computed < prefill_target; }
};

// A step's outcome for one sequence.
struct SeqOutcome {
  int64_t req = 0;
  int64_t new_tokens = 0;
  bool emitted = false;     // an output token came out of this step
  bool finished = false;    // its last token: the request is done
  bool handed_off = false;  // a prefill replica finished its prompt: its KV goes to a decode replica
  int64_t kv_tokens = 0;    // handed_off: the tokens of KV to move ...
  int64_t kv_blocks = 0;    // ... and the blocks they hold here until the transfer ends
};

class Replica {
 public:
  Replica(const SchedulerConfig& config, ReplicaRole role);

  void enqueue(const Seq& seq) { waiting_.push_back(seq); }
  bool has_work() const { return !waiting_.empty() || !running_.empty(); }
  bool busy() const { return busy_; }

  // Plans the next step; an empty batch means nothing can run now (blocks held by transfers).
  // `preempted` receives the requests evicted while planning.
  StepBatch plan_step(std::vector<int64_t>* preempted);
  // The request-table indices of the planned step's sequences, in the batch's order.
  const std::vector<int64_t>& planned_requests() const { return planned_reqs_; }
  // The planned step has run: advances its sequences, frees the blocks of finished ones.
  std::vector<SeqOutcome> finish_step();
  // A handed-off sequence's KV has left (prefill role): its blocks come back.
  void release_blocks(int64_t n) { kv_.release(n); }

  // Tokens still to compute for requests here (the router's "least outstanding tokens").
  int64_t outstanding_tokens() const;
  const KvBlocks& kv() const { return kv_; }
  size_t waiting() const { return waiting_.size(); }
  size_t running() const { return running_.size(); }

 private:
  int64_t prefill_piece(const Seq& s, int64_t budget) const;
  bool grow(size_t i, int64_t tokens, int64_t* budget, std::vector<int64_t>* preempted);
  void preempt_newest(int64_t* budget, std::vector<int64_t>* preempted);
  void schedule_running(bool decodes, int64_t* budget, std::vector<int64_t>* preempted);
  void admit_waiting(int64_t* budget);
  SeqOutcome advance(Seq& s, int64_t tokens);

  SchedulerConfig config_;
  ReplicaRole role_;
  KvBlocks kv_;
  std::deque<Seq> waiting_;
  std::vector<Seq> running_;      // in admission order: the back is the newest
  std::vector<int64_t> planned_;  // tokens each running sequence computes in the planned step
  std::vector<int64_t> planned_reqs_;
  bool busy_ = false;
};

}  // namespace lpu::serve
