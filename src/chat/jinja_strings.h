// Python str operations on UTF-8 strings, counting code points like Python does: strip, split,
// splitlines, title, replace, find, and the two formatting languages ('%' and str.format).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "chat/jinja_value.h"

namespace anvil::jinja::pystr {

/// The longest string a template may build (Python's only limit is memory; a rendered prompt
/// of 256 MiB is far beyond any model's context): the rendered text, `~`, `+`, `*`, join,
/// replace and indent stop there with a TemplateError instead of exhausting memory.
inline constexpr size_t kMaxStringBytes = size_t{1} << 28;
/// The longest list `*` and `+` may build (a Value is some tens of bytes).
inline constexpr size_t kMaxListItems = kMaxStringBytes / 16;
/// out += piece, or a TemplateError saying `what` grew too long.
void append_bounded(std::string& out, std::string_view piece, const char* what);

/// str.strip/lstrip/rstrip; `chars` null means whitespace.
std::string strip(std::string_view s, const std::string* chars, bool left, bool right);
/// str.split / str.rsplit; `sep` null means runs of whitespace; maxsplit < 0 means no limit.
std::vector<std::string> split(std::string_view s, const std::string* sep, int64_t maxsplit);
std::vector<std::string> rsplit(std::string_view s, const std::string* sep, int64_t maxsplit);
std::vector<std::string> splitlines(std::string_view s, bool keepends);
/// str.title, str.capitalize, str.swapcase.
std::string title(std::string_view s);
std::string capitalize(std::string_view s);
std::string swapcase(std::string_view s);
/// jinja2's title filter: upper-cases the first letter after '-', whitespace, '(', '{', '[', '<'.
std::string jinja_title(std::string_view s);
/// str.replace; count < 0 replaces all.
std::string replace(std::string_view s, std::string_view old, std::string_view repl, int64_t count);
/// str.find / str.rfind over the code points [start, end) (Python slice semantics); -1 if absent.
int64_t find(std::string_view s, std::string_view sub, const Value* start, const Value* end,
             bool reverse);
/// str.count (non-overlapping).
int64_t count(std::string_view s, std::string_view sub);
/// Whether every code point satisfies `pred` (false for the empty string), as str.isdigit etc.
bool all_chars(std::string_view s, bool (*pred)(char32_t));
/// str.center / ljust / rjust with a one-character fill.
std::string pad(std::string_view s, int64_t width, char align, std::string_view fill);
/// Python's `fmt % args`: `args` is a tuple of positional values, a dict for %(name)s, or a
/// single value.
std::string percent_format(std::string_view fmt, const Value& args);
/// Python's str.format with positional ({}, {0}) and keyword ({name}) fields and format specs.
std::string brace_format(std::string_view fmt, const CallArgs& args);

}  // namespace anvil::jinja::pystr
