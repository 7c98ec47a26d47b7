// The built-in Jinja tests (`x is defined`, `x is divisibleby 3`, ...) and their registry, with
// jinja2's semantics (bool counts as a number but not as an integer, undefined is iterable, ...).
#include <unordered_map>

#include "chat/jinja_builtins.h"
#include "chat/jinja_error.h"
#include "chat/jinja_unicode.h"

namespace anvil::jinja {

namespace {

const Value& arg(const CallArgs& args, const char* test) {
  if (args.positional.size() + args.keyword.size() != 1)
    throw TemplateError(std::string(test) + "() takes exactly one argument");
  return args.positional.empty() ? args.keyword[0].second : args.positional[0];
}

void no_args(const CallArgs& args, const char* test) {
  if (!args.positional.empty() || !args.keyword.empty())
    throw TemplateError(std::string(test) + "() takes no arguments");
}

bool t_defined(const Value& v, const CallArgs& a) {
  no_args(a, "defined");
  return !v.is_undefined();
}
bool t_undefined(const Value& v, const CallArgs& a) {
  no_args(a, "undefined");
  return v.is_undefined();
}
bool t_none(const Value& v, const CallArgs& a) {
  no_args(a, "none");
  return v.is_none();
}
bool t_boolean(const Value& v, const CallArgs& a) {
  no_args(a, "boolean");
  return v.is_bool();
}
bool t_true(const Value& v, const CallArgs& a) {
  no_args(a, "true");
  return v.is_bool() && v.as_bool();
}
bool t_false(const Value& v, const CallArgs& a) {
  no_args(a, "false");
  return v.is_bool() && !v.as_bool();
}
bool t_integer(const Value& v, const CallArgs& a) {
  no_args(a, "integer");
  return v.is_int();
}
bool t_float(const Value& v, const CallArgs& a) {
  no_args(a, "float");
  return v.is_float();
}
bool t_number(const Value& v, const CallArgs& a) {
  no_args(a, "number");
  return v.is_number();
}
bool t_string(const Value& v, const CallArgs& a) {
  no_args(a, "string");
  return v.is_string();
}
bool t_mapping(const Value& v, const CallArgs& a) {
  no_args(a, "mapping");
  return v.is_mapping();
}
bool t_iterable(const Value& v, const CallArgs& a) {
  no_args(a, "iterable");
  return v.is_undefined() || v.is_string() || v.is_list() ||
         (v.is_dict() && v.as_dict().kind != DictKind::kNamespace);
}
bool t_sequence(const Value& v, const CallArgs& a) {
  no_args(a, "sequence");
  return v.is_undefined() || v.is_string() || v.is_mapping() ||
         (v.is_list() && v.as_list().kind != ListKind::kIterator &&
          v.as_list().kind != ListKind::kDictKeys && v.as_list().kind != ListKind::kDictItems &&
          v.as_list().kind != ListKind::kDictValues);
}
bool t_callable(const Value& v, const CallArgs& a) {
  no_args(a, "callable");
  return v.is_function() || v.is_undefined() ||
         (v.is_dict() && v.as_dict().kind == DictKind::kLoop);
}
bool t_escaped(const Value& v, const CallArgs& a) {
  no_args(a, "escaped");
  return v.is_markup();  // hasattr(value, "__html__")
}

bool is_one(const Value& v) {
  return equals(v, Value::integer(1));
}
bool is_zero(const Value& v) {
  return equals(v, Value::integer(0));
}

bool t_odd(const Value& v, const CallArgs& a) {
  no_args(a, "odd");
  return is_one(binary_op("%", v, Value::integer(2)));
}
bool t_even(const Value& v, const CallArgs& a) {
  no_args(a, "even");
  return is_zero(binary_op("%", v, Value::integer(2)));
}
bool t_divisibleby(const Value& v, const CallArgs& a) {
  return is_zero(binary_op("%", v, arg(a, "divisibleby")));
}
bool t_eq(const Value& v, const CallArgs& a) {
  return equals(v, arg(a, "eq"));
}
bool t_ne(const Value& v, const CallArgs& a) {
  return !equals(v, arg(a, "ne"));
}
bool t_lt(const Value& v, const CallArgs& a) {
  return compare(v, arg(a, "lt"), "<") < 0;
}
bool t_le(const Value& v, const CallArgs& a) {
  return compare(v, arg(a, "le"), "<=") <= 0;
}
bool t_gt(const Value& v, const CallArgs& a) {
  return compare(v, arg(a, "gt"), ">") > 0;
}
bool t_ge(const Value& v, const CallArgs& a) {
  return compare(v, arg(a, "ge"), ">=") >= 0;
}
bool t_in(const Value& v, const CallArgs& a) {
  return contains(arg(a, "in"), v);
}

bool t_sameas(const Value& v, const CallArgs& a) {
  const Value& other = arg(a, "sameas");
  if (v.kind() != other.kind()) return false;
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return false;
    case Value::Kind::kNone:
      return true;
    case Value::Kind::kBool:
    case Value::Kind::kInt:
    case Value::Kind::kFloat:
    case Value::Kind::kString:
      return equals(v, other);
    default:
      return v.identity() == other.identity();
  }
}

bool cased_test(const Value& v, bool want_upper) {
  bool any = false;
  for (char32_t c : unicode::decode(to_str(v))) {
    if (!unicode::is_cased(c)) continue;
    any = true;
    if (want_upper ? unicode::is_lower(c) : unicode::is_upper(c)) return false;
  }
  return any;
}
bool t_lower(const Value& v, const CallArgs& a) {
  no_args(a, "lower");
  return cased_test(v, false);
}
bool t_upper(const Value& v, const CallArgs& a) {
  no_args(a, "upper");
  return cased_test(v, true);
}
bool t_filter(const Value& v, const CallArgs& a) {
  no_args(a, "filter");
  return v.is_string() && find_filter(v.as_string()) != nullptr;
}
bool t_test(const Value& v, const CallArgs& a) {
  no_args(a, "test");
  return v.is_string() && find_test(v.as_string()) != nullptr;
}

const std::unordered_map<std::string_view, TestFn>& tests() {
  static const std::unordered_map<std::string_view, TestFn> table = {
      {"defined", t_defined},
      {"undefined", t_undefined},
      {"none", t_none},
      {"boolean", t_boolean},
      {"true", t_true},
      {"false", t_false},
      {"integer", t_integer},
      {"float", t_float},
      {"number", t_number},
      {"string", t_string},
      {"mapping", t_mapping},
      {"iterable", t_iterable},
      {"sequence", t_sequence},
      {"callable", t_callable},
      {"escaped", t_escaped},
      {"odd", t_odd},
      {"even", t_even},
      {"divisibleby", t_divisibleby},
      {"eq", t_eq},
      {"equalto", t_eq},
      {"==", t_eq},
      {"ne", t_ne},
      {"!=", t_ne},
      {"lt", t_lt},
      {"lessthan", t_lt},
      {"<", t_lt},
      {"le", t_le},
      {"<=", t_le},
      {"gt", t_gt},
      {"greaterthan", t_gt},
      {">", t_gt},
      {"ge", t_ge},
      {">=", t_ge},
      {"in", t_in},
      {"sameas", t_sameas},
      {"lower", t_lower},
      {"upper", t_upper},
      {"filter", t_filter},
      {"test", t_test},
  };
  return table;
}

}  // namespace

TestFn find_test(std::string_view name) {
  const auto& table = tests();
  const auto it = table.find(name);
  return it == table.end() ? nullptr : it->second;
}

}  // namespace anvil::jinja
