// anvil::Error's message is printable text whatever bytes it quotes: valid UTF-8 passes
// through, every other byte and control character comes out as \xNN.
#include <gtest/gtest.h>

#include <string>

#include "anvil/error.h"

namespace anvil {
namespace {

TEST(ErrorMessage, ValidUtf8PassesThrough) {
  const std::string text = "model.safetensors: tensor \"é😀中\" has dtype F64\n\tsecond line";
  EXPECT_EQ(Error(text).what(), text);
}

TEST(ErrorMessage, InvalidBytesAndControlCharactersAreEscaped) {
  // A lone continuation byte, a truncated sequence, an overlong '/', a surrogate, NUL, ESC, CR.
  const std::string text = std::string("a\x80z \xE4\xB8 \xC0\xAF \xED\xA0\x80 ") + '\0' + "\x1B\r.";
  EXPECT_EQ(std::string(Error(text).what()),
            "a\\x80z \\xE4\\xB8 \\xC0\\xAF \\xED\\xA0\\x80 \\x00\\x1B\\x0D.");
}

TEST(ErrorMessage, EscapedTextIsKeptAsItIs) {
  EXPECT_EQ(std::string(Error("already \\x41 escaped").what()), "already \\x41 escaped");
  EXPECT_EQ(printable_message(""), "");
}

}  // namespace
}  // namespace anvil
