//===- KernelSignatures.cpp - What each kernel's operands must be ---------===//

#include "mtrt/KernelSignatures.h"

#include "mtrt/Kernels.h"

#include <algorithm>
#include <cmath>
#include <sstream>

using namespace mtrt;

namespace {

using Shape = std::vector<int64_t>;

/// "1 input", "2 inputs".
std::string countOf(int64_t count, const std::string &noun) {
  return std::to_string(count) + " " + noun + (count == 1 ? "" : "s");
}

/// What a kernel's i32 operands hold, for its errors.
const char *indexWhat(KernelId id) {
  bool tokens = id == KernelId::embedding || id == KernelId::embedding_grad ||
                id == KernelId::cross_entropy ||
                id == KernelId::cross_entropy_grad;
  return tokens ? "i32 token ids" : "an i32 routing";
}

/// One command's operands, with the error of the first relation that
/// fails (later checks are skipped once one has failed).
class Signature {
public:
  Signature(const Command &command, const std::vector<BufferDesc> &buffers)
      : command(command), buffers(buffers) {}

  const Shape &in(size_t i) const { return buffers[command.ins[i]].shape; }
  const Shape &out(size_t i) const { return buffers[command.outs[i]].shape; }
  int64_t elements(const Shape &shape) const {
    int64_t n = 1;
    for (int64_t dim : shape)
      n *= dim;
    return n;
  }

  void require(bool holds, const std::string &what) {
    if (!holds && error.empty())
      error = what;
  }
  void rank(const Shape &shape, size_t rank, const std::string &operand) {
    require(shape.size() == rank, operand + " has shape " + shapeString(shape) +
                                      ", expected rank " +
                                      std::to_string(rank));
  }
  void same(const Shape &a, const std::string &aName, const Shape &b,
            const std::string &bName) {
    require(a == b, aName + " has shape " + shapeString(a) + " but " + bName +
                        " has " + shapeString(b) + "; they must be equal");
  }
  void scalar(const Shape &shape, const std::string &operand) {
    require(elements(shape) == 1, operand + " has shape " + shapeString(shape) +
                                      ", expected one element");
  }
  /// `inner` is the trailing dimensions of `outer` (a bias and the rows it
  /// is added to).
  void suffix(const Shape &inner, const std::string &innerName,
              const Shape &outer, const std::string &outerName) {
    bool holds = !inner.empty() && inner.size() <= outer.size();
    for (size_t i = 0; holds && i < inner.size(); ++i)
      holds = inner[inner.size() - 1 - i] == outer[outer.size() - 1 - i];
    require(holds, innerName + " has shape " + shapeString(inner) +
                       ", which is not the trailing dimensions of " +
                       outerName + "'s " + shapeString(outer));
  }
  /// Attribute `name`, if present, lies in [low, high] (or [low, high)).
  void range(const char *name, double low, double high, bool openHigh = false) {
    if (!command.has(name))
      return;
    double value = command.get(name, 0.0);
    bool holds = std::isfinite(value) && value >= low &&
                 (openHigh ? value < high : value <= high);
    std::ostringstream os;
    os << "attribute '" << name << "' is " << value << ", outside [" << low
       << ", " << high << (openHigh ? ")" : "]");
    require(holds, os.str());
  }
  void flag(const char *name) { range(name, 0, 1); }
  /// Attribute `name`, if present, is a whole number in [low, high] (a
  /// count: experts, a capacity).
  void wholeNumber(const char *name, double low, double high) {
    range(name, low, high);
    double value = command.get(name, 0.0);
    require(value == std::floor(value),
            std::string("attribute '") + name + "' is not an integer");
  }
  /// Attribute `name` is present and equals `size`, the size of `where`.
  void matchesDimension(const char *name, int64_t size,
                        const std::string &where) {
    if (!command.has(name)) {
      require(false, std::string("has no attribute '") + name + "'");
      return;
    }
    std::ostringstream os;
    os << "attribute '" << name << "' is " << command.get(name, 0.0) << ", but "
       << where << " is " << size;
    require(command.get(name, 0.0) == double(size), os.str());
  }
  /// A sliding window (attention's `window`): a whole number of keys, at
  /// least the query's own.
  void window() {
    if (!command.has("window"))
      return;
    double value = command.get("window", 0.0);
    require(std::isfinite(value) && value >= 1 && value < 9.2e18 &&
                value == std::floor(value),
            "attribute 'window' is not a positive integer");
  }
  /// A soft cap's `cap`: present, and a positive float the kernels divide
  /// by.
  void cap() {
    if (!command.has("cap")) {
      require(false, "has no attribute 'cap'");
      return;
    }
    floatDivisor("cap");
  }
  /// Attribute `name`, if present, is a positive normal float (the kernels
  /// divide by it in float32).
  void floatDivisor(const char *name) {
    range(name, 1.1754943508222875e-38, 3.4028234663852886e38);
  }
  void positive(const char *name) {
    if (!command.has(name))
      return;
    double value = command.get(name, 0.0);
    std::ostringstream os;
    os << "attribute '" << name << "' is " << value << ", not positive";
    require(std::isfinite(value) && value > 0, os.str());
  }
  /// Input `input` and output `output` are the same bytes (updated in
  /// place).
  void inPlace(size_t input, size_t output) {
    const BufferDesc &a = buffers[command.ins[input]];
    const BufferDesc &b = buffers[command.outs[output]];
    require(a.offset == b.offset && a.bytes() == b.bytes(),
            "output " + std::to_string(output) + " must be input " +
                std::to_string(input) + " updated in place (bytes at " +
                std::to_string(b.offset) + " vs " + std::to_string(a.offset) +
                ")");
  }

  /// Two inputs, or a third that is an f32 accumulator of output 0's
  /// shape, which output 0 overwrites in place (accumulatesInPlace). False
  /// when the count is wrong (nothing else can be checked then).
  bool accumulator() {
    require(command.ins.size() == 2 || command.ins.size() == 3,
            "takes 2 inputs, or 3 with an accumulator, got " +
                countOf(int64_t(command.ins.size()), "input"));
    if (!error.empty())
      return false;
    if (command.ins.size() == 3) {
      DType acc = buffers[command.ins[2]].dtype;
      DType out = buffers[command.outs[0]].dtype;
      require(acc == DType::F32 && out == DType::F32,
              std::string("accumulates only into f32, got an accumulator of ") +
                  dtypeName(acc) + " and output 0 of " + dtypeName(out));
      same(in(2), "the accumulator", this->out(0), "output 0");
      inPlace(2, 0);
    }
    return true;
  }

