// PCRE2 wrapper: compile once with JIT, match with a per-thread match-data block.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/regex.h"

#include <pcre2.h>

#include <string>
#include <vector>

#include "anvil/error.h"
#include "tokenizer/unicode_additions.h"
#include "tokenizer/utf8.h"

namespace anvil {

struct Regex::Impl {
  pcre2_code* code = nullptr;
  bool jit = false;
};

namespace {

// Oniguruma's Unicode \w (what tokenizers' patterns are written for) is Unicode's word class:
// Alphabetic | Mark | Decimal_Number | Connector_Punctuation | Join_Control; PCRE2 10.42's is
// Letter | Number | '_'. Rewrite \w and \W so patterns mean what their authors tested. And
// where PCRE2's Unicode tables are older than tokenizers' (16.0), add the code points assigned
// since to \d, \w and each general-category property (unicode_additions.h): \p{X} outside a
// class becomes [\p{X}...], \P{X} [^\p{X}...]; inside a class the additions of its members go
// in once, before its end (a \P{X} inside a class stays as written).
std::string translate_classes(const std::string& p) {
  static const std::string kWord = "\\p{L}\\p{Nl}\\p{M}\\p{Nd}\\p{Pc}\\x{200C}\\x{200D}";
  const bool add = unicode::pcre2_tables_older_than_16();
  std::string out;
  bool in_class = false;
  std::vector<std::string> class_names;  // the categories the current class names
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char n = p[i + 1];
      if (n == 'w' || (n == 'W' && !in_class)) {
        static const std::vector<std::string> kWordCategories = {"L", "Nl", "M", "Nd", "Pc"};
        if (in_class) {
          out += kWord;
          class_names.insert(class_names.end(), kWordCategories.begin(), kWordCategories.end());
        } else {
          const std::string extra = add ? unicode::added_members(kWordCategories) : "";
          out += (n == 'w' ? "[" : "[^") + kWord + extra + "]";
        }
      } else if ((n == 'd' || (n == 'D' && !in_class)) && add) {
        // Oniguruma's Unicode \d is \p{Nd}, as PCRE2's with UCP: only the additions differ.
        if (in_class) {
          out += "\\d";
          class_names.push_back("Nd");
        } else {
          out +=
              std::string(n == 'd' ? "[" : "[^") + "\\p{Nd}" + unicode::added_members({"Nd"}) + "]";
        }
      } else if ((n == 'p' || n == 'P') && add) {
        // \pX or \p{Name}
        std::string name;
        size_t end = i + 2;
        if (end < p.size() && p[end] == '{') {
          const size_t close = p.find('}', end);
          if (close != std::string::npos) {
            name = p.substr(end + 1, close - end - 1);
            end = close + 1;
          }
        } else if (end < p.size()) {
          name = p.substr(end, 1);
          end += 1;
        }
        const std::string escape = p.substr(i, end - i);
        const bool category = unicode::is_category_name(name);
        const std::string extra = category && !in_class ? unicode::added_members({name}) : "";
        if (!extra.empty()) {
          out += (n == 'p' ? "[" : "[^") + ("\\p{" + name + "}") + extra + "]";
        } else {
          out += escape;
          if (category && in_class && n == 'p') class_names.push_back(name);
        }
        i = end - 2;
      } else {
        out += c;
        out += n;
      }
      ++i;
      continue;
    }
    if (c == '[' && !in_class) {
      in_class = true;
      class_names.clear();
      out += c;
      // A ']' right after '[' or '[^' is a literal member, not the end of the class.
      if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
      if (i + 1 < p.size() && p[i + 1] == ']') out += p[++i];
      continue;
    }
    if (c == ']' && in_class) {
      in_class = false;
      if (add && !class_names.empty()) out += unicode::added_members(class_names);
    }
    out += c;
  }
  return out;
}

}  // namespace

Regex::Regex(const std::string& original, const std::string& source) : impl_(new Impl) {
  int err = 0;
  PCRE2_SIZE offset = 0;
  const std::string pattern = translate_classes(original);
  impl_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                              PCRE2_UTF | PCRE2_UCP, &err, &offset, nullptr);
  if (!impl_->code) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    throw Error(source + ": invalid regex '" + original + "' at offset " + std::to_string(offset) +
                ": " + reinterpret_cast<const char*>(msg));
  }
  impl_->jit = pcre2_jit_compile(impl_->code, PCRE2_JIT_COMPLETE) == 0;
}

Regex::~Regex() {
  if (impl_ && impl_->code) pcre2_code_free(impl_->code);
}

std::vector<std::pair<size_t, size_t>> Regex::find_all(std::string_view text) const {
  struct MatchData {
    pcre2_match_data* md = pcre2_match_data_create(16, nullptr);
    ~MatchData() { pcre2_match_data_free(md); }
  };
  thread_local MatchData data;
  std::vector<std::pair<size_t, size_t>> out;
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t start = 0;
  while (start <= text.size()) {
    // The text was validated once by the caller; skip PCRE2's per-call UTF check.
    const int rc = impl_->jit ? pcre2_jit_match(impl_->code, subject, text.size(), start,
                                                PCRE2_NO_UTF_CHECK, data.md, nullptr)
                              : pcre2_match(impl_->code, subject, text.size(), start,
                                            PCRE2_NO_UTF_CHECK, data.md, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(rc, msg, sizeof msg);
      throw Error(std::string("regex match failed: ") + reinterpret_cast<const char*>(msg));
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(data.md);
    const size_t b = ov[0], e = ov[1];
    out.emplace_back(b, e);
    if (e > b) {
      start = e;
    } else {
      if (e >= text.size()) break;
      start = e + utf8::seq_len(static_cast<unsigned char>(text[e]));
    }
  }
  return out;
}

std::string regex_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (std::string_view("\\^$.|?*+()[]{}-/#").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

}  // namespace anvil
