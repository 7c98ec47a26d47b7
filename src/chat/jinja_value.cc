// Construction, truthiness, equality, ordering and iteration of Jinja values (jinja_value.h).
#include "chat/jinja_value.h"

#include <algorithm>
#include <cmath>

#include "chat/jinja_error.h"
#include "chat/jinja_unicode.h"

namespace anvil::jinja {

namespace {

void check_depth(int depth) {
  if (depth > kMaxDepth) throw TemplateError("value nested too deeply");
}

}  // namespace

Value Value::undefined(std::string message) {
  Value v;
  v.data_ = std::make_shared<const std::string>(std::move(message));
  return v;
}

Value Value::none() {
  Value v;
  v.kind_ = Kind::kNone;
  return v;
}

Value Value::boolean(bool b) {
  Value v;
  v.kind_ = Kind::kBool;
  v.data_ = b;
  return v;
}

Value Value::integer(int64_t i) {
  Value v;
  v.kind_ = Kind::kInt;
  v.data_ = i;
  return v;
}

Value Value::number(double d) {
  Value v;
  v.kind_ = Kind::kFloat;
  v.data_ = d;
  return v;
}

Value Value::string(std::string s) {
  Value v;
  v.kind_ = Kind::kString;
  v.data_ = std::make_shared<const std::string>(std::move(s));
  return v;
}

Value Value::markup(std::string s) {
  Value v = string(std::move(s));
  v.markup_ = true;
  return v;
}

Value Value::string_like(const Value& like, std::string s) {
  return like.is_markup() ? markup(std::move(s)) : string(std::move(s));
}

Value Value::list(std::vector<Value> items, ListKind kind) {
  auto data = std::make_shared<ListData>();
  data->kind = kind;
  int depth = 0;
  for (const Value& item : items) depth = std::max(depth, depth_of(item));
  data->depth = depth + 1;
  check_depth(data->depth);
  data->items = std::move(items);
  Value v;
  v.kind_ = Kind::kList;
  v.data_ = std::move(data);
  return v;
}

Value Value::dict(std::vector<std::pair<Value, Value>> entries, DictKind kind) {
  auto data = std::make_shared<DictData>();
  data->kind = kind;
  int depth = 0;
  for (const auto& [k, val] : entries) depth = std::max({depth, depth_of(k), depth_of(val)});
  data->depth = depth + 1;
  check_depth(data->depth);
  data->entries = std::move(entries);
  return from_dict(std::move(data));
}

Value Value::from_dict(std::shared_ptr<DictData> d) {
  Value v;
  v.kind_ = Kind::kDict;
  v.data_ = std::move(d);
  return v;
}

Value Value::function(std::string name, NativeFunction fn) {
  Value v;
  v.kind_ = Kind::kFunction;
  v.data_ = std::make_shared<const FunctionData>(FunctionData{std::move(name), std::move(fn)});
  return v;
}

bool Value::is_mapping() const {
  return is_dict() && as_dict().kind == DictKind::kDict;
}

bool Value::is_indexable() const {
  return is_sequence_list() || (is_list() && as_list().kind == ListKind::kRange);
}

bool Value::is_sequence_list() const {
  return is_list() && (as_list().kind == ListKind::kList || as_list().kind == ListKind::kTuple);
}

int64_t Value::as_int() const {
  if (kind_ == Kind::kBool) return as_bool() ? 1 : 0;
  return std::get<int64_t>(data_);
}

double Value::as_double() const {
  if (kind_ == Kind::kFloat) return std::get<double>(data_);
  return static_cast<double>(as_int());
}

std::string Value::undefined_message() const {
  if (const auto* s = std::get_if<StrPtr>(&data_)) return **s;
  return "undefined value";
}

const void* Value::identity() const {
  switch (kind_) {
    case Kind::kList:
      return std::get<std::shared_ptr<ListData>>(data_).get();
    case Kind::kDict:
      return std::get<std::shared_ptr<DictData>>(data_).get();
    case Kind::kFunction:
      return std::get<FnPtr>(data_).get();
    case Kind::kString:
      return std::get<StrPtr>(data_).get();
    default:
      return nullptr;
  }
}

const Value* DictData::find(const Value& key) const {
  if (key.is_string()) return find(std::string_view(key.as_string()));
  for (const auto& [k, v] : entries)
    if (equals(k, key)) return &v;
  return nullptr;
}

const Value* DictData::find(std::string_view key) const {
  for (const auto& [k, v] : entries)
    if (k.is_string() && k.as_string() == key) return &v;
  return nullptr;
}

void DictData::set(Value key, Value value) {
  for (auto& [k, v] : entries) {
    if (equals(k, key)) {
      v = std::move(value);
      return;
    }
  }
  entries.emplace_back(std::move(key), std::move(value));
}

int depth_of(const Value& v) {
  if (v.is_list()) return v.as_list().depth;
  if (v.is_dict()) return v.as_dict().kind == DictKind::kDict ? v.as_dict().depth : 1;
  return 0;
}

bool truthy(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return false;
    case Value::Kind::kBool:
      return v.as_bool();
    case Value::Kind::kInt:
      return v.as_int() != 0;
    case Value::Kind::kFloat:
      return v.as_double() != 0.0;
    case Value::Kind::kString:
      return !v.as_string().empty();
    case Value::Kind::kList:
      return v.as_list().kind == ListKind::kIterator || !v.as_list().items.empty();
    case Value::Kind::kDict:
      return v.as_dict().kind != DictKind::kDict || !v.as_dict().entries.empty();
    case Value::Kind::kFunction:
      return true;
  }
  return false;
}