  const Command &command;
  const std::vector<BufferDesc> &buffers;
  std::string error;
};

/// A collective over every stride-th rank of its grid axis (an expert's
/// replicas): the stride divides the axis' ranks.
void checkCollectiveStride(Signature &s, const Command &c, const Shape &grid) {
  if (!s.error.empty() || grid.empty() || !c.has("stride"))
    return;
  int64_t ranks = grid[size_t(c.get("grid_axis", 0))];
  double stride = c.get("stride", 1);
  s.range("stride", 1, double(ranks));
  s.require(!s.error.empty() ||
                (stride == std::floor(stride) && ranks % int64_t(stride) == 0),
            "attribute 'stride' " +
                (stride == std::floor(stride) ? std::to_string(int64_t(stride))
                                              : std::to_string(stride)) +
                " does not divide the " + std::to_string(ranks) +
                " ranks of grid axis " +
                std::to_string(int64_t(c.get("grid_axis", 0))));
}

void checkShapes(KernelId id, Signature &s, const Shape &grid) {
  const Command &c = s.command;
  switch (id) {
  case KernelId::embedding: {
    s.rank(s.in(0), 2, "the table");
    Shape expected = s.in(1);
    if (s.in(0).size() == 2)
      expected.push_back(s.in(0)[1]);
    s.same(s.out(0), "the output", expected, "token ids + [hidden]");
    break;
  }
  case KernelId::embedding_grad: {
    if (!s.accumulator())
      break;
    s.rank(s.out(0), 2, "the table gradient");
    Shape expected = s.in(1);
    if (s.out(0).size() == 2)
      expected.push_back(s.out(0)[1]);
    s.same(s.in(0), "the output gradient", expected, "token ids + [hidden]");
    break;
  }
  case KernelId::position_embedding:
  case KernelId::position_embedding_grad: {
    bool forward = id == KernelId::position_embedding;
    const Shape &table = forward ? s.in(0) : s.out(0);
    const Shape &rows = forward ? s.out(0) : s.in(0);
    s.rank(table, 2, "the table");
    s.rank(rows, 2, "the positions");
    if (table.size() == 2 && rows.size() == 2)
      s.require(rows[0] <= table[0] && rows[1] == table[1],
                "positions " + shapeString(rows) + " do not fit the table " +
                    shapeString(table));
    break;
  }
  case KernelId::layer_norm:
  case KernelId::rms_norm: {
    const Shape &x = s.in(0);
    s.require(!x.empty(), "the input has no dimensions");
    if (x.empty())
      break;
    Shape row = {x.back()};
    for (size_t i = 1; i < c.ins.size(); ++i)
      s.same(s.in(i), "input " + std::to_string(i), row, "[last dimension]");
    s.same(s.out(0), "the output", x, "the input");
    s.positive("epsilon");
    if (id == KernelId::rms_norm)
      s.flag("zero_centered_weight");
    break;
  }
  case KernelId::layer_norm_grad:
  case KernelId::rms_norm_grad: {
    const Shape &x = s.in(1);
    s.same(s.in(0), "the output gradient", x, "the input");
    s.require(!x.empty(), "the input has no dimensions");
    if (x.empty())
      break;
    Shape row = {x.back()};
    s.same(s.in(2), "the weight", row, "[last dimension]");
    s.same(s.out(0), "the input gradient", x, "the input");
    for (size_t i = 1; i < c.outs.size(); ++i)
      s.same(s.out(i), "output " + std::to_string(i), row, "[last dimension]");
    s.positive("epsilon");
    if (id == KernelId::rms_norm_grad)
      s.flag("zero_centered_weight");
    break;
  }
  case KernelId::add:
  case KernelId::mul:
  case KernelId::silu_grad:
  case KernelId::gelu_grad:
  case KernelId::softcap_grad:
    s.same(s.in(1), "input 1", s.in(0), "input 0");
    s.same(s.out(0), "the output", s.in(0), "input 0");
    if (id == KernelId::softcap_grad)
      s.cap();
    break;
  case KernelId::gelu:
  case KernelId::silu:
  case KernelId::softcap:
  case KernelId::scale:
  case KernelId::cast:
    s.same(s.out(0), "the output", s.in(0), "the input");
    if (id == KernelId::scale)
      s.range("factor", -1e30, 1e30);
    if (id == KernelId::softcap)
      s.cap();
    break;
  case KernelId::multi_cast:
    s.require(c.ins.size() == c.outs.size(),
              std::to_string(c.ins.size()) + " inputs but " +
                  std::to_string(c.outs.size()) +
                  " outputs: each input is cast to one output");
    for (size_t k = 0; k < c.ins.size() && k < c.outs.size(); ++k) {
      s.same(s.out(k), "output " + std::to_string(k), s.in(k),
             "input " + std::to_string(k));
      // One element type to one other, as mt.multi_cast's verifier holds.
      DType from = s.buffers[c.ins[k]].dtype, to = s.buffers[c.outs[k]].dtype;
      DType from0 = s.buffers[c.ins[0]].dtype, to0 = s.buffers[c.outs[0]].dtype;
      s.require(from == from0 && to == to0,
                "tensor " + std::to_string(k) + " is cast from " +
                    dtypeName(from) + " to " + dtypeName(to) +
                    ", tensor 0 from " + dtypeName(from0) + " to " +
                    dtypeName(to0) +
                    ": a multi_cast casts one element type to one other");
    }
    break;
  case KernelId::dropout:
    s.same(s.out(0), "the output", s.in(0), "the input");
    s.range("probability", 0, 1, /*openHigh=*/true);
    if (c.has("rng_seq_total")) {
      s.rank(s.out(0), 3, "the output");
      if (s.out(0).size() == 3)
        s.require(c.get("rng_seq_offset", 0) >= 0 &&
                      c.get("rng_seq_offset", 0) + double(s.out(0)[1]) <=
                          c.get("rng_seq_total", 0),
                  "the sequence slice lies outside rng_seq_total");
    }
    break;
  case KernelId::rope:
    s.rank(s.in(0), 4, "the input");
    s.same(s.out(0), "the output", s.in(0), "the input");
    if (s.in(0).size() == 4)
      s.require(s.in(0)[3] % 2 == 0,
                "the head dimension " + std::to_string(s.in(0)[3]) + " is odd");
    s.positive("theta");
    s.positive("linear_factor");
    s.require(!c.has("linear_factor") || !c.has("llama3_factor"),
              "has two rope scalings: 'linear_factor' and 'llama3_factor'");
    s.flag("inverse");
    break;
  case KernelId::repeat_kv:
  case KernelId::repeat_kv_grad: {
    bool forward = id == KernelId::repeat_kv;
    const Shape &kv = forward ? s.in(0) : s.out(0);
    const Shape &heads = forward ? s.out(0) : s.in(0);
    s.rank(kv, 4, "the key/value heads");
    s.range("groups", 1, 1 << 20);
    int64_t groups = int64_t(c.get("groups", 1));
    if (kv.size() == 4) {
      Shape expected = {kv[0], kv[1] * groups, kv[2], kv[3]};
      s.same(heads, "the repeated heads", expected, "kv heads x groups");
    }
    break;
  }
  case KernelId::bias_add:
    s.suffix(s.in(1), "the bias", s.in(0), "the input");
    s.same(s.out(0), "the output", s.in(0), "the input");
    break;
  case KernelId::bias_add_grad:
    s.suffix(s.out(0), "the bias gradient", s.in(0), "the output gradient");
    break;
  case KernelId::matmul:
  case KernelId::matmul_bias:
  case KernelId::matmul_bias_gelu:
  case KernelId::matmul_gelu_grad:
  case KernelId::matmul_bias_grad: {
    if (takesAccumulator(id) && !s.accumulator())
      break;
    const Shape &a = s.in(0), &b = s.in(1), &out = s.out(0);
    s.flag("transpose_a");
    s.flag("transpose_b");
    bool ta = c.get("transpose_a", 0) != 0, tb = c.get("transpose_b", 0) != 0;
    size_t r = a.size();
    s.require(r >= 2 && out.size() == r && (b.size() == r || b.size() == 2),
              "operands of shapes " + shapeString(a) + " x " + shapeString(b) +
                  " -> " + shapeString(out) + " have incompatible ranks");
    if (!s.error.empty())
      break;
    int64_t m = out[r - 2], n = out[r - 1];
    int64_t am = ta ? a[r - 1] : a[r - 2], k = ta ? a[r - 2] : a[r - 1];
    size_t rb = b.size();
    int64_t bk = tb ? b[rb - 1] : b[rb - 2], bn = tb ? b[rb - 2] : b[rb - 1];
    bool batchOk = std::equal(a.begin(), a.end() - 2, out.begin()) &&
                   (rb == 2 || std::equal(b.begin(), b.end() - 2, out.begin()));
    s.require(am == m && bk == k && bn == n && batchOk,
              "operands of shapes " + shapeString(a) + (ta ? "^T" : "") +
                  " x " + shapeString(b) + (tb ? "^T" : "") + " do not give " +
                  shapeString(out));
    if (id == KernelId::matmul_bias_gelu)
      s.same(s.out(1), "the GeLU", s.out(0), "the sum");
    if (id == KernelId::matmul_gelu_grad)
      s.same(s.in(2), "the GeLU's input", s.out(0), "the output");
    if (id == KernelId::matmul_bias_grad) {
      s.require(b.size() == 2 && !tb,
                "the bias gradient sums the rows of a [k, n] rhs, got " +
                    shapeString(b) + (tb ? "^T" : ""));
      s.require(s.out(1) == Shape{n},
                "the bias gradient has shape " + shapeString(s.out(1)) +
                    ", expected [" + std::to_string(n) + "]");
    }
    if (id == KernelId::matmul_bias || id == KernelId::matmul_bias_gelu)
      s.require(s.in(2) == Shape{n}, "the bias has shape " +
                                         shapeString(s.in(2)) + ", expected [" +
                                         std::to_string(n) + "]");
    break;
  }
  case KernelId::split_heads: {
    const Shape &x = s.in(0);
    s.rank(x, 3, "the input");
    s.rank(s.out(0), 4, "output 0");
    for (size_t i = 1; i < c.outs.size(); ++i)
      s.same(s.out(i), "output " + std::to_string(i), s.out(0), "output 0");
    if (x.size() == 3 && s.out(0).size() == 4) {
      const Shape &h = s.out(0);
      s.require(h[0] == x[0] && h[2] == x[1] &&
                    x[2] == int64_t(c.outs.size()) * h[1] * h[3],
                shapeString(x) + " does not split into " +
                    std::to_string(c.outs.size()) + " x " + shapeString(h));
    }
    break;
  }
  case KernelId::merge_heads: {
    const Shape &h = s.in(0), &x = s.out(0);
    s.rank(h, 4, "input 0");
    s.rank(x, 3, "the output");
    for (size_t i = 1; i < c.ins.size(); ++i)
      s.same(s.in(i), "input " + std::to_string(i), h, "input 0");
    if (x.size() == 3 && h.size() == 4)
      s.require(h[0] == x[0] && h[2] == x[1] &&
                    x[2] == int64_t(c.ins.size()) * h[1] * h[3],
                std::to_string(c.ins.size()) + " x " + shapeString(h) +
                    " does not merge into " + shapeString(x));
    break;
  }
  case KernelId::attention:
  case KernelId::attention_grad:
  case KernelId::merged_attention:
  case KernelId::merged_attention_grad: {
    // Queries (and dOut, dQ, the output) [batch, heads, seq, headDim];
    // keys and values (and their gradients) the same or, grouped-query,
    // with kv heads dividing heads. The merged form's output and dOut are
    // [batch, seq, heads * headDim], with the rows' log-sum-exp [batch,
    // heads, seq] (the forward's output 1, the gradient's last input).
    const AttentionKind kind = attentionKind(id);
    const size_t qIn = kind.queryInput(), keyIn = kind.keyInput();
    const Shape &q = s.in(qIn), &k = s.in(keyIn);
    s.rank(q, 4, "input " + std::to_string(qIn));
    s.rank(k, 4, "input " + std::to_string(keyIn));
    if (!s.error.empty())
      break;
    s.require(k[0] == q[0] && k[2] == q[2] && k[3] == q[3] && k[1] > 0 &&
                  q[1] % k[1] == 0,
              "keys " + shapeString(k) + " do not serve queries " +
                  shapeString(q) +
                  " (the same batch, sequence and head size, and heads that "
                  "divide the queries')");
    const Shape merged{q[0], q[2], q[1] * q[3]}, stats{q[0], q[1], q[2]};
    const std::string qName = "input " + std::to_string(qIn),
                      kName = "input " + std::to_string(keyIn);
    // What each operand is shaped as: the queries, the keys, the merged
    // output or the stats.
    auto expected = [&](bool input, size_t i) -> std::pair<Shape, std::string> {
      if (input && (i == keyIn || i == keyIn + 1))
        return {k, kName};
      if (!input && kind.forward && kind.mergedOutput)
        return {i == 0 ? merged : stats,
                i == 0 ? "[batch, seq, heads * headDim] of " + qName
                       : "[batch, heads, seq] of " + qName};
      if (!input)
        return {i == 0 ? q : k, i == 0 ? qName : kName};
      const bool mergedGrad = kind.mergedOutput && !kind.forward;
      if (mergedGrad && (i == 0 || i == 4)) // dOut, the output
        return {merged, "[batch, seq, heads * headDim] of " + qName};
      if (mergedGrad && i == 5)
        return {stats, "[batch, heads, seq] of " + qName};
      return {q, qName};
    };
    for (size_t i = 0; i < c.ins.size(); ++i) {
      auto [shape, name] = expected(true, i);
      s.same(s.in(i), "input " + std::to_string(i), shape, name);
    }
    for (size_t i = 0; i < c.outs.size(); ++i) {
      auto [shape, name] = expected(false, i);
      s.same(s.out(i), "output " + std::to_string(i), shape, name);
    }
    s.range("dropout", 0, 1, /*openHigh=*/true);
    s.positive("scale");
    s.window();
    s.floatDivisor("softcap");
    if (q.size() == 4 && c.has("rng_heads"))
      s.require(c.get("rng_head_offset", 0) >= 0 &&
                    c.get("rng_head_offset", 0) + double(q[1]) <=
                        c.get("rng_heads", 0),
                "the heads lie outside rng_heads");
    break;
  }
  case KernelId::qkv_attention:
  case KernelId::qkv_attention_grad: {
    // The fused QKV tensor [batch, seq, 3 * heads * head_dim]; the output
    // (forward) or its gradient (backward) [batch, seq, heads * head_dim];
    // the rows' log-sum-exp [batch, heads, seq] (the forward's second
    // output, the backward's fourth input, beside the output); the
    // backward's result is shaped as the QKV tensor.
    bool forward = id == KernelId::qkv_attention;
    const Shape &qkv = s.in(forward ? 0 : 1);
    const Shape &merged = forward ? s.out(0) : s.in(0);
    const Shape &stats = forward ? s.out(1) : s.in(3);
    const char *mergedName = forward ? "the output" : "the output gradient";
    s.rank(qkv, 3, "the QKV tensor");
    s.rank(merged, 3, mergedName);
    if (!forward) {
      s.same(s.out(0), "the QKV gradient", qkv, "the QKV tensor");
      s.same(s.in(2), "the output", merged, "the output gradient");
    }
    s.range("dropout", 0, 1, /*openHigh=*/true);
    s.positive("scale");
    s.window();
    s.floatDivisor("softcap");
    double heads = c.get("heads", 0);
    s.require(heads >= 1 && heads < 2147483648.0 && heads == std::floor(heads),
              "attribute 'heads' is not a positive integer");
    if (qkv.size() == 3 && merged.size() == 3 && s.error.empty()) {
      s.require(merged[0] == qkv[0] && merged[1] == qkv[1] &&
                    qkv[2] == 3 * merged[2] && merged[2] % int64_t(heads) == 0,
                shapeString(qkv) +
                    " does not hold the queries, keys and "
                    "values of " +
                    std::to_string(int64_t(heads)) + " heads merging into " +
                    shapeString(merged));
      if (c.has("rng_heads"))
        s.require(c.get("rng_head_offset", 0) >= 0 &&
                      c.get("rng_head_offset", 0) + heads <=
                          c.get("rng_heads", 0),
                  "the heads lie outside rng_heads");
    }
    s.rank(stats, 3, "the log-sum-exp stats");
    if (stats.size() == 3 && qkv.size() == 3)
      s.require(stats[0] == qkv[0] && stats[1] == int64_t(c.get("heads", 0)) &&
                    stats[2] == qkv[1],
                "the log-sum-exp stats have shape " + shapeString(stats) +
                    ", expected [batch, heads, seq] = [" +
                    std::to_string(qkv[0]) + ", " +
                    std::to_string(int64_t(c.get("heads", 0))) + ", " +
                    std::to_string(qkv[1]) + "]");
    break;
  }
  case KernelId::cross_entropy:
  case KernelId::cross_entropy_grad: {
    bool forward = id == KernelId::cross_entropy;
    const Shape &logits = s.in(forward ? 0 : 1);
    const Shape &labels = s.in(forward ? 1 : 2);
    s.require(!logits.empty(), "the logits have no dimensions");
    if (!logits.empty())
      s.same(labels, "the labels", Shape(logits.begin(), logits.end() - 1),
             "the logits' rows");
    if (forward) {
      s.scalar(s.out(0), "the loss");
    } else {
      s.scalar(s.in(0), "the loss gradient");
      s.same(s.out(0), "the logits gradient", logits, "the logits");
    }
    if (c.has("vocab_grid_axis"))
      s.range("vocab_grid_axis", 0, double(grid.size()) - 1);
    // A padded vocabulary's true size: at most the logits' columns when
    // they are the whole vocabulary.
    else if (!logits.empty())
      s.range("vocab_size", 1, double(logits.back()));
    break;
  }
  case KernelId::global_norm:
  case KernelId::sum_squares:
  case KernelId::mean:
  case KernelId::sqrt:
    s.scalar(s.out(0), "the output");
    if (id == KernelId::sqrt)
      s.scalar(s.in(0), "the input");
    break;
  case KernelId::div:
    s.scalar(s.in(0), "the dividend");
    s.scalar(s.in(1), "the divisor");
    s.scalar(s.out(0), "the output");
    break;
  case KernelId::clip_scale:
    s.scalar(s.in(0), "the norm");
    s.scalar(s.in(1), "the maximum norm");
    s.scalar(s.out(0), "the output");
    break;
  case KernelId::adamw:
    s.same(s.in(1), "the gradient", s.in(0), "the parameter");
    s.same(s.in(2), "the first moment", s.in(0), "the parameter");
    s.same(s.in(3), "the second moment", s.in(0), "the parameter");
    for (size_t i = 4; i < c.ins.size(); ++i)
      s.scalar(s.in(i), "input " + std::to_string(i));
    s.inPlace(0, 0);
    s.inPlace(2, 1);
    s.inPlace(3, 2);
    s.flag("decay");
    break;
  case KernelId::multi_adamw: {
    const MultiAdamWLayout layout(c);
    const size_t count = layout.count;
    if (!layout.validCopies) {
      std::ostringstream os;
      os << "attribute 'copies' is " << c.get("copies", 0)
         << ", not a whole number of copies up to the " << c.outs.size()
         << " outputs";
      s.require(false, os.str());
      break;
    }
    s.require(count > 0 && c.outs.size() == layout.numOuts() &&
                  c.ins.size() == layout.numIns() &&
                  (layout.copies == 0 || layout.copies == count),
              std::to_string(c.ins.size()) + " inputs and " +
                  std::to_string(c.outs.size()) + " outputs with " +
                  std::to_string(layout.copies) +
                  " copies are not N parameters, gradients, first and "
                  "second moments, 7 scalars and none or N 16-bit copies, "
                  "and the 3N updated tensors and the copies");
    if (!s.error.empty())
      break;
    for (size_t i = 0; i < count && s.error.empty(); ++i) {
      std::string which = " " + std::to_string(i);
      s.same(s.in(layout.grad(i)), ("the gradient" + which).c_str(), s.in(i),
             ("the parameter" + which).c_str());
      s.same(s.in(layout.expAvg(i)), ("the first moment" + which).c_str(),
             s.in(i), ("the parameter" + which).c_str());
      s.same(s.in(layout.expAvgSq(i)), ("the second moment" + which).c_str(),
             s.in(i), ("the parameter" + which).c_str());
      s.inPlace(layout.param(i), layout.newParam(i));
      s.inPlace(layout.expAvg(i), layout.newExpAvg(i));
      s.inPlace(layout.expAvgSq(i), layout.newExpAvgSq(i));
      if (layout.copies) {
        s.same(s.in(layout.copyIn(i)), ("the copy" + which).c_str(), s.in(i),
               ("the parameter" + which).c_str());
        s.inPlace(layout.copyIn(i), layout.newCopy(i));
        // The copy is its own parameter's: two swapped copies of one shape
        // would each get the other's cast (the runtime pairs them here).
        const BufferDesc &param = s.buffers[c.ins[layout.param(i)]];
        const BufferDesc &copy = s.buffers[c.ins[layout.copyIn(i)]];
        s.require(param.kind == "param" && copy.kind == "param_copy" &&
                      copy.name == param.name,
                  "input " + std::to_string(layout.copyIn(i)) + " is " +
                      copy.kind + " '" + copy.name +
                      "', expected the param_copy of parameter " +
                      std::to_string(i) + " '" + param.name + "'");
      }
    }
    for (size_t j = 0; j < 7; ++j)
      s.scalar(s.in(layout.scalar(j)),
               "input " + std::to_string(layout.scalar(j)));
    s.flag("decay");
    break;
  }
  case KernelId::fill:
    s.range("value", -3.4e38, 3.4e38);
    break;
  case KernelId::copy_prefix: {
    s.rank(s.in(0), 1, "the input");
    s.rank(s.out(0), 1, "the output");
    DType from = s.buffers[c.ins[0]].dtype, to = s.buffers[c.outs[0]].dtype;
    s.require(from == to, std::string("copies ") + dtypeName(from) + " into " +
                              dtypeName(to) +
                              ": a copy moves one type (a cast states a "
                              "conversion)");
    break;
  }
  case KernelId::all_reduce:
    s.same(s.out(0), "the output", s.in(0), "the input");
    s.range("grid_axis", 0, double(grid.size()) - 1);
    checkCollectiveStride(s, c, grid);
    break;
  case KernelId::reduce_scatter:
  case KernelId::all_gather:
  case KernelId::all_slice: {
    s.range("grid_axis", 0, double(grid.size()) - 1);
    checkCollectiveStride(s, c, grid);
    if (!s.error.empty() || grid.empty())
      break;
    // Over every stride-th rank of the axis: a group of ranks / stride.
    int64_t parts =
        grid[size_t(c.get("grid_axis", 0))] / int64_t(c.get("stride", 1));
    bool gather = id == KernelId::all_gather;
    const Shape &whole = gather ? s.out(0) : s.in(0);
    const Shape &piece = gather ? s.in(0) : s.out(0);
    s.range("axis", 0, double(whole.size()) - 1);
    if (!s.error.empty())
      break;
    Shape expected = whole;
    size_t dim = size_t(c.get("axis", 0));
    s.require(whole[dim] % parts == 0,
              "dimension " + std::to_string(dim) + " of " + shapeString(whole) +
                  " does not split over " + std::to_string(parts) + " ranks");
    expected[dim] = whole[dim] / parts;
    s.same(piece, "the piece", expected,
           "1/" + std::to_string(parts) + " of the whole");
    break;
  }
  case KernelId::top_k_gating:
  case KernelId::top_k_gating_grad: {
    bool forward = id == KernelId::top_k_gating;
    if (forward)
      s.flag("unnormalized");
    else
      s.require(c.ins.size() == 3 || c.ins.size() == 4,
                "takes 3 inputs, or 4 with the logits of unnormalized "
                "weights, got " +
                    countOf(int64_t(c.ins.size()), "input"));
    if (!s.error.empty())
      break;
    const Shape &logits = forward ? s.in(0) : s.out(0);
    const Shape &weights = forward ? s.out(0) : s.in(1);
    s.require(logits.size() >= 2 && weights.size() == logits.size() &&
                  std::equal(logits.begin(), logits.end() - 1, weights.begin()),
              "the logits " + shapeString(logits) + " and the weights " +
                  shapeString(weights) +
                  " are not [tokens..., experts] and "
                  "[tokens..., k]");
    if (!s.error.empty())
      break;
    int64_t experts = logits.back(), k = weights.back();
    s.require(k >= 1 && k <= experts, "k = " + std::to_string(k) +
                                          " is not between 1 and the " +
                                          std::to_string(experts) + " experts");
    // The kernels read k and the experts from the shapes; the op's
    // attribute states them too, and an artifact where the two disagree
    // was not written by the lowering.
    if (forward)
      s.matchesDimension(
          "k", k, "the last dimension of the weights " + shapeString(weights));
    else
      s.matchesDimension("num_experts", experts,
                         "the last dimension of the logits' gradient " +
                             shapeString(logits));
    s.same(forward ? s.out(1) : s.in(2), "the experts", weights, "the weights");
    if (!forward)
      s.same(s.in(0), "the weights' gradient", weights, "the weights");
    if (!forward && c.ins.size() == 4)
      s.same(s.in(3), "the logits", logits, "their gradient");
    break;
  }
  case KernelId::moe_route:
    s.require(!s.in(0).empty(), "the experts are a scalar");
    s.same(s.out(0), "the positions", s.in(0), "the experts");
    // A capacity (per expert, at most the tokens) and, for the probs
    // policy, the weights that rank an expert's choices.
    s.require(c.ins.size() == 1 || c.ins.size() == 2,
              "takes the experts, and their weights with a capacity, got " +
                  countOf(int64_t(c.ins.size()), "input"));
    if (!s.error.empty())
      break;
    s.require(c.ins.size() == 1 || c.has("capacity"),
              "reads weights without a capacity (they rank the choices a "
              "full expert keeps)");
    if (c.ins.size() == 2)
      s.same(s.in(1), "the weights", s.in(0), "the experts");
    // (An expert takes a token once: at most the tokens.)
    s.wholeNumber(
        "capacity", 1,
        double(s.elements(s.in(0)) / std::max<int64_t>(1, s.in(0).back())));
    s.require(c.has("num_experts"), "has no attribute 'num_experts'");
    // Expert ids are i32.
    s.wholeNumber("num_experts", 1, 2147483647);
    if (!s.error.empty())
      break;
    s.require(s.out(1) == Shape{int64_t(c.get("num_experts", 0)) + 1},
              "the offsets have shape " + shapeString(s.out(1)) +
                  ", expected [num_experts + 1]");
    break;
  case KernelId::moe_permute:
  case KernelId::moe_unpermute:
  case KernelId::moe_weights_grad: {
    // Tokens [tokens..., hidden], positions [tokens..., k] (and weights
    // like them), rows [tokens * k, hidden] (or a capacity's rows).
    bool permute = id == KernelId::moe_permute;
    s.require(id == KernelId::moe_weights_grad || c.ins.size() == 2 ||
                  c.ins.size() == 3,
              "takes 2 inputs, or 3 with weights, got " +
                  countOf(int64_t(c.ins.size()), "input"));
    if (!s.error.empty())
      break;
    const Shape &tokens = permute                         ? s.in(0)
                          : id == KernelId::moe_unpermute ? s.out(0)
                                                          : s.in(0);
    const Shape &rows = permute                         ? s.out(0)
                        : id == KernelId::moe_unpermute ? s.in(0)
                                                        : s.in(1);
    const Shape &positions =
        id == KernelId::moe_weights_grad ? s.in(2) : s.in(1);
    s.require(
        tokens.size() >= 2 && positions.size() == tokens.size() &&
            std::equal(tokens.begin(), tokens.end() - 1, positions.begin()),
        "the tokens " + shapeString(tokens) + " and the positions " +
            shapeString(positions) +
            " are not [tokens..., hidden] and [tokens..., k]");
    if (!s.error.empty())
      break;
    if (c.has("capacity_factor") || c.has("num_experts")) {
      // A capacity's rows: num_experts times a capacity of at most the
      // tokens; choices may be dropped (position -1).
      int64_t experts = int64_t(c.get("num_experts", 0));
      int64_t tokenCount = s.elements(positions) / positions.back();
      s.require(c.has("capacity_factor") && c.has("num_experts"),
                "has only one of 'capacity_factor' and 'num_experts'");
      s.positive("capacity_factor");
      s.wholeNumber("num_experts", 1, 2147483647);
      if (!s.error.empty())
        break;
      s.require(rows.size() == 2 && rows[1] == tokens.back() &&
                    rows[0] % experts == 0 && rows[0] / experts >= 1 &&
                    rows[0] / experts <= tokenCount,
                "the rows " + shapeString(rows) + " are not [" +
                    std::to_string(experts) +
                    " experts * a capacity of at most " +
                    std::to_string(tokenCount) + " tokens, " +
                    std::to_string(tokens.back()) + "]");
    } else {
      s.same(rows, "the rows", {s.elements(positions), tokens.back()},
             "[tokens * k, hidden]");
    }
    if (id == KernelId::moe_weights_grad)
      s.same(s.out(0), "the weights' gradient", positions, "the positions");
    else if (c.ins.size() == 3)
      s.same(s.in(2), "the weights", positions, "the positions");
    break;
  }
  case KernelId::sigmoid_gate:
  case KernelId::sigmoid_gate_grad: {
    // Rows [tokens..., hidden] and their gates [tokens..., 1].
    bool forward = id == KernelId::sigmoid_gate;
    const Shape &rows = s.in(forward ? 0 : 1);
    s.require(rows.size() >= 2,
              "the rows " + shapeString(rows) + " are not [tokens..., hidden]");
    if (!s.error.empty())
      break;
    Shape gate(rows.begin(), rows.end() - 1);
    gate.push_back(1);
    s.same(s.in(forward ? 1 : 2), "the gate", gate, "[tokens..., 1]");
    s.same(s.out(0), forward ? "the output" : "the rows' gradient", rows,
           "the rows");
    if (forward)
      break;
    s.same(s.in(0), "the output gradient", rows, "the rows");
    s.same(s.out(1), "the gate's gradient", gate, "[tokens..., 1]");
    break;
  }
  case KernelId::router_statistics:
  case KernelId::router_probability_grad: {
    bool forward = id == KernelId::router_statistics;
    const Shape &logits = s.in(forward ? 0 : 1);
    s.require(logits.size() >= 2, "the logits " + shapeString(logits) +
                                      " are not [tokens..., experts]");
    if (!s.error.empty())
      break;
    Shape perExpert{logits.back()};
    if (forward) {
      const Shape &experts = s.in(1);
      s.require(
          experts.size() == logits.size() &&
              std::equal(logits.begin(), logits.end() - 1, experts.begin()) &&
              experts.back() >= 1 && experts.back() <= logits.back(),
          "the experts " + shapeString(experts) +
              " are not [tokens..., k] for the logits " + shapeString(logits));
      s.same(s.out(0), "the load", perExpert, "[experts]");
      s.same(s.out(1), "the probability", perExpert, "[experts]");
    } else {
      s.same(s.in(0), "the probability's gradient", perExpert, "[experts]");
      s.same(s.out(0), "the logits' gradient", logits, "the logits");
    }
    break;
  }
  case KernelId::load_balancing_loss:
  case KernelId::load_balancing_loss_grad: {
    // The loss: loads, then probabilities; its gradient: the loss's
    // gradient, then the loads. Each [experts].
    bool forward = id == KernelId::load_balancing_loss;
    size_t first = forward ? 0 : 1;
    size_t vectors = c.ins.size() - first;
    s.require(vectors >= 1 && (!forward || vectors % 2 == 0),
              forward ? "takes the loads then the probabilities (an even "
                        "number of inputs), got " +
                            countOf(int64_t(c.ins.size()), "input")
                      : "takes the loss's gradient and one or more loads, "
                        "got " +
                            countOf(int64_t(c.ins.size()), "input"));
    s.positive("coefficient");
    s.require(c.has("coefficient"), "has no attribute 'coefficient'");
    if (!s.error.empty())
      break;
    const Shape &vector = s.in(first);
    s.rank(vector, 1, "input " + std::to_string(first));
    for (size_t j = first + 1; j < c.ins.size(); ++j)
      s.same(s.in(j), "input " + std::to_string(j), vector,
             "input " + std::to_string(first));
    if (forward) {
      s.scalar(s.out(0), "the loss");
    } else {
      s.scalar(s.in(0), "the loss's gradient");
      s.same(s.out(0), "the probabilities' gradient", vector, "the loads");
    }
    break;
  }
  case KernelId::router_z_loss:
  case KernelId::router_z_loss_grad: {
    // The loss: the logits [tokens..., experts]; its gradient: the loss's
    // gradient, then the logits.
    bool forward = id == KernelId::router_z_loss;
    s.require(c.has("coefficient"), "has no attribute 'coefficient'");
    s.positive("coefficient");
    const Shape &logits = s.in(forward ? 0 : 1);
    s.require(logits.size() >= 2, "the logits " + shapeString(logits) +
                                      " are not [tokens..., experts]");
    if (!s.error.empty())
      break;
    if (forward) {
      s.scalar(s.out(0), "the loss");
    } else {
      s.scalar(s.in(0), "the loss's gradient");
      s.same(s.out(0), "the logits' gradient", logits, "the logits");
    }
    break;
  }
  case KernelId::expert_dispatch:
  case KernelId::expert_combine: {
    // Own rows [rows, width], received [ranks * rows, width] (or, bounded
    // by a capacity, [rows, width]), counts [ranks, local], offsets [ranks
    // * local + 1]; ranks: a group's of the grid axis.
    s.range("grid_axis", 0, double(grid.size()) - 1);
    if (!s.error.empty() || grid.empty())
      break;
    bool dispatch = id == KernelId::expert_dispatch;
    int64_t ranks = grid[size_t(c.get("grid_axis", 0))];
    const Shape &own = dispatch ? s.in(0) : s.out(0);
    const Shape &received = dispatch ? s.out(0) : s.in(0);
    const Shape &counts = dispatch ? s.out(2) : s.in(1);
    const Shape &offsets = dispatch ? s.in(1) : s.in(2);
    s.rank(own, 2, "the rows");
    s.rank(counts, 2, "the counts");
    if (!s.error.empty())
      break;
    // One row per rank of a group; the axis is groups of them.
    s.require(counts[0] >= 1 && ranks % counts[0] == 0,
              "the counts " + shapeString(counts) +
                  " have a row per rank of a group, but groups of " +
                  std::to_string(counts[0]) + " do not split the " +
                  std::to_string(ranks) + " ranks of grid axis " +
                  std::to_string(int64_t(c.get("grid_axis", 0))));
    s.flag("capacity_bounded");
    if (c.get("capacity_bounded", 0) != 0) {
      // A capacity's rows: as many come as the rank holds.
      s.require(counts[1] >= 1 && own[0] % (counts[0] * counts[1]) == 0,
                "the rows " + shapeString(own) +
                    " are not the experts' capacity rows (capacity_bounded)");
      s.same(received, "the rows received", own, "the rows (capacity_bounded)");
    } else {
      s.same(received, "the rows received", {counts[0] * own[0], own[1]},
             "[group ranks * rows, width]");
    }
    s.same(offsets, "the offsets", {counts[0] * counts[1] + 1},
           "[group ranks * local experts + 1]");
    if (dispatch)
      s.same(s.out(1), "the local offsets", {counts[1] + 1},
             "[local experts + 1]");
    break;
  }
  case KernelId::grouped_matmul:
  case KernelId::grouped_matmul_weight_grad: {
    bool forward = id == KernelId::grouped_matmul;
    s.flag("transpose_b");
    bool tb = c.get("transpose_b", 0) != 0;
    size_t experts = forward ? c.ins.size() - std::min<size_t>(c.ins.size(), 2)
                             : c.outs.size();
    s.require(experts >= 1, "no weight per expert");
    if (!s.error.empty())
      break;
    const Shape &input = forward ? s.in(0) : s.in(1);
    const Shape &product = forward ? s.out(0) : s.in(0);
    s.require(input.size() == 2 && product.size() == 2 &&
                  input[0] == product[0],
              "the rows " + shapeString(input) + " and their product " +
                  shapeString(product) + " are not [rows, k] and [rows, n]");
    s.same(forward ? s.in(1) : s.in(2), "the offsets", {int64_t(experts) + 1},
           "[experts + 1]");
    if (!s.error.empty())
      break;
    Shape weight =
        tb ? Shape{product[1], input[1]} : Shape{input[1], product[1]};
    for (size_t e = 0; e < experts; ++e)
      s.same(forward ? s.in(2 + e) : s.out(e),
             "expert " + std::to_string(e) + "'s weight", weight,
             tb ? "[n, k]" : "[k, n]");
    break;
  }
  case KernelId::send:
  case KernelId::recv:
  case KernelId::fused: // against its generated kernel, below
    break;
  }
}

/// A `fused` command's operands are those of the generated kernel it names.
Status checkGenerated(const Command &command,
                      const std::vector<BufferDesc> &buffers,
                      const std::vector<GeneratedKernel> &generated) {
  double index = command.get("generated", -1);
  if (!(index >= 0 && index < double(generated.size())) ||
      index != std::floor(index)) {
    std::ostringstream os;
    os << "attribute 'generated' is " << index << ", not one of the "
       << generated.size() << " generated kernels of the program";
    return Status::error(os.str());
  }
  const GeneratedKernel &kernel = generated[size_t(index)];
  size_t operands = command.ins.size() + command.outs.size();
  if (operands != kernel.operandTypes.size() ||
      int64_t(command.outs.size()) != kernel.numOutputs)
    return Status::error(
        "passes " + countOf(int64_t(command.ins.size()), "input") + " and " +
        countOf(int64_t(command.outs.size()), "output") +
        " to generated kernel '" + kernel.name + "', which takes " +
        countOf(int64_t(kernel.operandTypes.size()) - kernel.numOutputs,
                "input") +
        " and " + countOf(kernel.numOutputs, "output"));
  for (size_t k = 0; k < operands; ++k) {
    bool input = k < command.ins.size();
    const BufferDesc &buffer =
        buffers[input ? command.ins[k] : command.outs[k - command.ins.size()]];
    std::string name = std::string(input ? "input " : "output ") +
                       std::to_string(input ? k : k - command.ins.size());
    if (buffer.dtype != kernel.operandTypes[k] ||
        buffer.numElements() != kernel.operandExtents[k])
      return Status::error(
          name + " is " + dtypeName(buffer.dtype) + " " +
          shapeString(buffer.shape) + ", but generated kernel '" + kernel.name +
          "' takes " + std::to_string(kernel.operandExtents[k]) + " " +
          dtypeName(kernel.operandTypes[k]) + " elements");
  }
  // Each dropout's parameters: what an unfused dropout command carries,
  // checked as the dropout kernel's are, and the [batch, seq local, inner]
  // extents its mask index needs.
  for (int64_t d = 0; d < kernel.dropouts; ++d) {
    std::string prefix = "dropout" + std::to_string(d) + "_";
    for (const char *name : {"probability", "rng_stream", "seq_local", "inner"})
      if (!command.has(prefix + name))
        return Status::error("generated kernel '" + kernel.name + "' has " +
                             std::to_string(kernel.dropouts) +
                             " dropouts, but attribute '" + prefix + name +
                             "' is missing");
    auto value = [&](const char *name) {
      return command.get(prefix + name, 0.0);
    };
    auto whole = [&](const char *name, double low, double high) {
      double v = value(name);
      return v >= low && v <= high && v == std::floor(v);
    };
    double p = value("probability");
    if (!(p >= 0 && p < 1))
      return Status::error("attribute '" + prefix + "probability' is " +
                           std::to_string(p) + ", not in [0, 1)");
    // The stream is a 32-bit word of the Philox counter; offsets index it.
    for (auto [name, largest] :
         {std::pair{"rng_stream", 4294967295.0},
          std::pair{"rng_offset", double(uint64_t(1) << 53)},
          std::pair{"rng_seq_offset", double(uint64_t(1) << 53)}})
      if (!whole(name, 0, largest))
        return Status::error("attribute '" + prefix + name + "' is " +
                             std::to_string(value(name)) +
                             ", not a counter index");
    double seqLocal = value("seq_local"), inner = value("inner");
    if (!whole("seq_local", 1, 1e15) || !whole("inner", 1, 1e15) ||
        std::fmod(double(kernel.elements), seqLocal * inner) != 0)
      return Status::error(
          "attributes '" + prefix + "seq_local' (" +
          std::to_string(int64_t(seqLocal)) + ") and '" + prefix + "inner' (" +
          std::to_string(int64_t(inner)) + ") do not describe the " +
          std::to_string(kernel.elements) + " elements of generated kernel '" +
          kernel.name + "'");
    if (command.has(prefix + "rng_seq_total") &&
        !(value("rng_seq_offset") + seqLocal <= value("rng_seq_total")))
      return Status::error("the sequence slice of '" + prefix +
                           "rng_seq_offset' lies outside '" + prefix +
                           "rng_seq_total'");
  }
  return Status::ok();
}

} // namespace

