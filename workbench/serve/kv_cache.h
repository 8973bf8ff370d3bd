// The paged KV cache's bookkeeping (vLLM's block manager, reduced to counts): a sequence holding
// T tokens of KV occupies ceil(T / block_size) blocks. Which physical blocks they are does not
// change any step's cost, so only the numbers are kept.
#pragma once
#include <cstdint>

#include "support/error.h"

namespace lpu::serve {

class KvBlocks {
 public:
  KvBlocks(int64_t block_size, int64_t capacity_blocks) : block_size_(block_size), capacity_(capacity_blocks) {}

  int64_t blocks_for(int64_t tokens) const { return (tokens + block_size_ - 1) / block_size_; }
  int64_t free() const { return capacity_ - used_; }
  int64_t used() const { return used_; }
  int64_t capacity() const { return capacity_; }
  int64_t block_size() const { return block_size_; }
  void allocate(int64_t n) {
    LPU_CHECK(n >= 0 && n <= free(), "allocating ", n, " KV blocks with ", free(), " free");
    used_ += n;
  }
  void release(int64_t n) {
    LPU_CHECK(n >= 0 && n <= used_, "releasing ", n, " KV blocks with ", used_, " in use");
    used_ -= n;
  }

 private:
  int64_t block_size_;
  int64_t capacity_;
  int64_t used_ = 0;
};

}  // namespace lpu::serve
