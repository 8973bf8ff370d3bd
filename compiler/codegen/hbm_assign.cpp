#include "codegen/hbm_assign.h"

#include <algorithm>
#include <map>

#include "support/layer_tag.h"

namespace lpu {

namespace {

// Kernel indices of a buffer's first write and last access.
struct Lifetime {
  size_t first = 0, last = 0;
};

}  // namespace

HbmAssignment assign_hbm(const LoopProgram& p, const Schedule& s, const std::function<bool(const Kernel&)>& elided) {
  HbmAssignment a;
  std::map<std::string, size_t> index;
  auto place = [&](const std::string& name) {
    if (index.count(name)) return;
    index[name] = a.order.size();
    a.order.push_back(name);
  };
  for (const auto& n : p.inputs)
    if (p.buffers.at(n).role == BufferRole::Weight) place(n);
  for (const auto& n : p.inputs)
    if (p.buffers.at(n).role != BufferRole::Weight) place(n);
  std::map<std::string, Lifetime> life;  // the intermediates in HBM
  for (size_t ki = 0; ki < s.kernels.size(); ++ki) {
    const Kernel& k = s.kernels[ki];
    if (elided(k)) continue;
    for (const auto& o : k.hbm_outputs) {
      place(o);
      if (p.buffers.at(o).role == BufferRole::Intermediate)
        life.try_emplace(o, Lifetime{ki, ki}).first->second.last = ki;
    }
  }
  for (size_t ki = 0; ki < s.kernels.size(); ++ki)
    for (int n : s.kernels[ki].nodes)
      for (const auto& b : p.nodes[static_cast<size_t>(n)].loaded_buffers())
        if (auto it = life.find(b); it != life.end()) it->second.last = std::max(it->second.last, ki);

  // Per part of a layer (the name without its layer number): its buffers in order of their
  // first write. They share one region when each is dead before the next is written; a part
  // whose lifetimes overlap (two layers' copies live at once) shares nothing, so that every
  // layer's copy has the same leader or its own, whatever the depth.
  std::map<std::string, std::vector<size_t>> parts;
  a.leader.resize(a.order.size());
  for (size_t i = 0; i < a.order.size(); ++i) {
    a.leader[i] = i;
    if (!life.count(a.order[i])) continue;
    std::string part = without_layer_number(a.order[i]);
    if (part != a.order[i]) parts[part].push_back(i);
  }
  for (const auto& [part, members] : parts) {
    bool disjoint = true;
    size_t dead_after = 0;  // the last access of every member so far
    for (size_t m = 0; m < members.size() && disjoint; ++m) {
      const Lifetime& t = life.at(a.order[members[m]]);
      disjoint = m == 0 || dead_after < t.first;
      dead_after = std::max(dead_after, t.last);
    }
    if (disjoint)
      for (size_t m : members) a.leader[m] = members.front();
  }
  return a;
}

}  // namespace lpu
