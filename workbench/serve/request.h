// A serving request as the trace files and the generator give it: when it arrives and how many
// tokens it brings and asks for. Lengths are tokens, never text: the simulator prices steps by
// token counts, so the text itself would add nothing.
#pragma once
#include <cstdint>
#include <vector>

namespace lpu::serve {

struct Request {
  int64_t id = 0;
  double arrival_s = 0;       // seconds from the start of the trace
  int64_t prompt_tokens = 0;  // tokens prefilled before the first output token
  int64_t output_tokens = 0;  // tokens generated, the first one by the prefill step
  int64_t line = 0;           // its line in the trace file (0: generated), for messages
};

using RequestList = std::vector<Request>;

}  // namespace lpu::serve
