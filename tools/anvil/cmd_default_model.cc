// `anvil default-model`: where the default model lives, fetching and verifying it first.
#include <cstdio>

#include "commands.h"
#include "formats/default_model.h"

namespace anvil::cli {

void add_default_model(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "default-model",
      "print the path of the default model (SmolLM2-135M-Instruct Q4_1), fetching it into "
      "$ANVIL_CACHE or ~/.cache/anvil first if it is missing or corrupt");
  cmd->callback([] { std::printf("%s\n", ensure_default_model().c_str()); });
}

}  // namespace anvil::cli
