// SMA/DMA: moves 2-D strided tiles between HBM and the LMU through the HBM's TLM socket.
// A descriptor is split into contiguous runs (one per row, or one for a dense block, or one
// per element when columns are strided); all runs are sent at the same start time (the
// engine pipelines its requests) and the transfer ends when the last run and the LMU port
// are done. Elements are converted between the HBM dtype and the LMU's fp32.
#pragma once
#include <tlm_utils/simple_initiator_socket.h>

#include "model/engine.h"
#include "model/lmu.h"

namespace lpu::sim {

class Dma : public Engine {
 public:
  tlm_utils::simple_initiator_socket<Dma> hbm_socket;
  Dma(sc_core::sc_module_name name, DeviceContext& ctx, Lmu& lmu);

 protected:
  double execute(const IssueTicket& tk, double start_ps) override;
  EngineReport make_report() const override;

 private:
  Lmu& lmu_;
  std::vector<uint8_t> staging_;
  // Scratch of execute(), kept to spare allocations per instruction.
  struct Run {
    int64_t r, c, n;
  };
  std::vector<Run> runs_;
  std::vector<int64_t> row_base_;
  tlm::tlm_generic_payload trans_;
};

}  // namespace lpu::sim
