// The ESL's transfers in flight: a token (sync.signal over the link) or a tile and its token
// (esl.send), delivered into the receiving device at their arrival time. One SC_METHOD
// delivers them all from a queue ordered by arrival; a spawned thread per transfer (as before)
// cost a coroutine stack mapped and unmapped each time, about half of a four-device
// LLaMA-2-70B decode step's simulation. Arrival times, and so every statistic, are the same.
#pragma once
#include <cstdint>
#include <systemc>
#include <vector>

namespace lpu::sim {

struct SyncState;

class EslLink : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(EslLink);
  // mirror: device 0 is simulated alone for devices that are rotations of it
  // (device_symmetry.h); what it sends to device k stands for what device devices-k sends
  // to it at the same time, so every transfer is delivered into device 0.
  EslLink(sc_core::sc_module_name name, SyncState& sync, bool mirror);

  struct Transfer {
    int target = 0;
    int64_t token = 0;
    uint64_t dst = 0;         // local-memory byte address of the tile in the receiver
    uint64_t bytes = 0;       // the tile's bytes (0: a token alone)
    std::vector<float> tile;  // functional mode: the tile's data (empty otherwise)
  };
  // Delivers `t` after `delay` from now (it counts as in transit until then).
  void send(const sc_core::sc_time& delay, Transfer t);

 private:
  void deliver();
  struct Pending {
    sc_core::sc_time at;
    uint64_t seq;  // sends at one time arrive in the order they were sent
    Transfer t;
  };
  static bool later(const Pending& a, const Pending& b) { return a.at != b.at ? a.at > b.at : a.seq > b.seq; }
  std::vector<Pending> heap_;
  uint64_t seq_ = 0;
  sc_core::sc_event due_;
  SyncState& sync_;
  bool mirror_;
};

}  // namespace lpu::sim
