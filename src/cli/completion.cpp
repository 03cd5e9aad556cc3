#include "completion.hpp"

#include <algorithm>
#include <vector>

#include "unknown_words.hpp"

namespace kiln::cli {
namespace {

std::string joined(const std::vector<std::string> &words, const std::string &between = " ") {
  std::string text;
  for (const auto &word : words) text += (text.empty() ? "" : between) + word;
  return text;
}

struct Command {
  std::string path;  // "" for kiln itself, "remote push"
  const CLI::App *app;
};

void collect(const CLI::App &app, const std::string &path, std::vector<Command> &out) {
  out.push_back({path, &app});
  for (const CLI::App *sub : app.get_subcommands([](const CLI::App *) { return true; })) {
    if (sub->get_group().empty()) continue;  // hidden
    collect(*sub, path.empty() ? sub->get_name() : path + " " + sub->get_name(), out);
  }
}

}  // namespace

std::string bash_completion(const CLI::App &app) {
  std::vector<Command> commands;
  collect(app, "", commands);

  std::string steps;       // "path:word") path="..." for each verb below a command
  std::string words;       // path) verbs and options
  std::string positional;  // path) names of its positionals, in order
  std::vector<std::string> valued;
  for (const auto &command : commands) {
    for (const auto &verb : verb_names(*command.app)) {
      const std::string next = command.path.empty() ? verb : command.path + " " + verb;
      steps += "      \"" + command.path + ":" + verb + "\") path=\"" + next + "\"; n=0 ;;\n";
    }
    std::vector<std::string> names = verb_names(*command.app);
    std::vector<std::string> positionals;
    for (const CLI::Option *option : command.app->get_options()) {
      if (option->get_positional()) {
        positionals.push_back(option->get_name());
        continue;
      }
      for (const auto &name : option->get_lnames()) {
        names.push_back("--" + name);
        if (option->get_expected_max() > 0) valued.push_back("--" + name);
      }
      for (const auto &name : option->get_snames()) {
        if (option->get_expected_max() > 0) valued.push_back("-" + name);
      }
    }
    words += "    \"" + command.path + "\") words=\"" + joined(names) + "\" ;;\n";
    if (!positionals.empty()) positional += "    \"" + command.path + "\") args=(" + joined(positionals) + ") ;;\n";
  }
  std::vector<std::string> unique;
  for (const auto &name : valued) {
    if (std::find(unique.begin(), unique.end(), name) == unique.end()) unique.push_back(name);
  }

  std::string script =
      "# bash completion for kiln, written by `kiln completion bash` from its own verbs and options.\n"
      "_kiln() {\n"
      "  local cur=\"${COMP_WORDS[COMP_CWORD]}\" prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n"
      "  local path=\"\" n=0 i w words=\"\" args=() consumer=\"\"\n"
      "  COMPREPLY=()\n"
      "  # The verb typed so far, and how many positionals it was given.\n"
      "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
      "    w=\"${COMP_WORDS[i]}\"\n"
      "    case \"$w\" in\n"
      "      " +
      joined(unique, "|") +
      ") ((i++)); continue ;;\n"
      "      -*) continue ;;\n"
      "    esac\n"
      "    case \"$path:$w\" in\n" +
      steps +
      "      *) ((n == 0)) && consumer=\"$w\"; ((n++)) ;;\n"
      "    esac\n"
      "  done\n"
      "  case \"$prev\" in\n"
      "    " +
      joined(unique, "|") +
      ")\n"
      "      compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n"
      "  esac\n"
      "  case \"$path\" in\n" +
      words +
      "  esac\n"
      "  case \"$path\" in\n" +
      positional +
      "  esac\n"
      "  if [[ \"$cur\" != -* && $n -lt ${#args[@]} ]]; then\n"
      "    case \"${args[n]}\" in\n"
      "      consumer) COMPREPLY=($(compgen -W \"$(\"${COMP_WORDS[0]}\" ls 2>/dev/null | sed -n 's|^\\([^/ "
      "]*\\)/.*|\\1|p' | sort -u)\" -- \"$cur\")); return ;;\n"
      "      name) COMPREPLY=($(compgen -W \"$(\"${COMP_WORDS[0]}\" ls \"$consumer\" 2>/dev/null | sed -n 's|^[^/ "
      "]*/\\([^ ]*\\) .*|\\1|p')\" -- \"$cur\")); return ;;\n"
      "      *) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n"
      "    esac\n"
      "  fi\n"
      "  COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n"
      "}\n"
      "complete -F _kiln kiln\n";
  return script;
}

}  // namespace kiln::cli
