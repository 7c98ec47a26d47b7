// Hugging Face tokenizers classifies punctuation, digits and combining marks by tables of its
// own, none of them the Unicode version of utf8proc: the Punctuation and BERT pre-tokenizers,
// Digits and StripAccents must split and strip exactly where tokenizers 0.23 does (the expected
// values below were asked of it, as tools/hf_char_classes.py asks).
#include <gtest/gtest.h>

#include "tokenizer/utf8.h"

namespace anvil {
namespace {

TEST(HfCharClasses, PunctuationIsUnicode8s) {
  EXPECT_TRUE(utf8::is_punctuation(U'!'));
  EXPECT_TRUE(utf8::is_punctuation(U'\u00a1'));  // ¡
  EXPECT_TRUE(utf8::is_punctuation(U'\u2e42'));  // Unicode 8.0
  EXPECT_TRUE(utf8::is_punctuation(U'\U0001da87'));
  EXPECT_FALSE(utf8::is_punctuation(U'\u09fd'));  // Bengali abbreviation sign, Unicode 10.0
  EXPECT_FALSE(utf8::is_punctuation(U'\u2e43'));  // Unicode 9.0
  EXPECT_FALSE(utf8::is_punctuation(U'\U00011a3f'));
  EXPECT_TRUE(utf8::is_punctuation(U'\u166d'));  // a symbol since Unicode 12.0, punctuation in 8.0
  EXPECT_FALSE(utf8::is_punctuation(U'a'));
  EXPECT_FALSE(utf8::is_punctuation(U'\u00e9'));
}

TEST(HfCharClasses, DigitsAreRustsNumericOnes) {
  EXPECT_TRUE(utf8::is_digit(U'7'));
  EXPECT_TRUE(utf8::is_digit(U'\u0663'));      // Arabic-Indic three
  EXPECT_TRUE(utf8::is_digit(U'\u00bd'));      // ½ (No)
  EXPECT_TRUE(utf8::is_digit(U'\U00010d40'));  // Garay digit zero, Unicode 16.0
  EXPECT_FALSE(utf8::is_digit(U'a'));
  EXPECT_FALSE(utf8::is_digit(U'\u2e42'));
}

TEST(HfCharClasses, CombiningMarksAreWhatStripAccentsRemoves) {
  EXPECT_TRUE(utf8::is_combining_mark(U'\u0301'));  // combining acute
  EXPECT_TRUE(
      utf8::is_combining_mark(U'\u1cf2'));  // tokenizers strips it; a letter (Lo) in Unicode 15.0
  EXPECT_FALSE(utf8::is_combining_mark(U'\u07fd'));  // NKo dantayalan, Unicode 11.0
  EXPECT_FALSE(utf8::is_combining_mark(U'e'));
}

}  // namespace
}  // namespace anvil