namespace {

bool equals_at(const Value& a, const Value& b, int depth) {
  if (depth > kMaxDepth + 8) throw TemplateError("value nested too deeply to compare");
  if (a.is_number() && b.is_number()) {
    if (a.is_integral() && b.is_integral()) return a.as_int() == b.as_int();
    return a.as_double() == b.as_double();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return true;
    case Value::Kind::kString:
      return a.as_string() == b.as_string();
    case Value::Kind::kList: {
      const ListData& x = a.as_list();
      const ListData& y = b.as_list();
      if (x.kind == ListKind::kIterator || y.kind == ListKind::kIterator)
        return a.identity() == b.identity();
      if (x.kind != y.kind || x.items.size() != y.items.size()) return false;
      for (size_t i = 0; i < x.items.size(); ++i)
        if (!equals_at(x.items[i], y.items[i], depth + 1)) return false;
      return true;
    }
    case Value::Kind::kDict: {
      const DictData& x = a.as_dict();
      const DictData& y = b.as_dict();
      if (x.kind != DictKind::kDict || y.kind != DictKind::kDict)
        return a.identity() == b.identity();
      if (x.entries.size() != y.entries.size()) return false;
      for (const auto& [k, v] : x.entries) {
        const Value* other = y.find(k);
        if (!other || !equals_at(v, *other, depth + 1)) return false;
      }
      return true;
    }
    default:
      return a.identity() == b.identity();
  }
}

int compare_at(const Value& a, const Value& b, std::string_view op, int depth) {
  if (depth > kMaxDepth + 8) throw TemplateError("value nested too deeply to compare");
  if (a.is_undefined()) throw TemplateError(a.undefined_message());
  if (b.is_undefined()) throw TemplateError(b.undefined_message());
  if (a.is_number() && b.is_number()) {
    if (a.is_integral() && b.is_integral())
      return a.as_int() < b.as_int() ? -1 : (a.as_int() > b.as_int() ? 1 : 0);
    const double x = a.as_double();
    const double y = b.as_double();
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  if (a.is_string() && b.is_string()) {
    const int c = a.as_string().compare(b.as_string());
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  if (a.is_list() && b.is_list() && a.as_list().kind == b.as_list().kind && a.is_sequence_list()) {
    const auto& x = a.as_list().items;
    const auto& y = b.as_list().items;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (equals_at(x[i], y[i], depth + 1)) continue;
      return compare_at(x[i], y[i], op, depth + 1);
    }
    return x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
  }
  throw TemplateError("'" + std::string(op) + "' not supported between instances of '" +
                      type_name(a) + "' and '" + type_name(b) + "'");
}

}  // namespace

bool equals(const Value& a, const Value& b) {
  return equals_at(a, b, 0);
}

int compare(const Value& a, const Value& b, std::string_view op) {
  return compare_at(a, b, op, 0);
}

void check_hashable(const Value& v) {
  if ((v.is_list() && v.as_list().kind == ListKind::kList) || v.is_mapping())
    throw TemplateError("unhashable type: '" + type_name(v) + "'");
  if (v.is_list() && v.as_list().kind == ListKind::kTuple)
    for (const Value& item : v.as_list().items) check_hashable(item);
}

std::string type_name(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return "Undefined";
    case Value::Kind::kNone:
      return "NoneType";
    case Value::Kind::kBool:
      return "bool";
    case Value::Kind::kInt:
      return "int";
    case Value::Kind::kFloat:
      return "float";
    case Value::Kind::kString:
      return v.is_markup() ? "Markup" : "str";
    case Value::Kind::kList:
      switch (v.as_list().kind) {
        case ListKind::kList:
          return "list";
        case ListKind::kTuple:
          return "tuple";
        case ListKind::kRange:
          return "range";
        case ListKind::kIterator:
          return "generator";
        case ListKind::kDictItems:
          return "dict_items";
        case ListKind::kDictKeys:
          return "dict_keys";
        case ListKind::kDictValues:
          return "dict_values";
      }
      return "list";
    case Value::Kind::kDict:
      switch (v.as_dict().kind) {
        case DictKind::kDict:
          return "dict";
        case DictKind::kNamespace:
          return "Namespace";
        case DictKind::kLoop:
          return "LoopContext";
      }
      return "dict";
    case Value::Kind::kFunction:
      return "function";
  }
  return "object";
}

