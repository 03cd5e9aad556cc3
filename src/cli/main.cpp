// kiln — command line front end of the runtime: one file per verb (verbs.hpp); this file
// registers them, runs the one asked for and maps errors to exit codes. Every verb takes --json.
// Exit codes: 0 ok, 1 other, 2 usage/bad name, 3 not found, 4 incompatible, 5 plugin ABI,
// 6 integrity/corrupt, 7 build failed (docs/cli.md "Exit codes").
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <kiln/errors.hpp>
#include <kiln/version.hpp>

#include "completion.hpp"
#include "man_page.hpp"
#include "reference.hpp"
#include "report_json.hpp"
#include "unknown_words.hpp"
#include "verbs.hpp"

namespace {

using nlohmann::json;

// Whether --json was asked for, before parsing succeeded: a usage error is then a JSON error
// object too (CLI11 stops at the first bad argument, possibly before it saw --json).
bool json_asked(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--") break;
    if (std::string(argv[i]) == "--json") return true;
  }
  return false;
}

// `kiln --version --json`: CLI11 answers --version as soon as it reads it, before --json.
bool version_asked(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word == "--version") return true;
    if (word.empty() || word[0] != '-' || word == "--") return false;  // a verb's own arguments
  }
  return false;
}

}  // namespace

int main(int argc, char **argv) {
  CLI::App app{"kiln: resolve, check, load and build GPU solver plugins"};
  app.require_subcommand(1);
  kiln::cli::Flags flags;
  app.add_flag("--json", flags.json, "machine-readable output on stdout");
  app.add_flag("-v,--verbose", flags.verbose, "log more (repeat for debug)");
  app.set_version_flag("--version", std::string("kiln ") + kiln::kVersion);
  app.footer(kiln::cli::help_footer());

  const std::vector<kiln::cli::Verb> verbs = {
      kiln::cli::add_doctor(app, flags), kiln::cli::add_publish(app, flags), kiln::cli::add_load(app, flags),
      kiln::cli::add_ls(app, flags),     kiln::cli::add_show(app, flags),    kiln::cli::add_build(app, flags),
      kiln::cli::add_ensure(app, flags), kiln::cli::add_swap(app, flags),    kiln::cli::add_verify(app, flags),
      kiln::cli::add_gc(app, flags),     kiln::cli::add_keygen(app, flags),  kiln::cli::add_key(app, flags),
      kiln::cli::add_export(app, flags),
      kiln::cli::add_import(app, flags), kiln::cli::add_remote(app, flags),
      kiln::cli::add_robot(app, flags)};
  for (const auto &verb : verbs) {
    verb.command->add_flag("--json", flags.json, "machine-readable output on stdout");
    verb.command->add_flag("-v,--verbose", flags.verbose, "log more (repeat for debug)");
    verb.command->footer(kiln::cli::example_footer(verb.command->get_name()));
  }
  // Written from the verbs and options above, so they cannot drift from them.
  std::string shell;
  CLI::App *completion = app.add_subcommand("completion", "print the shell completion script (bash)");
  completion->add_option("shell", shell, "the shell: bash")->required()->check(CLI::IsMember({"bash"}));
  completion->footer(kiln::cli::example_footer("completion"));
  CLI::App *man = app.add_subcommand("man", "print the kiln(1) man page (roff)")->group("");

  if (version_asked(argc, argv) && json_asked(argc, argv)) {
    std::cout << kiln::cli::json_text(kiln::cli::version_json());
    return 0;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &error) {
    if (error.get_exit_code() != 0) {
      const auto unknown = kiln::cli::unknown_word(app, argc, argv);
      const kiln::UsageError usage((unknown ? *unknown : std::string(error.what())) +
                                   " (kiln --help lists the verbs and options)");
      if (json_asked(argc, argv)) std::cout << kiln::cli::json_text(json{{"error", kiln::cli::error_json(usage)}});
      if (unknown) {  // said whole, with its suggestion; CLI11's own words otherwise
        std::fprintf(stderr, "kiln: error: %s\n", usage.what());
        return 2;
      }
    }
    const int code = app.exit(error);
    return code == 0 ? 0 : 2;
  }

  if (*completion) {
    std::cout << kiln::cli::bash_completion(app);
    return 0;
  }
  if (*man) {
    std::cout << kiln::cli::man_page(app);
    return 0;
  }
  try {
    for (const auto &verb : verbs) {
      if (*verb.command) return verb.run();
    }
  } catch (const std::exception &error) {
    const json details = kiln::cli::error_json(error);
    if (flags.json) std::cout << kiln::cli::json_text(json{{"error", details}});
    std::fprintf(stderr, "kiln: error: %s\n", error.what());
    return details["exit_code"].get<int>();
  } catch (...) {
    const std::runtime_error unknown("an exception of unknown type");
    if (flags.json) std::cout << kiln::cli::json_text(json{{"error", kiln::cli::error_json(unknown)}});
    std::fprintf(stderr, "kiln: error: %s\n", unknown.what());
    return 1;
  }
  return 1;
}
