// The Jinja interpreter (see jinja_interpreter.h). Scoping follows jinja2: each loop iteration,
// macro call, with block and block set gets a fresh scope whose assignments do not leak out,
// while if blocks share their enclosing scope; namespace() objects are how state crosses scopes.
#include "chat/jinja_interpreter.h"

#include <ctime>
#include <memory>
#include <optional>
#include <unordered_map>

#include "chat/jinja_builtins.h"
#include "chat/jinja_error.h"
#include "chat/jinja_strings.h"

namespace anvil::jinja {

namespace {

constexpr int kMaxMacroDepth = 100;    // nested macro calls (self-recursion included)
constexpr int kMaxNesting = 1500;      // nested evaluation of expressions and blocks
constexpr int64_t kMaxRange = 100000;  // jinja2's sandbox limit for range()

struct Frame {
  std::unordered_map<std::string, Value> vars;
  std::shared_ptr<Frame> parent;
};
using FramePtr = std::shared_ptr<Frame>;

enum class Flow { kNormal, kBreak, kContinue };

// Positions of the loop object's entries, which are updated in place each iteration.
enum LoopField : size_t {
  kIndex0,
  kIndex,
  kRevindex,
  kRevindex0,
  kFirst,
  kLast,
  kLength,
  kPrevitem,
  kNextitem,
  kDepth,
  kDepth0,
  kCycle,
  kChanged,
  kLoopFieldCount
};
constexpr const char* kLoopFieldNames[] = {"index0", "index",  "revindex", "revindex0", "first",
                                           "last",   "length", "previtem", "nextitem",  "depth",
                                           "depth0", "cycle",  "changed"};

class Interpreter {
 public:
  explicit Interpreter(const nlohmann::ordered_json& context) : root_(std::make_shared<Frame>()) {
    install_globals();
    if (!context.is_object()) throw TemplateError("the render context must be a JSON object", 1);
    const Value ctx = from_json(context);
    for (const auto& [k, v] : ctx.as_dict().entries) globals_[k.as_string()] = v;
  }

  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  ~Interpreter() {
    // Namespaces and loop objects can reference each other (even in cycles); empty them first so
    // that nothing is destroyed recursively or leaked.
    std::vector<std::pair<Value, Value>> graveyard;
    for (const auto& obj : objects_)
      for (auto& entry : obj->entries) graveyard.push_back(std::move(entry));
    for (const auto& obj : objects_) obj->entries.clear();
  }

  std::string run(const TemplateAst& ast) {
    std::string out;
    exec_body(ast.body, root_, out);
    return out;
  }

 private:
  struct NestGuard {
    explicit NestGuard(Interpreter* ip) : interp(ip) {
      if (++interp->nesting_ > kMaxNesting) {
        --interp->nesting_;
        throw TemplateError("template nested too deeply");
      }
    }
    ~NestGuard() { --interp->nesting_; }
    Interpreter* interp;
  };

  static FramePtr child(const FramePtr& parent) {
    auto f = std::make_shared<Frame>();
    f->parent = parent;
    return f;
  }

  Value lookup(const std::string& name, const FramePtr& frame) const {
    for (const Frame* f = frame.get(); f; f = f->parent.get()) {
      const auto it = f->vars.find(name);
      if (it != f->vars.end()) return it->second;
    }
    const auto it = globals_.find(name);
    if (it != globals_.end()) return it->second;
    return Value::undefined("'" + name + "' is undefined");
  }

  // ---- statements ---------------------------------------------------------------------------
  Flow exec_body(const Body& body, const FramePtr& frame, std::string& out) {
    for (const StmtPtr& s : body) {
      const Flow flow = exec(*s, frame, out);
      if (flow != Flow::kNormal) return flow;
    }
    return Flow::kNormal;
  }

  Flow exec(const Stmt& s, const FramePtr& frame, std::string& out) {
    NestGuard guard(this);
    try {
      return exec_inner(s, frame, out);
    } catch (TemplateError& e) {
      if (e.line() == 0) e.set_line(s.line);
      throw;
    }
  }

