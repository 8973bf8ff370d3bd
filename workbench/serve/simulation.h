// The discrete-event core behind simulate_serving (serve/cluster.h). Events are step ends,
// KV-transfer ends and arrivals; at equal times they run in that order (resources are freed
// before they are asked for), then by the order they were created, so a run is a pure
// function of its inputs. After the events of one instant, every idle replica with work plans
// and starts a step (prefill pool first, each pool in replica order).
#pragma once
#include <queue>
#include <vector>

#include "serve/cluster.h"

namespace lpu::serve {

class Simulation {
 public:
  Simulation(const RequestList& requests, const ClusterConfig& config);
  ServeResult run();

 private:
  enum class Kind { StepDone = 0, TransferDone = 1, Arrival = 2 };
  struct Event {
    double t;
    Kind kind;
    int64_t order;
    int pool, replica;  // StepDone: the replica; TransferDone: the source prefill replica
    int64_t req, dst, kv_tokens, kv_blocks;
    bool operator>(const Event& o) const {
      if (t != o.t) return t > o.t;
      if (kind != o.kind) return kind > o.kind;
      return order > o.order;
    }
  };
  struct InFlight {
    StepBatch batch;
    StepCost cost;
  };

  void push(Event e);
  int route(int pool);
  void on_arrival(const Event& e);
  void on_step_done(const Event& e);
  void on_transfer_done(const Event& e);
  void hand_off(int src, const SeqOutcome& o);
  void start_steps();
  bool start_step(int pool, int r);
  void truncate(const std::string& reason);

  const RequestList& requests_;
  const ClusterConfig& config_;
  const PoolConfig* pool_config_[2];
  std::vector<Replica> pools_[2];  // [0]: unified or prefill, [1]: decode
  std::vector<InFlight> in_flight_[2];
  std::vector<ReplicaSeries> series_[2];
  std::vector<int64_t> incoming_tokens_;  // decode replicas: tokens of caches on their way
  std::vector<double> link_free_s_;       // prefill replicas: when their link is next free
  std::vector<RequestRecord> records_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  int64_t next_order_ = 0;
  int64_t round_robin_[2] = {0, 0};
  double now_ = 0, in_system_area_ = 0;
  int64_t in_system_ = 0, steps_ = 0;
  bool truncated_ = false;
  std::string reason_;
};

}  // namespace lpu::serve