Status
mtrt::checkKernelSignature(const Command &command,
                           const std::vector<BufferDesc> &buffers,
                           const std::vector<int64_t> &gridShape,
                           const std::vector<GeneratedKernel> &generated) {
  const KernelInfo *kernel = findKernel(command.kernel);
  if (!kernel)
    return Status::error("no kernel '" + command.kernel +
                         "' in the kernel table");
  auto count = [&](int expected, size_t actual, const char *what) {
    if (expected < 0 ? actual == 0 : actual != size_t(expected))
      return Status::error("expected " +
                           (expected < 0 ? std::string("at least 1")
                                         : std::to_string(expected)) +
                           " " + what + ", got " + std::to_string(actual));
    return Status::ok();
  };
  MTRT_RETURN_IF_ERROR(count(kernel->ins, command.ins.size(), "inputs"));
  MTRT_RETURN_IF_ERROR(count(kernel->outs, command.outs.size(), "outputs"));
  // A collective moves one type: NCCL's calls take one datatype for what
  // they send and receive, and a backend's copy for a group of one rank
  // moves bytes. A conversion is the compiler's cast, stated before it.
  if (isCollective(kernel->id) && !command.ins.empty() &&
      !command.outs.empty() &&
      buffers[command.ins[0]].dtype != buffers[command.outs[0]].dtype)
    return Status::error(std::string("output 0 is ") +
                         dtypeName(buffers[command.outs[0]].dtype) +
                         ", input 0 " +
                         dtypeName(buffers[command.ins[0]].dtype) +
                         ": a collective moves one type (a cast states a "
                         "conversion)");
  // A generated kernel states each operand's type (token ids among them
  // for a row kernel): checked against it below.
  for (size_t j = 0; j < command.ins.size() && kernel->id != KernelId::fused;
       ++j) {
    bool index = kernel->isIndexInput(j);
    DType actual = buffers[command.ins[j]].dtype;
    bool floating =
        actual == DType::F32 || actual == DType::F16 || actual == DType::BF16;
    if (index ? actual != DType::I32 : !floating)
      return Status::error("input " + std::to_string(j) + " is " +
                           dtypeName(actual) + ", expected " +
                           (index ? indexWhat(kernel->id) : "floating point"));
  }
  for (size_t j = 0; j < command.outs.size(); ++j) {
    bool index = kernel->isIndexOutput(j);
    DType dtype = buffers[command.outs[j]].dtype;
    if (index ? dtype != DType::I32
              : dtype == DType::I32 || dtype == DType::I64)
      return Status::error("output " + std::to_string(j) + " is " +
                           dtypeName(dtype) + ", expected " +
                           (index ? indexWhat(kernel->id) : "floating point"));
  }
  // The optimizer updates fp32 master weights and moments, and run-time
  // scalars are fp32: 16-bit values there would round every update.
  bool allF32 =
      kernel->id == KernelId::adamw || kernel->id == KernelId::multi_adamw ||
      kernel->id == KernelId::clip_scale || kernel->id == KernelId::div;
  // A multi_adamw's 16-bit parameter copies, after everything else, are
  // bf16 or f16, one of them for all.
  size_t f32Ins = command.ins.size(), f32Outs = command.outs.size();
  if (kernel->id == KernelId::multi_adamw) {
    // Operands that do not add up to N tensors of each kind and the copies
    // are the signature's error (checkShapes), not a dtype's.
    const MultiAdamWLayout layout(command);
    if (layout.count == 0 || command.ins.size() != layout.numIns() ||
        command.outs.size() != layout.numOuts() ||
        (layout.copies != 0 && layout.copies != layout.count))
      allF32 = false;
    f32Ins -= std::min(f32Ins, layout.copies);
    f32Outs -= std::min(f32Outs, layout.copies);
    for (size_t j = f32Ins; allF32 && j < command.ins.size() && layout.copies;
         ++j) {
      DType copy = buffers[command.ins[j]].dtype;
      DType first = buffers[command.ins[f32Ins]].dtype;
      if ((copy != DType::BF16 && copy != DType::F16) || copy != first)
        return Status::error(
            "input " + std::to_string(j) + " (a parameter's copy) is " +
            dtypeName(copy) + ", expected bf16 or f16 as input " +
            std::to_string(f32Ins) + " (" + dtypeName(first) + ")");
    }
    for (size_t j = f32Outs; allF32 && j < command.outs.size() && layout.copies;
         ++j)
      if (buffers[command.outs[j]].dtype != buffers[command.ins[f32Ins]].dtype)
        return Status::error(
            "output " + std::to_string(j) + " (a parameter's copy) is " +
            dtypeName(buffers[command.outs[j]].dtype) + ", expected " +
            dtypeName(buffers[command.ins[f32Ins]].dtype));
  }
  for (const std::vector<int64_t> *ids : {&command.ins, &command.outs})
    for (size_t j = 0; allF32 && j < (ids == &command.ins ? f32Ins : f32Outs);
         ++j)
      if (DType dtype = buffers[(*ids)[j]].dtype; dtype != DType::F32)
        return Status::error(
            std::string(ids == &command.ins ? "input " : "output ") +
            std::to_string(j) + " is " + dtypeName(dtype) +
            ", expected f32 (optimizer state and scalars "
            "are fp32)");
  // Attention's log-sum-exp stays fp32 whatever the activations are: in
  // 16 bits each probability exp(s - lse) would be off by up to 2^-8 of
  // the score's scale.
  if (isAttention(kernel->id) && attentionKind(kernel->id).hasStats()) {
    bool forward = attentionKind(kernel->id).forward;
    size_t last = command.ins.size() - 1;
    DType stats = buffers[forward ? command.outs[1] : command.ins[last]].dtype;
    if (stats != DType::F32)
      return Status::error((forward ? std::string("output 1")
                                    : "input " + std::to_string(last)) +
                           " (the log-sum-exp stats) is " + dtypeName(stats) +
                           ", expected f32");
  }
  for (const auto &[name, value] : command.params)
    if (!std::isfinite(value))
      return Status::error("attribute '" + name + "' is not finite");
  if (kernel->id == KernelId::fused)
    return checkGenerated(command, buffers, generated);
  Signature signature(command, buffers);
  checkShapes(kernel->id, signature, gridShape);
  if (!signature.error.empty())
    return Status::error(signature.error);
  return Status::ok();
}