  Flow exec_inner(const Stmt& s, const FramePtr& frame, std::string& out) {
    switch (s.kind) {
      case StmtKind::kText:
        pystr::append_bounded(out, s.text, "the rendered text");
        return Flow::kNormal;
      case StmtKind::kOutput:
        pystr::append_bounded(out, to_str(eval(*s.exprs[0], frame)), "the rendered text");
        return Flow::kNormal;
      case StmtKind::kIf:
        for (size_t i = 0; i < s.exprs.size(); ++i)
          if (truthy(eval(*s.exprs[i], frame))) return exec_body(s.bodies[i], frame, out);
        return exec_body(s.bodies.back(), frame, out);
      case StmtKind::kFor:
        return exec_for(s, frame, out);
      case StmtKind::kSet:
        assign(s, eval(*s.exprs[0], frame), frame);
        return Flow::kNormal;
      case StmtKind::kSetBlock: {
        std::string text;
        exec_body(s.bodies[0], child(frame), text);
        Value v = Value::string(std::move(text));
        if (s.exprs[0]) v = apply_filter_chain(*s.exprs[0], v, frame);
        assign(s, v, frame);
        return Flow::kNormal;
      }
      case StmtKind::kMacro:
        define_macro(s, frame);
        return Flow::kNormal;
      case StmtKind::kBreak:
        return Flow::kBreak;
      case StmtKind::kContinue:
        return Flow::kContinue;
      case StmtKind::kFilterBlock: {
        std::string text;
        exec_body(s.bodies[0], child(frame), text);
        pystr::append_bounded(
            out, to_str(apply_filter_chain(*s.exprs[0], Value::string(std::move(text)), frame)),
            "the rendered text");
        return Flow::kNormal;
      }
      case StmtKind::kWith: {
        FramePtr inner = child(frame);
        for (size_t i = 0; i < s.names.size(); ++i)
          inner->vars[s.names[i]] = eval(*s.exprs[i], frame);
        return exec_body(s.bodies[0], inner, out);
      }
      case StmtKind::kGeneration:
        return exec_body(s.bodies[0], child(frame), out);
    }
    return Flow::kNormal;
  }

  // Binds `value` to the targets `names` (unpacking a sequence when `unpack`).
  static void bind(Frame& frame, const std::vector<std::string>& names, bool unpack,
                   const Value& value) {
    if (!unpack) {
      frame.vars[names[0]] = value;
      return;
    }
    if (!value.is_list() && !value.is_string() && !value.is_mapping())
      throw TemplateError("cannot unpack non-iterable " + type_name(value) + " object");
    const std::vector<Value> items = iterate(value);
    if (items.size() > names.size())
      throw TemplateError("too many values to unpack (expected " + std::to_string(names.size()) +
                          ")");
    if (items.size() < names.size())
      throw TemplateError("not enough values to unpack (expected " + std::to_string(names.size()) +
                          ", got " + std::to_string(items.size()) + ")");
    for (size_t i = 0; i < names.size(); ++i) frame.vars[names[i]] = items[i];
  }

  void assign(const Stmt& s, const Value& value, const FramePtr& frame) {
    if (s.attr.empty()) {
      bind(*frame, s.names, s.unpack, value);
      return;
    }
    const Value ns = lookup(s.names[0], frame);
    if (!ns.is_dict() || ns.as_dict().kind != DictKind::kNamespace)
      throw TemplateError("cannot assign attribute on non-namespace object");
    ns.as_dict().set(Value::string(s.attr), value);
  }

