// The values of the Jinja template language, modelled on the Python objects jinja2 works with:
// Undefined, None, bool, int, float, str, list/tuple (and iterators), dict (ordered), namespaces,
// loop contexts and functions; with Python's truthiness, equality, ordering, str() and repr().
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace anvil::jinja {

class Value;
struct ListData;
struct DictData;
struct FunctionData;

/// Arguments of a call, positional then keyword, in source order.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

using NativeFunction = std::function<Value(CallArgs&)>;

/// What a list-like value is in Python: list, tuple, range, a one-shot iterator (what select,
/// map, reverse and friends return), or a dict view.
enum class ListKind : uint8_t {
  kList,
  kTuple,
  kRange,
  kIterator,
  kDictItems,
  kDictKeys,
  kDictValues
};
/// What a mapping-like value is: a dict, a namespace() object, or a for loop's `loop`.
enum class DictKind : uint8_t { kDict, kNamespace, kLoop };

/// Deepest nesting of lists and dicts a value may have (deeper would risk the C++ stack).
constexpr int kMaxDepth = 400;

class Value {
 public:
  enum class Kind : uint8_t {
    kUndefined,
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kList,
    kDict,
    kFunction
  };

  /// An undefined value without a message.
  Value() = default;
  /// An undefined value; `message` is the error raised when it is used in a way that needs a
  /// value (attribute access, arithmetic, calling), e.g. "'x' is undefined".
  static Value undefined(std::string message);
  static Value none();
  static Value boolean(bool b);
  static Value integer(int64_t i);
  static Value number(double d);
  static Value string(std::string s);
  /// A markupsafe.Markup string, what |safe and |escape return: a str, except that + and % escape
  /// the plain strings they combine it with (and its own str methods keep it Markup).
  static Value markup(std::string s);
  /// `s` as a Markup string when `like` is one, else a plain string.
  static Value string_like(const Value& like, std::string s);
  /// A list (or tuple, iterator, view) of `items`; throws when it would nest too deeply.
  static Value list(std::vector<Value> items, ListKind kind = ListKind::kList);
  /// A dict with `entries` in order (keys assumed distinct).
  static Value dict(std::vector<std::pair<Value, Value>> entries, DictKind kind = DictKind::kDict);
  static Value from_dict(std::shared_ptr<DictData> d);
  static Value function(std::string name, NativeFunction fn);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_float() const { return kind_ == Kind::kFloat; }
  /// bool, int or float (Python's numbers.Number).
  bool is_number() const {
    return kind_ == Kind::kBool || kind_ == Kind::kInt || kind_ == Kind::kFloat;
  }
  /// bool or int (Python's int).
  bool is_integral() const { return kind_ == Kind::kBool || kind_ == Kind::kInt; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_markup() const { return markup_; }
  bool is_list() const { return kind_ == Kind::kList; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  bool is_function() const { return kind_ == Kind::kFunction; }
  /// A plain dict (not a namespace or loop object).
  bool is_mapping() const;
  /// A list or tuple.
  bool is_sequence_list() const;
  /// A list, tuple or range: what integer subscripts and slices work on.
  bool is_indexable() const;

  bool as_bool() const { return std::get<bool>(data_); }
  /// The integer of a bool or int.
  int64_t as_int() const;
  /// The number as a double (bool, int or float).
  double as_double() const;
  const std::string& as_string() const { return *std::get<StrPtr>(data_); }
  ListData& as_list() const { return *std::get<std::shared_ptr<ListData>>(data_); }
  DictData& as_dict() const { return *std::get<std::shared_ptr<DictData>>(data_); }
  const std::shared_ptr<DictData>& dict_ptr() const {
    return std::get<std::shared_ptr<DictData>>(data_);
  }
  const FunctionData& as_function() const { return *std::get<FnPtr>(data_); }
  /// The message an undefined value raises when used.
  std::string undefined_message() const;
  /// Identity of the shared object behind a list, dict or function (Python's `is`).
  const void* identity() const;

 private:
  using StrPtr = std::shared_ptr<const std::string>;
  using FnPtr = std::shared_ptr<const FunctionData>;
  Kind kind_ = Kind::kUndefined;
  bool markup_ = false;
  std::variant<std::monostate, bool, int64_t, double, StrPtr, std::shared_ptr<ListData>,
               std::shared_ptr<DictData>, FnPtr>
      data_;
};

struct ListData {
  ListKind kind = ListKind::kList;
  int depth = 1;
  std::vector<Value> items;
  int64_t range_start = 0;  // the arguments of a range, for printing it
  int64_t range_stop = 0;
  int64_t range_step = 1;
};

struct DictData {
  DictKind kind = DictKind::kDict;
  int depth = 1;
  std::vector<std::pair<Value, Value>> entries;

  const Value* find(const Value& key) const;
  const Value* find(std::string_view key) const;
  /// Replaces the value of `key`, or appends the pair.
  void set(Value key, Value value);
};

struct FunctionData {
  std::string name;
  NativeFunction fn;
};

/// The nesting depth of a value (0 for scalars).
int depth_of(const Value& v);

/// Python truthiness.
bool truthy(const Value& v);
/// Python ==.
bool equals(const Value& a, const Value& b);
/// Python ordering: negative, zero or positive; throws TemplateError for unorderable types
/// (`op` names the operator in the message).
int compare(const Value& a, const Value& b, std::string_view op = "<");
/// Throws Python's "unhashable type" error for values that cannot be dict keys (lists, dicts).
void check_hashable(const Value& v);
/// Python's type name: 'str', 'int', 'NoneType', 'list', 'dict', ...
std::string type_name(const Value& v);
/// How jinja2 names an object in "... has no attribute" messages: 'dict object', 'None', ...
std::string object_description(const Value& v);
/// The items iterating `v` yields (dict keys, string characters, ...); undefined yields none.
std::vector<Value> iterate(const Value& v);
/// Python str(): what {{ v }} prints.
std::string to_str(const Value& v);
/// Python repr().
std::string repr(const Value& v);
std::string float_repr(double d);
/// markupsafe.escape's replacements: & < > " ' become &amp; &lt; &gt; &#34; &#39;.
std::string html_escape(std::string_view s);
/// markupsafe.escape(v): a Markup value unchanged, anything else str() and escaped, as Markup.
Value escape(const Value& v);
std::string string_repr(std::string_view s);

/// Converts a JSON document: objects become dicts in key order, arrays lists, null None.
Value from_json(const nlohmann::ordered_json& j);

/// Options of json.dumps as transformers' tojson filter passes them.
struct JsonOptions {
  bool ensure_ascii = false;
  bool has_indent = false;
  std::string indent;  // one level of indentation when has_indent
  std::string item_separator = ", ";
  std::string key_separator = ": ";
  bool sort_keys = false;
};
/// Python json.dumps(v, ...); throws TemplateError for values JSON cannot represent.
std::string to_json(const Value& v, const JsonOptions& options);

/// Binds call arguments to a parameter list like a Python signature; errors name `function`.
class BoundArgs {
 public:
  BoundArgs(std::string_view function, const CallArgs& call, std::vector<std::string_view> params,
            size_t required = 0);
  /// The argument for parameter i, or nullptr when not given.
  const Value* get(size_t i) const { return values_[i]; }
  bool has(size_t i) const { return values_[i] != nullptr; }
  Value get_or(size_t i, Value fallback) const { return values_[i] ? *values_[i] : fallback; }

 private:
  std::vector<const Value*> values_;
};

}  // namespace anvil::jinja
