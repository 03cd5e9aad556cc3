#include "man_page.hpp"

#include <kiln/version.hpp>

#include "reference.hpp"

namespace kiln::cli {
namespace {

// Text as roff reads it literally: backslashes and hyphens escaped, no line starting a request.
std::string roff(const std::string &text) {
  std::string out;
  for (const char c : text) {
    if (c == '\\') {
      out += "\\e";
    } else if (c == '-') {
      out += "\\-";
    } else {
      out += c;
    }
    if (c == '\n') out += "\\&";
  }
  return (out.empty() || (out[0] != '.' && out[0] != '\'')) ? out : "\\&" + out;
}

std::string option_line(const CLI::Option &option) {
  std::string names;
  for (const auto &name : option.get_snames())
    names += (names.empty() ? "" : ", ") + std::string("\\fB\\-") + roff(name) + "\\fR";
  for (const auto &name : option.get_lnames())
    names += (names.empty() ? "" : ", ") + std::string("\\fB\\-\\-") + roff(name) + "\\fR";
  if (option.get_expected_max() > 0)
    names += " \\fI" + roff(option.get_type_name().empty() ? "VALUE" : option.get_type_name()) + "\\fR";
  return ".TP\n" + names + "\n" +
         roff(option.get_description().empty() ? "(no description)" : option.get_description()) + "\n";
}

void command_section(const CLI::App &command, const std::string &path, std::string &page) {
  std::string usage = "kiln " + path;
  for (const CLI::Option *option : command.get_options()) {
    if (option->get_positional())
      usage += " " + std::string(option->get_required() ? "" : "[") + option->get_name() +
               (option->get_required() ? "" : "]");
  }
  page += ".SS \"" + roff(usage) + "\"\n" + roff(command.get_description()) + "\n";
  for (const CLI::Option *option : command.get_options()) {
    if (option->get_positional()) {
      page += ".TP\n\\fI" + roff(option->get_name()) + "\\fR\n" + roff(option->get_description()) + "\n";
    }
  }
  for (const CLI::Option *option : command.get_options()) {
    if (!option->get_positional()) page += option_line(*option);
  }
  const std::string example = example_footer(path);
  if (!example.empty()) {
    page += ".PP\nExample:\n.RS\n.nf\n" + roff(example.substr(example.find('\n') + 3)) + "\n.fi\n.RE\n";
  }
  for (const CLI::App *sub : command.get_subcommands([](const CLI::App *) { return true; })) {
    if (!sub->get_group().empty()) command_section(*sub, path + " " + sub->get_name(), page);
  }
}

void table_section(const char *title, const std::vector<ReferenceRow> &rows, bool bold, std::string &page) {
  page += std::string(".SH ") + title + "\n";
  for (const auto &row : rows) {
    page += ".TP\n" + std::string(bold ? "\\fB" : "") + roff(row.name) + (bold ? "\\fR" : "") + "\n" +
            roff(row.meaning) + "\n";
  }
}

}  // namespace

std::string man_page(const CLI::App &app) {
  std::string page = ".TH KILN 1 \"\" \"kiln " + roff(kVersion) + "\" \"User Commands\"\n";
  page += ".SH NAME\nkiln \\- " + roff(app.get_description().substr(app.get_description().find(": ") + 2)) + "\n";
  page +=
      ".SH SYNOPSIS\n.B kiln\n[\\fB\\-\\-json\\fR] [\\fB\\-v\\fR] \\fIVERB\\fR [\\fIOPTIONS\\fR] [\\fIARGUMENTS\\fR]\n";
  page +=
      ".SH DESCRIPTION\nkiln resolves a named GPU solver plugin from its stores, checks it against the device, "
      "verifies and loads it, builds it from a recipe on a miss, and moves artifacts between machines "
      "as signed bundles or through remote caches.\n";
  page += ".SH OPTIONS\n";
  for (const CLI::Option *option : app.get_options()) page += option_line(*option);
  page += ".SH COMMANDS\n";
  for (const CLI::App *sub : app.get_subcommands([](const CLI::App *) { return true; })) {
    if (!sub->get_group().empty()) command_section(*sub, sub->get_name(), page);
  }
  table_section("EXIT STATUS", exit_codes(), false, page);
  table_section("ENVIRONMENT", environment(), true, page);
  page += ".SH SEE ALSO\nThe kiln documentation: docs/cli.md, docs/recipes.md, docs/architecture.md.\n";
  return page;
}

}  // namespace kiln::cli
