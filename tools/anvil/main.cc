// anvil: the command-line front end. Errors print as one line and exit non-zero.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "anvil/error.h"
#include "commands.h"

int main(int argc, char** argv) {
  CLI::App app{"anvil: run Hugging Face transformer language models natively"};
  app.require_subcommand(1);
  anvil::cli::add_devices(app);
  anvil::cli::add_logits(app);
  anvil::cli::add_perplexity(app);
  anvil::cli::add_embed(app);
  anvil::cli::add_generate(app);
  anvil::cli::add_init_model(app);
  anvil::cli::add_tokenize(app);
  anvil::cli::add_detokenize(app);
  anvil::cli::add_render_chat(app);
  anvil::cli::add_chat(app);
  anvil::cli::add_default_model(app);
  anvil::cli::add_convert(app);
  anvil::cli::add_bench(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const anvil::Error& e) {
    std::fprintf(stderr, "anvil: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "anvil: internal error: %s\n", e.what());
    return 3;
  }
  return 0;
}
