#include "handlers/interpreter.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "handlers/ops_handler.h"
#include "ops/reduction.h"
#include "support/error.h"

namespace lpu {
namespace {

using Array = std::shared_ptr<std::vector<float>>;

// Enumerates a node's domain (ranges then reduction ranges, row-major) and evaluates
// indices on it.
class InterpreterHandler final : public OpsHandler<Array> {
 public:
  InterpreterHandler(const LoopNode& n, const std::map<std::string, Tensor>& buffers) : node_(n), buffers_(buffers) {
    for (size_t i = 0; i < n.ranges.size(); ++i) {
      vars_.push_back(LoopVar::output(i));
      sizes_.push_back(n.ranges[i]);
    }
    for (size_t i = 0; i < n.reduction_ranges.size(); ++i) {
      vars_.push_back(LoopVar::reduction(i));
      sizes_.push_back(n.reduction_ranges[i]);
    }
    size_ = numel(sizes_);
  }

  // Element offsets of `idx` at every domain point.
  std::vector<int64_t> offsets(const Index& idx) const {
    std::vector<int64_t> out(static_cast<size_t>(size_));
    std::vector<int64_t> pos(sizes_.size(), 0);
    std::vector<int64_t> coef;
    bool affine = idx.is_affine();
    for (auto& v : vars_) coef.push_back(idx.coefficient(v));
    std::map<LoopVar, int64_t> env;
    for (int64_t lin = 0; lin < size_; ++lin) {
      if (affine) {
        int64_t o = idx.constant_part();
        for (size_t k = 0; k < pos.size(); ++k) o += coef[k] * pos[k];
        out[static_cast<size_t>(lin)] = o;
      } else {
        for (size_t k = 0; k < pos.size(); ++k) env[vars_[k]] = pos[k];
        out[static_cast<size_t>(lin)] = idx.evaluate(env);
      }
      for (size_t d = pos.size(); d-- > 0;) {
        if (++pos[d] < sizes_[d]) break;
        pos[d] = 0;
      }
    }
    return out;
  }

  Array load(const ExprNode& e) override {
    auto it = buffers_.find(e.buffer);
    if (it == buffers_.end()) throw InternalError("interpreter: buffer " + e.buffer + " not computed yet");
    const auto& data = it->second.data;
    auto offs = offsets(e.index);
    auto out = std::make_shared<std::vector<float>>(offs.size());
    for (size_t i = 0; i < offs.size(); ++i) {
      if (offs[i] < 0 || offs[i] >= static_cast<int64_t>(data.size()))
        throw InternalError(strcat("interpreter: load ", e.buffer, "[", e.index.str(), "] out of bounds in node ", node_.name));
      (*out)[i] = data[static_cast<size_t>(offs[i])];
    }
    return out;
  }
  Array constant(double value, DType) override {
    return std::make_shared<std::vector<float>>(static_cast<size_t>(size_), static_cast<float>(value));
  }
  Array index_expr(const Index& index) override {
    auto offs = offsets(index);
    auto out = std::make_shared<std::vector<float>>(offs.size());
    for (size_t i = 0; i < offs.size(); ++i) (*out)[i] = static_cast<float>(offs[i]);
    return out;
  }
  Array to_dtype(Array x, DType) override { return x; }
  Array call(ScalarOp op, const std::vector<Array>& args, DType) override {
    auto out = std::make_shared<std::vector<float>>(static_cast<size_t>(size_));
    float a[3] = {0, 0, 0};
    for (int64_t i = 0; i < size_; ++i) {
      for (size_t k = 0; k < args.size(); ++k) a[k] = (*args[k])[static_cast<size_t>(i)];
      (*out)[static_cast<size_t>(i)] = eval_scalar_op(op, a);
    }
    return out;
  }
  Array reduction(ReductionType type, Array v) override {
    int64_t width = numel(node_.reduction_ranges);
    int64_t rows = size_ / std::max<int64_t>(width, 1);
    auto out = std::make_shared<std::vector<float>>(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
      Reducer acc(type);
      for (int64_t c = 0; c < width; ++c) acc.add((*v)[static_cast<size_t>(r * width + c)]);
      (*out)[static_cast<size_t>(r)] = static_cast<float>(acc.result());
    }
    return out;
  }

 private:
  const LoopNode& node_;
  const std::map<std::string, Tensor>& buffers_;
  std::vector<LoopVar> vars_;
  std::vector<int64_t> sizes_;
  int64_t size_ = 1;
};

}  // namespace

std::vector<Tensor> interpret_loop_ir(const LoopProgram& p, const TensorMap& inputs) {
  std::map<std::string, Tensor> buffers;
  for (const auto& name : p.inputs) {
    auto it = inputs.find(name);
    if (it == inputs.end()) throw InputError("interpreter: no data for input " + name);
    buffers[name] = it->second;
  }
  for (const auto& n : p.nodes) {
    if (n.kind == LoopKind::Gather) {  // out[row, c] = table[index(row), c]
      auto [it, fresh] = buffers.try_emplace(n.out(), p.buffers.at(n.out()).type);
      (void)fresh;
      Tensor& out = it->second;
      const Tensor& table = buffers.at(n.gather_table);
      int64_t V = table.type.shape[0], D = n.ranges.back();
      LoopNode rows_view = n;
      rows_view.ranges.pop_back();
      InterpreterHandler h(rows_view, buffers);
      std::unordered_map<const ExprNode*, Array> memo;
      Array idx = evaluate(n.gather_index, h, memo);
      for (size_t r = 0; r < idx->size(); ++r) {
        int64_t v = static_cast<int64_t>((*idx)[r]);
        if (v < 0 || v >= V) throw InputError(strcat("node ", n.name, ": index ", v, " out of range [0, ", V, ")"));
        std::copy_n(table.data.begin() + v * D, D, out.data.begin() + static_cast<int64_t>(r) * D);
      }
      continue;
    }
    InterpreterHandler h(n, buffers);
    Array v = evaluate_node<Array>(n, h);
    auto [it, fresh] = buffers.try_emplace(n.out(), p.buffers.at(n.out()).type);
    Tensor& out = it->second;  // concatenation writers share one buffer
    (void)fresh;
    // Store: the value is over `ranges` (row-major); place each at store_index.
    LoopNode store_view = n;
    store_view.reduction_ranges.clear();
    InterpreterHandler sh(store_view, buffers);
    auto offs = sh.offsets(n.store_index);
    for (size_t i = 0; i < offs.size(); ++i) out.data[static_cast<size_t>(offs[i])] = (*v)[i];
  }
  std::vector<Tensor> results;
  for (const auto& o : p.outputs) results.push_back(buffers.at(o));
  return results;
}

}  // namespace lpu
