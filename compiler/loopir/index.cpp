#include "loopir/index.h"

#include <algorithm>
#include <set>

#include "support/error.h"

namespace lpu {

namespace {
int64_t floordiv_i(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }
int64_t mod_i(int64_t a, int64_t b) { return ((a % b) + b) % b; }
}  // namespace

std::string IndexAtom::str() const {
  switch (kind) {
    case Var: return var.name();
    case FloorDiv: return "(" + arg->str() + ")//" + std::to_string(divisor);
    case Mod: return "(" + arg->str() + ")%" + std::to_string(divisor);
  }
  return "?";
}

Index Index::constant(int64_t c) {
  Index i;
  i.constant_ = c;
  return i;
}

std::string LoopVar::name() const { return (kind == Kind::Output ? "i" : "r") + std::to_string(dim); }

bool LoopVar::parse(const std::string& name, LoopVar& out) {
  if (name.size() < 2 || name.size() > 10 || (name[0] != 'i' && name[0] != 'r')) return false;
  if (name.find_first_not_of("0123456789", 1) != std::string::npos || (name[1] == '0' && name.size() > 2)) return false;
  out = {name[0] == 'i' ? Kind::Output : Kind::Reduction, static_cast<size_t>(std::stoul(name.substr(1)))};
  return true;
}

std::vector<LoopVar> loop_vars(LoopVar::Kind kind, size_t n) {
  std::vector<LoopVar> v;
  for (size_t d = 0; d < n; ++d) v.push_back({kind, d});
  return v;
}

Index Index::var(const LoopVar& v) {
  Index i;
  IndexAtom a;
  a.kind = IndexAtom::Var;
  a.var = v;
  i.add_term(1, a);
  return i;
}

void Index::add_term(int64_t coef, const IndexAtom& atom) {
  if (coef == 0) return;
  std::string key = atom.str();
  auto it = terms_.find(key);
  if (it == terms_.end()) {
    terms_.emplace(key, std::make_pair(coef, atom));
  } else {
    it->second.first += coef;
    if (it->second.first == 0) terms_.erase(it);
  }
}

Index Index::operator+(const Index& o) const {
  Index r = *this;
  r.constant_ += o.constant_;
  for (const auto& [k, t] : o.terms_) r.add_term(t.first, t.second);
  return r;
}

Index Index::operator-(const Index& o) const { return *this + o * -1; }

Index Index::operator*(int64_t k) const {
  Index r;
  if (k == 0) return r;
  r.constant_ = constant_ * k;
  for (const auto& [key, t] : terms_) r.terms_.emplace(key, std::make_pair(t.first * k, t.second));
  return r;
}

Index Index::floordiv(int64_t d) const {
  LPU_CHECK(d > 0, "floordiv by ", d);
  if (d == 1) return *this;
  if (is_constant()) return constant(floordiv_i(constant_, d));
  // (d*q + rest) // d == q + rest // d exactly: split off the terms d divides.
  Index q, rest;
  for (const auto& [key, t] : terms_) {
    if (t.first % d == 0)
      q.terms_.emplace(key, std::make_pair(t.first / d, t.second));
    else
      rest.terms_.emplace(key, t);
  }
  q.constant_ = floordiv_i(constant_, d);
  rest.constant_ = mod_i(constant_, d);
  if (rest.terms_.empty()) return q;
  Index r;
  IndexAtom a;
  a.kind = IndexAtom::FloorDiv;
  a.arg = std::make_shared<Index>(rest);
  a.divisor = d;
  r.add_term(1, a);
  return q + r;
}

Index Index::mod(int64_t d) const {
  LPU_CHECK(d > 0, "mod by ", d);
  if (d == 1) return constant(0);
  if (is_constant()) return constant(mod_i(constant_, d));
  // Terms whose coefficient is a multiple of d vanish.
  Index reduced;
  reduced.constant_ = mod_i(constant_, d);
  for (const auto& [key, t] : terms_)
    if (t.first % d != 0) reduced.terms_.emplace(key, t);
  if (reduced.is_constant()) return constant(reduced.constant_);
  Index r;
  IndexAtom a;
  a.kind = IndexAtom::Mod;
  a.arg = std::make_shared<Index>(reduced);
  a.divisor = d;
  r.add_term(1, a);
  return r;
}

bool Index::bounds(const std::map<LoopVar, int64_t>& ranges, int64_t& lo, int64_t& hi) const {
  lo = hi = constant_;
  for (const auto& [key, t] : terms_) {
    int64_t alo, ahi;
    const IndexAtom& a = t.second;
    if (a.kind == IndexAtom::Var) {
      auto it = ranges.find(a.var);
      if (it == ranges.end()) return false;
      alo = 0;
      ahi = it->second - 1;
    } else if (a.kind == IndexAtom::Mod) {
      alo = 0;
      ahi = a.divisor - 1;
      int64_t ilo, ihi;
      if (a.arg->bounds(ranges, ilo, ihi) && ilo >= 0) ahi = std::min(ahi, ihi);
    } else {
      int64_t ilo, ihi;
      if (!a.arg->bounds(ranges, ilo, ihi)) return false;
      alo = floordiv_i(ilo, a.divisor);
      ahi = floordiv_i(ihi, a.divisor);
    }
    int64_t c = t.first;
    lo += c >= 0 ? c * alo : c * ahi;
    hi += c >= 0 ? c * ahi : c * alo;
  }
  return true;
}

Index Index::simplify(const std::map<LoopVar, int64_t>& ranges) const {
  Index r = constant(constant_);
  for (const auto& [key, t] : terms_) {
    const IndexAtom& a = t.second;
    Index v;
    if (a.kind == IndexAtom::Var) {
      auto it = ranges.find(a.var);
      v = (it != ranges.end() && it->second == 1) ? constant(0) : Index::var(a.var);
    } else {
      Index inner = a.arg->simplify(ranges);
      // Split inner = q + rem, q holding the terms whose coefficients d divides.
      Index q, rem = constant(mod_i(inner.constant_, a.divisor));
      q.constant_ = inner.constant_ - rem.constant_;
      for (const auto& [k2, t2] : inner.terms_) {
        if (t2.first % a.divisor == 0)
          q.terms_.emplace(k2, t2);
        else
          rem.terms_.emplace(k2, t2);
      }
      int64_t lo, hi;
      bool fits = rem.bounds(ranges, lo, hi) && lo >= 0 && hi < a.divisor;
      if (fits) {
        v = a.kind == IndexAtom::FloorDiv ? q.floordiv(a.divisor) : rem;
      } else {
        // A coarser split: c divides d, inner = c*x + small with 0 <= small < c. Then
        // inner // d = x // (d/c) and inner % d = c * (x % (d/c)) + small.
        bool done = false;
        std::vector<int64_t> coefs;
        for (const auto& [k2, t2] : inner.terms_) coefs.push_back(t2.first < 0 ? -t2.first : t2.first);
        std::sort(coefs.rbegin(), coefs.rend());
        for (int64_t c : coefs) {
          if (c <= 1 || a.divisor % c != 0) continue;
          Index big, small = constant(mod_i(inner.constant_, c));
          big.constant_ = inner.constant_ - small.constant_;
          for (const auto& [k2, t2] : inner.terms_) {
            if (t2.first % c == 0)
              big.terms_.emplace(k2, t2);
            else
              small.terms_.emplace(k2, t2);
          }
          if (!small.bounds(ranges, lo, hi) || lo < 0 || hi >= c) continue;
          Index x = big.floordiv(c).simplify(ranges);
          int64_t dc = a.divisor / c;
          v = a.kind == IndexAtom::FloorDiv ? x.floordiv(dc).simplify(ranges) : x.mod(dc).simplify(ranges) * c + small;
          done = true;
          break;
        }
        if (!done) v = a.kind == IndexAtom::FloorDiv ? inner.floordiv(a.divisor) : inner.mod(a.divisor);
      }
    }
    r = r + v * t.first;
  }
  // x//d*(c*d) + x%d*c  ->  c*x
  bool changed = true;
  while (changed) {
    changed = false;
    for (const auto& [key, t] : r.terms_) {
      const IndexAtom& a = t.second;
      if (a.kind != IndexAtom::Mod) continue;
      IndexAtom fd = a;
      fd.kind = IndexAtom::FloorDiv;
      auto it = r.terms_.find(fd.str());
      if (it == r.terms_.end() || it->second.first != t.first * a.divisor) continue;
      Index x = *a.arg * t.first;
      int64_t c = t.first;
      std::string fkey = it->first, mkey = key;
      r.terms_.erase(fkey);
      r.terms_.erase(mkey);
      (void)c;
      r = r + x;
      changed = true;
      break;
    }
  }
  return r;
}

int64_t Index::coefficient(const LoopVar& v) const {
  auto it = terms_.find(v.name());  // a variable's atom text is its name
  return it == terms_.end() ? 0 : it->second.first;
}

bool Index::is_affine() const {
  return std::all_of(terms_.begin(), terms_.end(), [](auto& kv) { return kv.second.second.kind == IndexAtom::Var; });
}

std::vector<LoopVar> Index::variables() const {
  std::set<LoopVar> vs;
  for (const auto& [key, t] : terms_) {
    if (t.second.kind == IndexAtom::Var)
      vs.insert(t.second.var);
    else
      for (auto& v : t.second.arg->variables()) vs.insert(v);
  }
  return {vs.begin(), vs.end()};
}

bool Index::depends_on(const LoopVar& v) const {
  auto vs = variables();
  return std::find(vs.begin(), vs.end(), v) != vs.end();
}

Index Index::substitute(const std::map<LoopVar, Index>& env) const {
  Index r = constant(constant_);
  for (const auto& [key, t] : terms_) {
    const IndexAtom& a = t.second;
    Index v;
    if (a.kind == IndexAtom::Var) {
      auto it = env.find(a.var);
      v = it == env.end() ? Index::var(a.var) : it->second;
    } else {
      Index inner = a.arg->substitute(env);
      v = a.kind == IndexAtom::FloorDiv ? inner.floordiv(a.divisor) : inner.mod(a.divisor);
    }
    r = r + v * t.first;
  }
  return r;
}

int64_t Index::evaluate(const std::map<LoopVar, int64_t>& env) const {
  int64_t r = constant_;
  for (const auto& [key, t] : terms_) {
    const IndexAtom& a = t.second;
    int64_t v;
    if (a.kind == IndexAtom::Var) {
      auto it = env.find(a.var);
      if (it == env.end()) throw InternalError("index variable " + a.var.name() + " unbound");
      v = it->second;
    } else {
      int64_t inner = a.arg->evaluate(env);
      v = a.kind == IndexAtom::FloorDiv ? floordiv_i(inner, a.divisor) : mod_i(inner, a.divisor);
    }
    r += t.first * v;
  }
  return r;
}

std::vector<std::pair<int64_t, IndexAtom>> Index::terms() const {
  std::vector<std::pair<int64_t, IndexAtom>> out;
  for (const auto& [key, t] : terms_) out.push_back(t);
  return out;
}

std::string Index::str() const {
  std::string s;
  for (const auto& [key, t] : terms_) {
    int64_t c = t.first;
    if (s.empty())
      s += c < 0 ? "-" : "";
    else
      s += c < 0 ? " - " : " + ";
    int64_t ac = c < 0 ? -c : c;
    if (ac != 1) s += std::to_string(ac) + "*";
    s += key;
  }
  if (s.empty()) return std::to_string(constant_);
  if (constant_ > 0) s += " + " + std::to_string(constant_);
  if (constant_ < 0) s += " - " + std::to_string(-constant_);
  return s;
}

}  // namespace lpu
