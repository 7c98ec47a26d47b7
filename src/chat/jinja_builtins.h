// The built-in behaviour of Jinja values that the interpreter dispatches to: attribute and item
// access (with Python's str, dict and list methods), slicing, operators, and the registries of
// filters and tests.
#pragma once

#include <string>
#include <string_view>

#include "chat/jinja_value.h"

namespace anvil::jinja {

using FilterFn = Value (*)(const Value& input, const CallArgs& args);
using TestFn = bool (*)(const Value& input, const CallArgs& args);

/// The filter or test of that name, or nullptr.
FilterFn find_filter(std::string_view name);
TestFn find_test(std::string_view name);

/// obj.name with jinja2's sandboxed getattr: a method of str/dict/list first, then the item.
Value get_attr(const Value& obj, const std::string& name);
/// obj[key] with jinja2's getitem: the item first, then (for string keys) a method.
Value get_item(const Value& obj, const Value& key);
/// obj[start:stop:step] on lists, tuples and strings; any bound may be null.
Value slice(const Value& obj, const Value* start, const Value* stop, const Value* step);

/// A binary arithmetic operator: + - * / // % **.
Value binary_op(std::string_view op, const Value& a, const Value& b);
/// Python's `item in container`.
bool contains(const Value& container, const Value& item);
/// Unary minus and plus.
Value negate(const Value& v);

/// Follows a dotted attribute path ("a.b.0") the way jinja2's attribute= arguments do.
Value get_attribute_path(const Value& obj, const Value& path);

}  // namespace anvil::jinja
