// Python's arithmetic operators and `in` on Jinja values: int arithmetic stays int (with floor
// division and modulo taking the sign of the divisor), '/' gives float, '+' and '*' also work on
// strings and lists, and str % args formats.
#include <cmath>

#include "chat/jinja_builtins.h"
#include "chat/jinja_error.h"
#include "chat/jinja_strings.h"

namespace anvil::jinja {

namespace {

[[noreturn]] void unsupported(std::string_view op, const Value& a, const Value& b) {
  throw TemplateError("unsupported operand type(s) for " + std::string(op) + ": '" + type_name(a) +
                      "' and '" + type_name(b) + "'");
}

[[noreturn]] void overflow() {
  throw TemplateError("integer overflow");
}

Value repeat(const Value& seq, int64_t times) {
  if (times < 0) times = 0;
  if (seq.is_string()) {
    const auto size = static_cast<int64_t>(seq.as_string().size());
    if (size && times > static_cast<int64_t>(pystr::kMaxStringBytes) / size)
      throw TemplateError("repeated string too long");
    std::string out;
    out.reserve(static_cast<size_t>(size * times));
    for (int64_t i = 0; i < times; ++i) out += seq.as_string();
    return Value::string_like(seq, std::move(out));
  }
  const auto& items = seq.as_list().items;
  const auto size = static_cast<int64_t>(items.size());
  if (size && times > static_cast<int64_t>(pystr::kMaxListItems) / size)
    throw TemplateError("repeated list too long");
  std::vector<Value> out;
  for (int64_t i = 0; i < times; ++i) out.insert(out.end(), items.begin(), items.end());
  return Value::list(std::move(out), seq.as_list().kind);
}

// The arguments of Markup % args as markupsafe's _MarkupEscapeHelper formats them: the strings
// of a tuple, the values of a mapping, or the single argument escaped.
Value escape_format_args(const Value& args) {
  // str() of a number or None has nothing to escape (and %d needs the number).
  auto esc = [](const Value& v) {
    return v.is_number() || v.is_none() || v.is_undefined() ? v : escape(v);
  };
  if (args.is_list() && args.as_list().kind == ListKind::kTuple) {
    std::vector<Value> items;
    for (const Value& item : args.as_list().items) items.push_back(esc(item));
    return Value::list(std::move(items), ListKind::kTuple);
  }
  if (args.is_mapping()) {
    std::vector<std::pair<Value, Value>> entries;
    for (const auto& [k, v] : args.as_dict().entries) entries.emplace_back(k, esc(v));
    return Value::dict(std::move(entries));
  }
  return esc(args);
}

Value percent(const Value& format, const Value& args) {
  if (format.is_markup())
    return Value::markup(pystr::percent_format(format.as_string(), escape_format_args(args)));
  return Value::string(pystr::percent_format(format.as_string(), args));
}

Value int_pow(int64_t base, int64_t exp) {
  int64_t result = 1;
  while (exp > 0) {
    if (exp & 1) {
      if (__builtin_mul_overflow(result, base, &result)) overflow();
    }
    exp >>= 1;
    if (exp > 0 && __builtin_mul_overflow(base, base, &base)) overflow();
  }
  return Value::integer(result);
}

}  // namespace

Value binary_op(std::string_view op, const Value& a, const Value& b) {
  if (a.is_undefined()) throw TemplateError(a.undefined_message());
  // str % undefined formats like Python does with any object that supports [].
  if (op == "%" && a.is_string()) return percent(a, b);
  if (b.is_undefined()) throw TemplateError(b.undefined_message());
  const bool nums = a.is_number() && b.is_number();
  const bool ints = a.is_integral() && b.is_integral();
  if (op == "+") {
    if (ints) {
      int64_t r;
      if (__builtin_add_overflow(a.as_int(), b.as_int(), &r)) overflow();
      return Value::integer(r);
    }
    if (nums) return Value::number(a.as_double() + b.as_double());
    if (a.is_string() && b.is_string()) {
      // Markup's __add__ and __radd__ escape a plain str operand; the sum is Markup.
      const bool markup = a.is_markup() || b.is_markup();
      std::string out = markup && !a.is_markup() ? html_escape(a.as_string()) : a.as_string();
      pystr::append_bounded(out,
                            markup && !b.is_markup() ? html_escape(b.as_string()) : b.as_string(),
                            "a string built by +");
      return markup ? Value::markup(std::move(out)) : Value::string(std::move(out));
    }
    if (a.is_sequence_list() && b.is_list() && a.as_list().kind == b.as_list().kind) {
      if (a.as_list().items.size() + b.as_list().items.size() > pystr::kMaxListItems)
        throw TemplateError("a list built by + longer than " +
                            std::to_string(pystr::kMaxListItems) + " items");
      std::vector<Value> items = a.as_list().items;
      items.insert(items.end(), b.as_list().items.begin(), b.as_list().items.end());
      return Value::list(std::move(items), a.as_list().kind);
    }
    if (a.is_markup()) unsupported(op, a, b);  // Markup.__add__ returns NotImplemented
    if (a.is_string() || a.is_sequence_list())
      throw TemplateError("can only concatenate " + type_name(a) + " (not \"" + type_name(b) +
                          "\") to " + type_name(a));
    unsupported(op, a, b);
  }
  if (op == "-") {
    if (ints) {
      int64_t r;
      if (__builtin_sub_overflow(a.as_int(), b.as_int(), &r)) overflow();
      return Value::integer(r);
    }
    if (nums) return Value::number(a.as_double() - b.as_double());
    unsupported(op, a, b);
  }
  if (op == "*") {
    if (ints) {
      int64_t r;
      if (__builtin_mul_overflow(a.as_int(), b.as_int(), &r)) overflow();
      return Value::integer(r);
    }
    if (nums) return Value::number(a.as_double() * b.as_double());
    if ((a.is_string() || a.is_sequence_list()) && b.is_integral()) return repeat(a, b.as_int());
    if ((b.is_string() || b.is_sequence_list()) && a.is_integral()) return repeat(b, a.as_int());
    if (a.is_string() || b.is_string() || a.is_sequence_list() || b.is_sequence_list())
      throw TemplateError("can't multiply sequence by non-int of type '" +
                          type_name(a.is_string() || a.is_sequence_list() ? b : a) + "'");
    unsupported(op, a, b);
  }
  if (op == "/") {
    if (!nums) unsupported(op, a, b);
    if (b.as_double() == 0.0) throw TemplateError("division by zero");
    return Value::number(a.as_double() / b.as_double());
  }
  if (op == "//") {
    if (!nums) unsupported(op, a, b);
    if (ints) {
      const int64_t x = a.as_int();
      const int64_t y = b.as_int();
      if (y == 0) throw TemplateError("integer division or modulo by zero");
      if (x == INT64_MIN && y == -1) overflow();
      int64_t q = x / y;
      if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
      return Value::integer(q);
    }
    if (b.as_double() == 0.0) throw TemplateError("float floor division by zero");
    const double x = a.as_double();
    const double y = b.as_double();
    double mod = std::fmod(x, y);
    double div = (x - mod) / y;
    if (mod != 0.0 && ((y < 0) != (mod < 0))) div -= 1.0;
    double floordiv = std::floor(div);
    if (div - floordiv > 0.5) floordiv += 1.0;
    if (div == 0.0) floordiv = std::copysign(0.0, x / y);
    return Value::number(floordiv);
  }
  if (op == "%") {
    if (a.is_string()) return percent(a, b);
    if (!nums) unsupported(op, a, b);
    if (ints) {
      const int64_t x = a.as_int();
      const int64_t y = b.as_int();
      if (y == 0) throw TemplateError("integer division or modulo by zero");
      if (y == -1) return Value::integer(0);
      int64_t m = x % y;
      if (m != 0 && ((m < 0) != (y < 0))) m += y;
      return Value::integer(m);
    }
    const double y = b.as_double();
    if (y == 0.0) throw TemplateError("float modulo");
    double m = std::fmod(a.as_double(), y);
    if (m != 0.0) {
      if ((m < 0) != (y < 0)) m += y;
    } else {
      m = std::copysign(0.0, y);
    }
    return Value::number(m);
  }
  if (op == "**") {
    if (!nums) unsupported(op, a, b);
    if (ints && b.as_int() >= 0) return int_pow(a.as_int(), b.as_int());
    if (a.as_double() == 0.0 && b.as_double() < 0)
      throw TemplateError("0.0 cannot be raised to a negative power");
    const double r = std::pow(a.as_double(), b.as_double());
    if (std::isinf(r) && std::isfinite(a.as_double()) && std::isfinite(b.as_double()))
      throw TemplateError("(34, 'Numerical result out of range')");
    return Value::number(r);
  }
  throw TemplateError("unknown operator " + std::string(op));
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::kUndefined:
      return false;
    case Value::Kind::kString:
      if (!item.is_string())
        throw TemplateError("'in <string>' requires string as left operand, not " +
                            type_name(item));
      return container.as_string().find(item.as_string()) != std::string::npos;
    case Value::Kind::kList:
      for (const Value& v : container.as_list().items)
        if (equals(v, item)) return true;
      return false;
    case Value::Kind::kDict:
      if (container.is_mapping()) {
        check_hashable(item);
        return container.as_dict().find(item) != nullptr;
      }
      break;
    default:
      break;
  }
  throw TemplateError("argument of type '" + type_name(container) + "' is not iterable");
}

Value negate(const Value& v) {
  if (v.is_undefined()) throw TemplateError(v.undefined_message());
  if (v.is_integral()) {
    if (v.as_int() == INT64_MIN) overflow();
    return Value::integer(-v.as_int());
  }
  if (v.is_float()) return Value::number(-v.as_double());
  throw TemplateError("bad operand type for unary -: '" + type_name(v) + "'");
}

}  // namespace anvil::jinja
