// What serving a built-in decoder on a replica of `devices` LPUs (tensor parallelism) needs of
// the memory: the weights each device holds, the KV bytes of one token, and the paged KV cache
// that fits in what is left of HBM (docs/serving.md, "KV capacity").
#pragma once
#include <cstdint>
#include <string>

#include "config/arch_config.h"
#include "workload/workload.h"

namespace lpu {

struct Deployment {
  std::string model;
  int64_t devices = 1;
  int64_t max_position = 0;         // the longest sequence the model takes (prompt + output)
  double hbm_bytes_per_device = 0;  // hbm.capacity_gib
  double weight_bytes = 0;          // device 0's share (the largest: the vocabulary may split unevenly)
  double activation_bytes = 0;      // device 0's reserve for the largest step's activations
  double kv_bytes_per_token = 0;    // one token's keys and values, every layer, on device 0
  int64_t kv_capacity_tokens = 0;   // tokens of KV that fit device 0's HBM after weights and activations
  double replica_kv_bytes_per_token() const { return kv_bytes_per_token * static_cast<double>(devices); }
  int64_t kv_capacity_blocks(int64_t block_size) const { return kv_capacity_tokens / block_size; }
};

// InputError when `base` is not a built-in decoder, or when the weights and activations leave
// no room for one block of KV (naming the bytes and the devices it would take).
// `max_step_tokens` is the scheduler's token budget (the largest step's activations).
Deployment plan_deployment(const WorkloadSpec& base, const ArchConfig& arch, int64_t max_step_tokens,
                           int64_t block_size);

}  // namespace lpu
