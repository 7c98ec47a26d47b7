// Runs the anvil CLI as a user would: its exit code, stdout and stderr.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "temp_dir.h"
#include "test_data.h"

namespace anvil::test {

struct CliRun {
  int exit_code;
  std::string out, err;
};

/// `anvil ARGS` with stdin from `stdin_path`.
inline CliRun run_cli(const std::string& args, const std::string& stdin_path = "/dev/null") {
  TempDir dir;
  const std::string cmd = cli_path() + " " + args + " >" + dir.file("out") + " 2>" +
                          dir.file("err") + " <" + stdin_path;
  const int status = std::system(cmd.c_str());
  const auto slurp = [](const std::string& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(dir.file("out")),
          slurp(dir.file("err"))};
}

}  // namespace anvil::test
