#include "model/esl_link.h"

#include <algorithm>

#include "model/sim_context.h"

namespace lpu::sim {

EslLink::EslLink(sc_core::sc_module_name name, SyncState& sync, bool mirror)
    : sc_core::sc_module(name), sync_(sync), mirror_(mirror) {
  SC_METHOD(deliver);
  sensitive << due_;
  dont_initialize();
}

void EslLink::send(const sc_core::sc_time& delay, Transfer t) {
  ++sync_.in_transit;
  if (mirror_) t.target = 0;
  heap_.push_back({sc_core::sc_time_stamp() + delay, seq_++, std::move(t)});
  std::push_heap(heap_.begin(), heap_.end(), later);
  // An earlier pending notification wins over this one; a later one is replaced by it.
  due_.notify(heap_.front().at - sc_core::sc_time_stamp());
}

void EslLink::deliver() {
  const sc_core::sc_time now = sc_core::sc_time_stamp();
  while (!heap_.empty() && heap_.front().at <= now) {
    std::pop_heap(heap_.begin(), heap_.end(), later);
    Transfer t = std::move(heap_.back().t);
    heap_.pop_back();
    DeviceContext* rx = sync_.contexts[static_cast<size_t>(t.target)];
    rx->energy.lmu_write_bytes += t.bytes;  // the tile lands in the receiver's local memory
    if (!t.tile.empty() && !rx->lmu_data.empty())
      std::copy(t.tile.begin(), t.tile.end(), rx->lmu_data.begin() + static_cast<long>(t.dst / 4));
    --sync_.in_transit;
    ++sync_.tokens[static_cast<size_t>(t.target)][t.token];
    sync_.changed[static_cast<size_t>(t.target)]->notify(sc_core::SC_ZERO_TIME);
  }
  if (!heap_.empty()) due_.notify(heap_.front().at - now);
}

}  // namespace lpu::sim
