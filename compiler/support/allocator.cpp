#include "support/allocator.h"

#include <malloc.h>

namespace lpu {

void retain_freed_memory() {
  constexpr int kMiB = 1 << 20;
  mallopt(M_MMAP_THRESHOLD, 64 * kMiB);
  mallopt(M_TRIM_THRESHOLD, 256 * kMiB);
}

}  // namespace lpu
