// Error messages as printable text: valid UTF-8 (checked by utf8proc, which the tokenizer
// already uses) passes through, anything else is escaped byte by byte.
#include "anvil/error.h"

#include <utf8proc.h>

#include <cstdio>

namespace anvil {

std::string printable_message(const std::string& message) {
  std::string out;
  out.reserve(message.size());
  const auto* bytes = reinterpret_cast<const utf8proc_uint8_t*>(message.data());
  const auto n = static_cast<utf8proc_ssize_t>(message.size());
  for (utf8proc_ssize_t at = 0; at < n;) {
    utf8proc_int32_t code = 0;
    const utf8proc_ssize_t len = utf8proc_iterate(bytes + at, n - at, &code);
    const bool control = len == 1 && (code < 0x20 || code == 0x7f) && code != '\n' && code != '\t';
    if (len > 0 && !control) {
      out.append(message, static_cast<size_t>(at), static_cast<size_t>(len));
      at += len;
      continue;
    }
    char escaped[5];
    std::snprintf(escaped, sizeof escaped, "\\x%02X", static_cast<unsigned>(bytes[at]));
    out += escaped;
    ++at;
  }
  return out;
}

}  // namespace anvil