std::string object_description(const Value& v) {
  if (v.is_none()) return "None";
  if (v.is_dict() && v.as_dict().kind == DictKind::kNamespace)
    return "jinja2.utils.Namespace object";
  if (v.is_dict() && v.as_dict().kind == DictKind::kLoop)
    return "jinja2.runtime.LoopContext object";
  return type_name(v) + " object";
}

std::vector<Value> iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return {};
    case Value::Kind::kList:
      return v.as_list().items;
    case Value::Kind::kString: {
      std::vector<Value> out;
      for (char32_t c : unicode::decode(v.as_string())) {
        std::string s;
        unicode::append_utf8(s, c);
        out.push_back(Value::string(std::move(s)));
      }
      return out;
    }
    case Value::Kind::kDict:
      if (v.as_dict().kind == DictKind::kDict) {
        std::vector<Value> out;
        out.reserve(v.as_dict().entries.size());
        for (const auto& entry : v.as_dict().entries) out.push_back(entry.first);
        return out;
      }
      break;
    default:
      break;
  }
  throw TemplateError("'" + type_name(v) + "' object is not iterable");
}

BoundArgs::BoundArgs(std::string_view function, const CallArgs& call,
                     std::vector<std::string_view> params, size_t required)
    : values_(params.size(), nullptr) {
  const std::string fname(function);
  if (call.positional.size() > params.size())
    throw TemplateError(fname + "() takes at most " + std::to_string(params.size()) +
                        " argument(s) (" + std::to_string(call.positional.size()) + " given)");
  for (size_t i = 0; i < call.positional.size(); ++i) values_[i] = &call.positional[i];
  for (const auto& [name, value] : call.keyword) {
    const auto it = std::find(params.begin(), params.end(), name);
    if (it == params.end())
      throw TemplateError(fname + "() got an unexpected keyword argument '" + name + "'");
    const auto i = static_cast<size_t>(it - params.begin());
    if (values_[i])
      throw TemplateError(fname + "() got multiple values for argument '" + name + "'");
    values_[i] = &value;
  }
  for (size_t i = 0; i < required; ++i)
    if (!values_[i])
      throw TemplateError(fname + "() missing required argument '" + std::string(params[i]) + "'");
}

}  // namespace anvil::jinja