  Flow exec_for(const Stmt& s, const FramePtr& frame, std::string& out) {
    std::vector<Value> items = iterate(eval(*s.exprs[0], frame));
    if (s.exprs[1]) {
      std::vector<Value> kept;
      for (Value& item : items) {
        FramePtr probe = child(frame);
        bind(*probe, s.names, s.unpack, item);
        if (truthy(eval(*s.exprs[1], probe))) kept.push_back(std::move(item));
      }
      items = std::move(kept);
    }

    auto loop = std::make_shared<DictData>();
    loop->kind = DictKind::kLoop;
    objects_.push_back(loop);
    for (size_t i = 0; i < kLoopFieldCount; ++i)
      loop->entries.emplace_back(Value::string(kLoopFieldNames[i]), Value());
    const auto n = static_cast<int64_t>(items.size());
    auto& e = loop->entries;
    e[kLength].second = Value::integer(n);
    e[kDepth].second = Value::integer(1);
    e[kDepth0].second = Value::integer(0);
    std::weak_ptr<DictData> weak = loop;
    e[kCycle].second = Value::function("cycle", [weak](CallArgs& args) {
      if (args.positional.empty()) throw TemplateError("no items for cycling given");
      const auto l = weak.lock();
      const int64_t i = l ? l->entries[kIndex0].second.as_int() : 0;
      return args.positional[static_cast<size_t>(i) % args.positional.size()];
    });
    auto last_changed = std::make_shared<std::optional<Value>>();
    e[kChanged].second = Value::function("changed", [last_changed](CallArgs& args) {
      Value now = Value::list(args.positional);
      if (*last_changed && equals(**last_changed, now)) return Value::boolean(false);
      *last_changed = std::move(now);
      return Value::boolean(true);
    });
    const Value loop_value = Value::from_dict(loop);
    bool completed = false;
    for (int64_t i = 0; i < n; ++i) {
      const auto u = static_cast<size_t>(i);
      e[kIndex0].second = Value::integer(i);
      e[kIndex].second = Value::integer(i + 1);
      e[kRevindex].second = Value::integer(n - i);
      e[kRevindex0].second = Value::integer(n - i - 1);
      e[kFirst].second = Value::boolean(i == 0);
      e[kLast].second = Value::boolean(i == n - 1);
      e[kPrevitem].second = i > 0 ? items[u - 1] : Value::undefined("there is no previous item");
      e[kNextitem].second = i + 1 < n ? items[u + 1] : Value::undefined("there is no next item");
      FramePtr inner = child(frame);
      bind(*inner, s.names, s.unpack, items[u]);
      inner->vars["loop"] = loop_value;
      const Flow flow = exec_body(s.bodies[0], inner, out);
      if (flow == Flow::kNormal) completed = true;
      if (flow == Flow::kBreak) break;
    }
    // As in jinja2, the else block runs unless an iteration reached the end of the body: a loop
    // whose every iteration ends in break or continue runs it too.
    if (!completed) return exec_body(s.bodies[1], child(frame), out);
    return Flow::kNormal;
  }

  void define_macro(const Stmt& s, const FramePtr& frame) {
    std::weak_ptr<Frame> defining = frame;
    const Stmt* stmt = &s;
    frame->vars[s.text] = Value::function(s.text, [this, stmt, defining](CallArgs& args) {
      return call_macro(*stmt, defining, args);
    });
  }

  Value call_macro(const Stmt& s, const std::weak_ptr<Frame>& defining, CallArgs& args) {
    if (macro_depth_ >= kMaxMacroDepth)
      throw TemplateError("macro '" + s.text + "' nested too deeply (more than " +
                          std::to_string(kMaxMacroDepth) + " calls deep)");
    struct DepthGuard {
      explicit DepthGuard(int* d) : depth(d) { ++*depth; }
      ~DepthGuard() { --*depth; }
      int* depth;
    } guard(&macro_depth_);
    FramePtr parent = defining.lock();
    FramePtr frame = child(parent ? parent : root_);
    const size_t n = s.names.size();
    if (args.positional.size() > n)
      throw TemplateError("macro '" + s.text + "' takes not more than " + std::to_string(n) +
                          " argument(s)");
    std::vector<bool> given(n, false);
    for (size_t i = 0; i < args.positional.size(); ++i) {
      frame->vars[s.names[i]] = args.positional[i];
      given[i] = true;
    }
    for (auto& [name, value] : args.keyword) {
      size_t i = 0;
      while (i < n && s.names[i] != name) ++i;
      if (i == n)
        throw TemplateError("macro '" + s.text + "' takes no keyword argument '" + name + "'");
      if (given[i])
        throw TemplateError("macro '" + s.text + "' got multiple values for argument '" + name +
                            "'");
      frame->vars[name] = value;
      given[i] = true;
    }
    for (size_t i = 0; i < n; ++i) {
      if (given[i]) continue;
      frame->vars[s.names[i]] =
          s.exprs[i] ? eval(*s.exprs[i], frame)
                     : Value::undefined("parameter '" + s.names[i] + "' was not provided");
    }
    std::string out;
    exec_body(s.bodies[0], frame, out);
    return Value::string(std::move(out));
  }

