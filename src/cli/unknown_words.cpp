#include "unknown_words.hpp"

#include <vector>

#include "suggest.hpp"

namespace kiln::cli {
namespace {

std::string path_of(const CLI::App &command) {
  std::string path;
  for (const CLI::App *at = &command; at != nullptr && at->get_parent() != nullptr; at = at->get_parent()) {
    path = at->get_name() + (path.empty() ? "" : " " + path);
  }
  return path;
}

std::string where(const CLI::App &app, const CLI::App &command) {
  return &command == &app ? "" : " for 'kiln " + path_of(command) + "'";
}

// The option `name` ("--arch", "-v") of the command or of a command it belongs to.
const CLI::Option *known_option(const CLI::App &command, const std::string &name) {
  for (const CLI::App *at = &command; at != nullptr; at = at->get_parent()) {
    if (const CLI::Option *option = at->get_option_no_throw(name)) return option;
  }
  return nullptr;
}

const CLI::App *subcommand(const CLI::App &command, const std::string &name) {
  for (const CLI::App *sub : command.get_subcommands([](const CLI::App *) { return true; })) {
    if (sub->get_name() == name) return sub;
  }
  return nullptr;
}

// "unknown option '--arhc' for 'kiln publish'; did you mean '--arch'?"
std::string said(const std::string &what, const std::string &word, const std::string &where,
                 const std::optional<std::string> &near) {
  return "unknown " + what + " '" + word + "'" + where + (near ? "; did you mean '" + *near + "'?" : std::string());
}

}  // namespace

std::vector<std::string> verb_names(const CLI::App &command) {
  std::vector<std::string> names;
  for (const CLI::App *sub : command.get_subcommands([](const CLI::App *) { return true; })) {
    if (!sub->get_group().empty()) names.push_back(sub->get_name());  // an empty group: hidden
  }
  return names;
}

std::vector<std::string> option_names(const CLI::App &command) {
  std::vector<std::string> names;
  for (const CLI::App *at = &command; at != nullptr; at = at->get_parent()) {
    for (const CLI::Option *option : at->get_options()) {
      if (option->get_positional()) continue;
      for (const auto &name : option->get_lnames()) names.push_back("--" + name);
      for (const auto &name : option->get_snames()) names.push_back("-" + name);
    }
    if (at->get_parent() != nullptr && at->get_parent()->get_parent() == nullptr)
      break;  // a verb: not the globals twice
  }
  return names;
}

std::optional<std::string> unknown_word(const CLI::App &app, int argc, const char *const *argv) {
  const CLI::App *command = &app;
  std::size_t positionals = 0;  // taken by the current command
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word == "--") break;
    if (word.size() > 1 && word[0] == '-') {
      if (word[1] == '-') {
        const std::string name = word.substr(0, word.find('='));
        const CLI::Option *option = known_option(*command, name);
        if (option == nullptr) {
          return said("option", name, where(app, *command), nearest(name, option_names(*command)));
        }
        if (option->get_expected_max() > 0 && name.size() == word.size()) ++i;  // its value
        continue;
      }
      // -v, -vv, -o FILE, -oFILE: the first letter decides.
      const CLI::Option *option = known_option(*command, word.substr(0, 2));
      if (option == nullptr) return said("option", word.substr(0, 2), where(app, *command), std::nullopt);
      if (option->get_expected_max() > 0 && word.size() == 2) ++i;
      continue;
    }
    if (const CLI::App *sub = subcommand(*command, word)) {
      command = sub;
      positionals = 0;
      continue;
    }
    // A word that is no verb here: a mistyped one, unless the command takes positionals.
    std::size_t takes = 0;
    for (const CLI::Option *option : command->get_options()) {
      if (option->get_positional()) ++takes;
    }
    if (positionals < takes) {
      ++positionals;
      continue;
    }
    if (command->get_subcommands([](const CLI::App *) { return true; }).empty()) return std::nullopt;
    const std::string prefix = command == &app ? "" : path_of(*command) + " ";
    auto near = nearest(word, verb_names(*command));
    if (near) near = prefix + *near;
    return said("verb", prefix + word, "", near);
  }
  return std::nullopt;
}

}  // namespace kiln::cli
