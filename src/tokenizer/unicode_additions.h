// The characters Unicode 15.0-16.0 assigned, which Debian 12's PCRE2 (10.42, Unicode 14.0
// tables) leaves unassigned, while Hugging Face tokenizers' regexes (0.23: Unicode 16.0)
// classify them: a CJK Extension H/I ideograph or a letter of a script added since is a letter
// (\p{L}) to tokenizers' pre-tokenizer regexes, and was punctuation-like to anvil's, which
// split text around it differently. regex.cc adds them to the patterns' classes.
#pragma once

#include <string>
#include <vector>

namespace anvil::unicode {

/// Whether the linked PCRE2's Unicode tables are older than 16.0 (Debian 12's: 14.0), so that
/// patterns need the additions below.
bool pcre2_tables_older_than_16();

/// Whether `name` is a general category: one letter (L, M, N, P, S, Z, C) or two (Lu, Nd...).
bool is_category_name(const std::string& name);

/// The code points added since Unicode 14.0 to the categories `names` (a one-letter name takes
/// its two-letter ones) as class members, \x{first}-\x{last}..., adjacent ranges merged: a
/// class tries its members in turn, so every range costs each character the class rejects.
std::string added_members(const std::vector<std::string>& names);

}  // namespace anvil::unicode