  // ---- expressions --------------------------------------------------------------------------
  Value eval(const Expr& e, const FramePtr& frame) {
    NestGuard guard(this);
    try {
      return eval_inner(e, frame);
    } catch (TemplateError& err) {
      if (err.line() == 0) err.set_line(e.line);
      throw;
    }
  }

  CallArgs eval_args(const Expr& e, size_t first, const FramePtr& frame) {
    CallArgs args;
    for (size_t i = first; i < e.children.size(); ++i)
      args.positional.push_back(eval(*e.children[i], frame));
    for (const auto& [name, expr] : e.kwargs) args.keyword.emplace_back(name, eval(*expr, frame));
    return args;
  }

  static Value call_value(const Value& callee, CallArgs& args) {
    if (callee.is_function()) return callee.as_function().fn(args);
    if (callee.is_undefined()) throw TemplateError(callee.undefined_message());
    throw TemplateError("'" + type_name(callee) + "' object is not callable");
  }

  Value apply_filter(const Expr& e, const Value& input, const FramePtr& frame) {
    const FilterFn fn = find_filter(e.name);
    if (!fn) throw TemplateError("No filter named '" + e.name + "' found.");
    const CallArgs args = eval_args(e, 1, frame);
    return fn(input, args);
  }

  // A filter chain parsed without an input (filter blocks, block sets): `input` feeds the
  // innermost filter.
  Value apply_filter_chain(const Expr& e, const Value& input, const FramePtr& frame) {
    const Value inner = e.children[0] ? apply_filter_chain(*e.children[0], input, frame) : input;
    try {
      return apply_filter(e, inner, frame);
    } catch (TemplateError& err) {
      if (err.line() == 0) err.set_line(e.line);
      throw;
    }
  }

  bool compare_op(const std::string& op, const Value& a, const Value& b) {
    if (op == "==") return equals(a, b);
    if (op == "!=") return !equals(a, b);
    if (op == "in") return contains(b, a);
    if (op == "notin") return !contains(b, a);
    const int c = compare(a, b, op);
    if (op == "<") return c < 0;
    if (op == "<=") return c <= 0;
    if (op == ">") return c > 0;
    return c >= 0;
  }

