// ESL: the expandable synchronisation link between devices. esl.send copies a local-memory
// tile to another device's local memory: the sender's link is busy for bytes / bandwidth; the
// tile and a token arrive at the receiver after the link latency on top (the receiver waits
// on the token with sync.wait). Tokens without data use sync.signal dev:D.
#pragma once
#include "model/engine.h"

namespace lpu::sim {

class Esl : public Engine {
 public:
  Esl(sc_core::sc_module_name name, DeviceContext& ctx);

 protected:
  double execute(const IssueTicket& tk, double start_ps) override;
  Span occupancy() const override { return Span::Sync; }
  using Engine::add_to;
  void add_to(DeviceStats& d) const override;  // what it sent

 private:
  uint64_t bytes_ = 0, sends_ = 0;
};

}  // namespace lpu::sim
