// Expects a call to throw anvil::Error with a message containing a fragment (and starting with
// `prefix`, where one is given).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "anvil/error.h"

namespace anvil::test {

template <typename Fn>
void expect_error(Fn fn, const std::string& fragment, const std::string& prefix = "") {
  try {
    fn();
    ADD_FAILURE() << "no error; expected one containing: " << fragment;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind(prefix, 0), 0u) << e.what();
  }
}

}  // namespace anvil::test