  Value eval_inner(const Expr& e, const FramePtr& frame) {
    switch (e.kind) {
      case ExprKind::kConst:
        return e.value;
      case ExprKind::kName:
        return lookup(e.name, frame);
      case ExprKind::kList:
      case ExprKind::kTuple: {
        std::vector<Value> items;
        items.reserve(e.children.size());
        for (const auto& c : e.children) items.push_back(eval(*c, frame));
        return Value::list(std::move(items),
                           e.kind == ExprKind::kList ? ListKind::kList : ListKind::kTuple);
      }
      case ExprKind::kDict: {
        std::vector<std::pair<Value, Value>> entries;
        for (size_t i = 0; i + 1 < e.children.size(); i += 2) {
          Value k = eval(*e.children[i], frame);
          Value v = eval(*e.children[i + 1], frame);
          check_hashable(k);
          bool replaced = false;
          for (auto& entry : entries) {
            if (equals(entry.first, k)) {
              entry.second = v;
              replaced = true;
            }
          }
          if (!replaced) entries.emplace_back(std::move(k), std::move(v));
        }
        return Value::dict(std::move(entries));
      }
      case ExprKind::kGetAttr:
        return get_attr(eval(*e.children[0], frame), e.name);
      case ExprKind::kGetItem: {
        const Value obj = eval(*e.children[0], frame);
        const Expr& index = *e.children[1];
        if (index.kind == ExprKind::kSlice) {
          Value bounds[3];
          const Value* ptrs[3] = {nullptr, nullptr, nullptr};
          for (size_t i = 0; i < 3; ++i) {
            if (!index.children[i]) continue;
            bounds[i] = eval(*index.children[i], frame);
            ptrs[i] = &bounds[i];
          }
          return slice(obj, ptrs[0], ptrs[1], ptrs[2]);
        }
        return get_item(obj, eval(index, frame));
      }
      case ExprKind::kSlice:
        throw TemplateError("a slice is only allowed inside []");
      case ExprKind::kCall: {
        const Value callee = eval(*e.children[0], frame);
        CallArgs args = eval_args(e, 1, frame);
        return call_value(callee, args);
      }
      case ExprKind::kFilter:
        if (!e.children[0]) throw TemplateError("filter without input");
        return apply_filter(e, eval(*e.children[0], frame), frame);
      case ExprKind::kTest: {
        const Value input = eval(*e.children[0], frame);
        const TestFn fn = find_test(e.name);
        if (!fn) throw TemplateError("No test named '" + e.name + "' found.");
        const CallArgs args = eval_args(e, 1, frame);
        return Value::boolean(fn(input, args));
      }
      case ExprKind::kNot:
        return Value::boolean(!truthy(eval(*e.children[0], frame)));
      case ExprKind::kNeg:
        return negate(eval(*e.children[0], frame));
      case ExprKind::kPos: {
        const Value v = eval(*e.children[0], frame);
        if (v.is_undefined()) throw TemplateError(v.undefined_message());
        if (v.is_integral()) return Value::integer(v.as_int());
        if (v.is_float()) return v;
        throw TemplateError("bad operand type for unary +: '" + type_name(v) + "'");
      }
      case ExprKind::kBinary:
        return binary_op(e.name, eval(*e.children[0], frame), eval(*e.children[1], frame));
      case ExprKind::kConcat: {
        std::string out;
        for (const auto& c : e.children)
          pystr::append_bounded(out, to_str(eval(*c, frame)), "a string built by ~");
        return Value::string(std::move(out));
      }
      case ExprKind::kCompare: {
        Value left = eval(*e.children[0], frame);
        for (size_t i = 0; i < e.ops.size(); ++i) {
          Value right = eval(*e.children[i + 1], frame);
          if (!compare_op(e.ops[i], left, right)) return Value::boolean(false);
          left = std::move(right);
        }
        return Value::boolean(true);
      }
      case ExprKind::kAnd: {
        Value left = eval(*e.children[0], frame);
        return truthy(left) ? eval(*e.children[1], frame) : left;
      }
      case ExprKind::kOr: {
        Value left = eval(*e.children[0], frame);
        return truthy(left) ? left : eval(*e.children[1], frame);
      }
      case ExprKind::kCond:
        if (truthy(eval(*e.children[0], frame))) return eval(*e.children[1], frame);
        if (e.children[2]) return eval(*e.children[2], frame);
        return Value::undefined("the inline if-expression on line " + std::to_string(e.line) +
                                " evaluated to false and no else section was defined.");
    }
    return Value();
  }

  // ---- globals ------------------------------------------------------------------------------
  Value make_object(const CallArgs& args, DictKind kind, const char* name) {
    std::vector<std::pair<Value, Value>> entries;
    auto put = [&entries](Value k, Value v) {
      check_hashable(k);
      for (auto& entry : entries) {
        if (equals(entry.first, k)) {
          entry.second = std::move(v);
          return;
        }
      }
      entries.emplace_back(std::move(k), std::move(v));
    };
    if (args.positional.size() > 1)
      throw TemplateError(std::string(name) + " expected at most 1 argument, got " +
                          std::to_string(args.positional.size()));
    if (!args.positional.empty()) {
      const Value& src = args.positional[0];
      if (src.is_mapping()) {
        for (const auto& [k, v] : src.as_dict().entries) put(k, v);
      } else {
        for (const Value& pair : iterate(src)) {
          const std::vector<Value> kv = pair.is_list() ? pair.as_list().items : iterate(pair);
          if (kv.size() != 2)
            throw TemplateError("dictionary update sequence element has length " +
                                std::to_string(kv.size()) + "; 2 is required");
          put(kv[0], kv[1]);
        }
      }
    }
    for (const auto& [k, v] : args.keyword) put(Value::string(k), v);
    Value obj = Value::dict(std::move(entries), kind);
    if (kind != DictKind::kDict) objects_.push_back(obj.dict_ptr());
    return obj;
  }

