// Each subcommand registers itself on the app; one file per subcommand.
#pragma once

#include <CLI/CLI.hpp>

namespace anvil::cli {

void add_devices(CLI::App& app);
void add_logits(CLI::App& app);
void add_perplexity(CLI::App& app);
void add_embed(CLI::App& app);
void add_generate(CLI::App& app);
void add_init_model(CLI::App& app);
void add_tokenize(CLI::App& app);
void add_detokenize(CLI::App& app);
void add_render_chat(CLI::App& app);
void add_chat(CLI::App& app);
void add_default_model(CLI::App& app);
void add_convert(CLI::App& app);
void add_bench(CLI::App& app);

}  // namespace anvil::cli
