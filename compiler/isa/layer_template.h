// A program periodic in the number of decoder layers: regional compilation of the repeated
// decoder layer, as torch.compile compiles a repeated block once and reuses it.
//
// Built from the programs of one model compiled at 3 and at 4 layers. In both, every buffer,
// kernel, host op and instruction belongs to a layer (its name, its node's or its kernel's name, carries the
// builder's layer tag `l<i>.`, e.g. `l2.q_proj.weight`, `k7_l2.q_scaled_x6`) or to none (the
// embedding, the final norm, the LM head). Layer 0 and the last layer may differ from the others
// (the first layer's norm has no earlier kernel to fuse into; the last one's feeds the final
// norm); the middle layers 1 .. L-2 are one block repeated. The 4-layer program must be the
// 3-layer one with, after each run of layer-1 items, a copy of that run for layer 2 (one more
// middle layer), and every number of every item (instruction fields, kernel and buffer indices,
// offsets into buffers, numbers inside names, buffer dimensions) must be affine in the layer
// count L and, in a middle copy, in its layer j:
//     value(L, j) = value at (4, 1) + sL * (L - 4) + sj * (j - 1)
// with sL from the 3- and 4-layer programs and sj from the 4-layer program's layers 1 and 2.
// HBM addresses are kept as (region leader's buffer index, offset) and placed by the layout rule
// (isa/hbm_layout.h), so buffers that multiply with L move the ones after them exactly; a
// buffer's region leader is one more affine number (a middle layer's intermediate shares the
// region of layer 0's, codegen/hbm_assign.h).
//
// Instantiating at L >= 3 repeats the middle block L - 2 times. At 3 it gives back the 3-layer
// program exactly (make() checks this); at L > 4 it is exact when the compiler treats every
// middle layer alike, which holds for the built-in decoders (their layers are identical up to
// their weights, and fusion, tiling and LMU allocation look at one kernel at a time); verify()
// compares with a compiled program, and tests/test_regional.cpp does so for every built-in
// model at its full depth.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "isa/program.h"

namespace lpu {

class LayerTemplate {
 public:
  // Nullopt, with `why` set, when the programs at 3 layers (`three`) and 4 layers (`four`) do
  // not make a template.
  static std::optional<LayerTemplate> make(const Program& three, const Program& four, int64_t hbm_alignment,
                                           std::string& why);
  // The program at `layers` >= 3.
  Program instantiate(int64_t layers) const;
  // "" when `compiled`, compiled at `layers`, equals instantiate(layers); else the first difference.
  std::string verify(const Program& compiled, int64_t layers) const;
  size_t repeated_instructions() const;  // instructions of one middle layer

  // One number of one item and how it moves: value(L, j) = v + sL * (L - 4) + sj * (j - 1).
  struct Affine {
    int64_t v = 0, sL = 0, sj = 0;
    int64_t at(int64_t L, int64_t j) const { return v + sL * (L - 4) + sj * (j - 1); }
  };
  // A name with the numbers in it made affine: text parts and the numbers between them.
  struct Name {
    std::vector<std::string> text;  // one more than nums
    std::vector<Affine> nums;
    std::string at(int64_t L, int64_t j) const;
  };

 private:
  // An item of the 4-layer program: emitted once (middle = false), or, as the first item of a
  // run of `run` middle items, with the run repeated for layers 1 .. L-2.
  struct Slot {
    size_t item;     // index into the 4-layer program's list
    size_t run = 0;  // > 0: a middle run starts here
    bool middle = false;
  };
  struct BufferItem {
    Name name;
    std::vector<Affine> dims;
    Affine leader;  // the buffer index of its HBM region's leader (isa/hbm_layout.h)
  };
  struct HostOpItem {
    Name node, output;
    std::vector<Name> inputs;
  };
  struct FieldDelta {
    uint32_t field;
    uint16_t src;
    int64_t sL, sj;
  };
  struct InstrItem {
    std::vector<FieldDelta> deltas;  // fields that move
    Affine kernel;
    bool hbm = false;  // its HBM address is (buffer, offset)
    Affine buffer, offset;
  };
  // The phases of make(): false, with `why` set, when the items do not repeat.
  // The HBM layout of the 3- and 4-layer programs: bases and region leaders (isa/hbm_layout.h).
  struct Layouts {
    std::vector<uint64_t> three, four;
    std::vector<size_t> leaders_three, leaders_four;
  };
  bool make_buffers(const Program& three, const Program& four, Layouts& hbm, std::string& why);
  bool make_kernels(const Program& three, const Program& four, std::vector<int64_t>& ka, std::vector<int64_t>& kb,
                    std::string& why);
  bool make_host_ops(const Program& three, const Program& four, std::string& why);
  bool make_code(const Program& three, const Program& four, const std::vector<int64_t>& ka,
                 const std::vector<int64_t>& kb, const Layouts& hbm, std::string& why);
  Program four_;
  int64_t alignment_ = 1;
  Name program_name_;
  std::vector<Slot> buffer_slots_, kernel_slots_, host_op_slots_, code_slots_;
  std::vector<BufferItem> buffers_;  // by item of the 4-layer program
  std::vector<Name> kernels_;
  std::vector<HostOpItem> host_ops_;
  std::vector<InstrItem> code_;
};

}  // namespace lpu
