// The schedule verifier (schedule/schedule.h, verify_schedule): what code generation and every
// handler rely on when they walk kernels, checked once after each scheduling so a broken
// fusion fails here, naming the kernel, instead of as a wrong value or a missing buffer.
#include <map>
#include <set>

#include "schedule/schedule.h"
#include "support/error.h"

namespace lpu {

void verify_schedule(const LoopProgram& p, const Schedule& s) {
  auto fail = [&](const Kernel& k, const std::string& why) {
    throw InputError(strcat("schedule of ", p.name, " (", s.policy, "): kernel ", k.name, ": ", why));
  };
  std::vector<int> owner(p.nodes.size(), -1);
  std::map<std::string, int> written_by;   // buffer -> kernel whose writers produce it
  std::map<std::string, int> hbm_written;  // buffer -> kernel that writes it to HBM
  std::map<std::string, size_t> writers;   // buffer -> nodes writing it (a concatenation: several)
  for (const LoopNode& n : p.nodes) ++writers[n.out()];
  for (size_t ki = 0; ki < s.kernels.size(); ++ki) {
    const Kernel& k = s.kernels[ki];
    if (k.nodes.empty()) fail(k, "no nodes");
    std::map<std::string, size_t> local;  // written by earlier nodes of this kernel: how many
    for (int n : k.nodes) {
      if (n < 0 || static_cast<size_t>(n) >= p.nodes.size()) fail(k, strcat("node index ", n, " out of range"));
      if (owner[n] >= 0) fail(k, strcat("node ", p.nodes[n].name, " is also in kernel ", s.kernels[owner[n]].name));
      owner[n] = static_cast<int>(ki);
      const LoopNode& node = p.nodes[n];
      if (is_opaque(node.kind) && k.nodes.size() != 1)
        fail(k,
             strcat(node.kind == LoopKind::Host ? "host node " : "collective node ", node.name, " fused with others"));
      std::vector<std::string> reads = node.host_inputs;
      for (const Expr& l : node.loads()) reads.push_back(l->buffer);
      for (const std::string& b : reads) {
        if (auto it = local.find(b); it != local.end()) {
          if (it->second < writers.at(b))  // a concatenation joins in local memory only whole
            fail(k, strcat("node ", node.name, " reads ", b, " after ", it->second, " of its ", writers.at(b),
                           " writers in this kernel (a concatenation must hold every part)"));
          continue;
        }
        if (p.buffers.at(b).role == BufferRole::Input || p.buffers.at(b).role == BufferRole::Weight) continue;
        auto w = written_by.find(b);
        if (w == written_by.end())
          fail(k,
               strcat("node ", node.name, " reads ", b, " before any kernel writes it (or a later node of its own)"));
        if (!hbm_written.count(b) || hbm_written.at(b) != w->second)
          fail(k, strcat("node ", node.name, " reads ", b, ", which kernel ", s.kernels[w->second].name,
                         " keeps local (not in its hbm_outputs)"));
      }
      ++local[node.out()];
    }
    for (const auto& [b, n] : local) written_by[b] = static_cast<int>(ki);
    for (const std::string& b : k.hbm_outputs) {
      if (!local.count(b)) fail(k, strcat("hbm output ", b, " is not written by the kernel"));
      hbm_written[b] = static_cast<int>(ki);
    }
  }
  for (size_t n = 0; n < p.nodes.size(); ++n)
    if (owner[n] < 0)
      throw InputError(strcat("schedule of ", p.name, " (", s.policy, "): node ", p.nodes[n].name, " is in no kernel"));
  for (const std::string& o : p.outputs)
    if (!hbm_written.count(o))
      throw InputError(strcat("schedule of ", p.name, " (", s.policy, "): output ", o, " never reaches HBM"));
}

}  // namespace lpu
