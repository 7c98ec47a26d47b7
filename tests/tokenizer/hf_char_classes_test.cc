// Hugging Face tokenizers classifies punctuation, digits, combining marks and word characters
// and lowercases by tables of its own, none of them the Unicode version of utf8proc: the
// Punctuation and BERT pre-tokenizers, Digits, StripAccents, Lowercase and single_word added
// tokens must split, strip and map exactly where tokenizers 0.23 does (the expected values below
// were asked of it, as tools/hf_char_classes.py asks).
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

TEST(HfCharClasses, WordCharsAreRegexWordOnes) {
  EXPECT_TRUE(utf8::is_word_char(U'_'));
  EXPECT_TRUE(utf8::is_word_char(U'a'));
  EXPECT_TRUE(utf8::is_word_char(U'9'));
  EXPECT_TRUE(utf8::is_word_char(U'\u0301'));      // a combining mark is part of a word
  EXPECT_TRUE(utf8::is_word_char(U'\u0903'));      // Devanagari visarga (Mc)
  EXPECT_TRUE(utf8::is_word_char(U'\u200d'));      // zero-width joiner (Join_Control)
  EXPECT_TRUE(utf8::is_word_char(U'\u2160'));      // Roman numeral one (Nl)
  EXPECT_TRUE(utf8::is_word_char(U'\u203f'));      // undertie (Pc)
  EXPECT_TRUE(utf8::is_word_char(U'\U00010d40'));  // Garay digit zero, Unicode 16.0
  EXPECT_FALSE(utf8::is_word_char(U'\u00b2'));     // superscript two (No): not \w
  EXPECT_FALSE(utf8::is_word_char(U'\u00bd'));
  EXPECT_FALSE(utf8::is_word_char(U'-'));
  EXPECT_FALSE(utf8::is_word_char(U' '));
}

TEST(HfCharClasses, LowercaseIsRustsToLowercaseCharByChar) {
  EXPECT_EQ(utf8::lowercase("ABC\u00c9"), "abc\u00e9");
  EXPECT_EQ(utf8::lowercase("\U00010d56"), "\U00010d76");      // Garay, Unicode 16.0
  EXPECT_EQ(utf8::lowercase("\u1c89"), "\u1c8a");              // Cyrillic TJE, Unicode 16.0
  EXPECT_EQ(utf8::lowercase("\ua7cb"), "\u0264");              // Unicode 16.0
  EXPECT_EQ(utf8::lowercase("\u0130"), "i\u0307");             // the one multi-character mapping
  EXPECT_EQ(utf8::lowercase("\u212a"), "k");                   // Kelvin sign
  EXPECT_EQ(utf8::lowercase("\u01c5"), "\u01c6");              // a title-case digraph
  EXPECT_EQ(utf8::lowercase("\u0391\u03a3"), "\u03b1\u03c3");  // no final sigma
  EXPECT_EQ(utf8::lowercase("\u0100\u0102\u0101"), "\u0101\u0103\u0101");  // a stride-2 run
  EXPECT_EQ(utf8::lowercase("\U0001e900 \u4e2d"), "\U0001e922 \u4e2d");
}

TEST(HfCharClasses, NormalizationLeavesWhatTokenizersTablesLack) {
  using utf8::NormalForm;
  EXPECT_EQ(utf8::normalize("\u32ff", NormalForm::nfkc), "\u32ff");  // Unicode 12.1 square era name
  EXPECT_EQ(utf8::normalize("\ua7f2", NormalForm::nfkd), "\ua7f2");  // Unicode 14.0
  EXPECT_EQ(utf8::normalize("\U00011938", NormalForm::nfd), "\U00011938");
  // Dives Akuru's canonical pair stays two characters.
  EXPECT_EQ(utf8::normalize("\U00011935\U00011930", NormalForm::nfc), "\U00011935\U00011930");
  // U+07FD (class 220) is no mark to tokenizers: no reordering around it; U+0316 (220) is.
  EXPECT_EQ(utf8::normalize("a\u0345\u07fd", NormalForm::nfd), "a\u0345\u07fd");
  EXPECT_EQ(utf8::normalize("a\u0345\u0316", NormalForm::nfd), "a\u0316\u0345");
  // Known characters around an unknown one still normalize.
  EXPECT_EQ(utf8::normalize("x\u0345\u07fd\u0316e\u0301\ufb01", NormalForm::nfkc),
            "x\u0345\u07fd\u0316\u00e9fi");
}

}  // namespace
}  // namespace anvil
