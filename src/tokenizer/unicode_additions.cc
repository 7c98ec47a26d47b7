#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/unicode_additions.h"

#include <pcre2.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

namespace anvil::unicode {
namespace {

struct Addition {
  char32_t first, last;
  const char* category;
};

constexpr Addition kAdditions[] = {
#include "tokenizer/unicode_additions.inc"
};

}  // namespace

bool pcre2_tables_older_than_16() {
  static const bool older = [] {
    char version[64] = {};
    if (pcre2_config(PCRE2_CONFIG_UNICODE_VERSION, version) < 0) return true;
    return std::atoi(version) < 16;
  }();
  return older;
}

bool is_category_name(const std::string& name) {
  static const char* const kNames[] = {"L",  "M",  "N",  "P",  "S",  "Z",  "C",  "Lu", "Ll",
                                       "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No",
                                       "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Sm", "Sc",
                                       "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Co", "Cs"};
  return std::any_of(std::begin(kNames), std::end(kNames),
                     [&](const char* n) { return name == n; });
}

std::string added_members(const std::vector<std::string>& names) {
  std::vector<std::pair<char32_t, char32_t>> ranges;
  for (const Addition& a : kAdditions) {
    const bool wanted = std::any_of(names.begin(), names.end(), [&](const std::string& n) {
      return std::strncmp(a.category, n.c_str(), n.size()) == 0;
    });
    if (!wanted) continue;
    if (!ranges.empty() && ranges.back().second + 1 == a.first) {
      ranges.back().second = a.last;
    } else {
      ranges.emplace_back(a.first, a.last);
    }
  }
  std::string out;
  for (const auto& [first, last] : ranges) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "\\x{%X}-\\x{%X}", static_cast<unsigned>(first),
                  static_cast<unsigned>(last));
    out += buf;
  }
  return out;
}

}  // namespace anvil::unicode