  static Value range(CallArgs& args) {
    if (!args.keyword.empty()) throw TemplateError("range() takes no keyword arguments");
    const size_t n = args.positional.size();
    if (n < 1 || n > 3)
      throw TemplateError("range expected 1 to 3 arguments, got " + std::to_string(n));
    int64_t v[3] = {0, 0, 1};
    for (size_t i = 0; i < n; ++i) {
      if (!args.positional[i].is_integral())
        throw TemplateError("'" + type_name(args.positional[i]) +
                            "' object cannot be interpreted as an integer");
    }
    if (n == 1) {
      v[1] = args.positional[0].as_int();
    } else {
      v[0] = args.positional[0].as_int();
      v[1] = args.positional[1].as_int();
      if (n == 3) v[2] = args.positional[2].as_int();
    }
    if (v[2] == 0) throw TemplateError("range() arg 3 must not be zero");
    const long double span = static_cast<long double>(v[1]) - static_cast<long double>(v[0]);
    const long double count = span / static_cast<long double>(v[2]);
    if (count > static_cast<long double>(kMaxRange))
      throw TemplateError("Range too big. The sandbox blocks ranges larger than MAX_RANGE (" +
                          std::to_string(kMaxRange) + ").");
    std::vector<Value> items;
    for (int64_t i = v[0]; v[2] > 0 ? i < v[1] : i > v[1]; i += v[2]) {
      items.push_back(Value::integer(i));
      if ((v[2] > 0 && i > INT64_MAX - v[2]) || (v[2] < 0 && i < INT64_MIN - v[2])) break;
    }
    Value r = Value::list(std::move(items), ListKind::kRange);
    r.as_list().range_start = v[0];
    r.as_list().range_stop = v[1];
    r.as_list().range_step = v[2];
    return r;
  }

  static Value strftime_now(CallArgs& args) {
    BoundArgs a("strftime_now", args, {"format"}, 1);
    const std::string fmt = to_str(*a.get(0));
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    localtime_r(&now, &tm);
    for (size_t size = 256; size <= (1u << 16); size *= 4) {
      std::string buf(size, '\0');
      const size_t n = std::strftime(buf.data(), buf.size(), fmt.c_str(), &tm);
      if (n > 0 || fmt.empty()) {
        buf.resize(n);
        return Value::string(std::move(buf));
      }
    }
    return Value::string("");
  }

  void install_globals() {
    globals_["range"] = Value::function("range", range);
    globals_["namespace"] = Value::function("namespace", [this](CallArgs& args) {
      return make_object(args, DictKind::kNamespace, "namespace");
    });
    globals_["dict"] = Value::function(
        "dict", [this](CallArgs& args) { return make_object(args, DictKind::kDict, "dict"); });
    globals_["raise_exception"] = Value::function("raise_exception", [](CallArgs& args) -> Value {
      BoundArgs a("raise_exception", args, {"message"});
      throw TemplateError(a.has(0) ? to_str(*a.get(0)) : "raise_exception called");
    });
    globals_["strftime_now"] = Value::function("strftime_now", strftime_now);
    globals_["joiner"] = Value::function("joiner", [](CallArgs& args) {
      BoundArgs a("joiner", args, {"sep"});
      const std::string sep = a.has(0) ? to_str(*a.get(0)) : ", ";
      auto used = std::make_shared<bool>(false);
      return Value::function("joiner", [sep, used](CallArgs&) {
        if (!*used) {
          *used = true;
          return Value::string("");
        }
        return Value::string(sep);
      });
    });
  }

  FramePtr root_;
  std::unordered_map<std::string, Value> globals_;
  std::vector<std::shared_ptr<DictData>> objects_;
  int nesting_ = 0;
  int macro_depth_ = 0;
};

}  // namespace

std::string render(const TemplateAst& ast, const nlohmann::ordered_json& context) {
  Interpreter interpreter(context);
  return interpreter.run(ast);
}

}  // namespace anvil::jinja
