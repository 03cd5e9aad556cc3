#include "artifact/plugin_file.hpp"

#include <elf.h>

#include <kiln/errors.hpp>
#include <kiln/plugin.h>
#include <kiln/version.hpp>

namespace kiln::artifact {
namespace {

constexpr std::string_view kNegotiate = KILN_PLUGIN_NEGOTIATE_SYMBOL;
constexpr std::size_t kNamesShown = 12;

std::string name_list(const std::vector<std::string_view> &names) {
  std::string text;
  for (std::size_t i = 0; i < names.size() && i < kNamesShown; ++i) {
    text += (i == 0 ? "" : ", ") + std::string(names[i]);
  }
  if (names.size() > kNamesShown) text += " and " + std::to_string(names.size() - kNamesShown) + " more";
  return text;
}

}  // namespace

std::vector<std::string> unload_rule_problems(const ElfFacts &elf) {
  std::vector<std::string_view> extra, unique;
  bool negotiate = false;
  for (const auto &symbol : elf.dynamic_symbols) {
    if (!symbol.defined || symbol.absolute) continue;  // imports; version nodes
    if (symbol.binding == STB_GNU_UNIQUE) {
      unique.push_back(symbol.name);
    } else if (symbol.binding == STB_GLOBAL || symbol.binding == STB_WEAK) {
      if (symbol.name == kNegotiate && symbol.type == STT_FUNC && symbol.binding == STB_GLOBAL) {
        negotiate = true;
      } else {
        extra.push_back(symbol.name);
      }
    }
  }
  std::vector<std::string> problems;
  if (!negotiate) {
    problems.push_back("it does not export the function kiln_plugin_negotiate: define the plugin with the KILN_PLUGIN "
                       "macro of <kiln/plugin.hpp>");
  }
  if (!extra.empty()) {
    problems.push_back("it exports " + std::to_string(extra.size()) + " symbol(s) besides kiln_plugin_negotiate: " +
                       name_list(extra) + "; build with -fvisibility=hidden -fvisibility-inlines-hidden (and "
                       "-Wl,--exclude-libs,ALL for static archives) so that only kiln_plugin_negotiate is exported");
  }
  if (!unique.empty()) {
    problems.push_back("it has " + std::to_string(unique.size()) + " gnu-unique symbol(s): " + name_list(unique) +
                       "; glibc never unloads such a file: build with -fno-gnu-unique (nvcc: "
                       "-Xcompiler=-fno-gnu-unique)");
  }
  if ((elf.flags_1 & DF_1_NODELETE) != 0) {
    problems.push_back("it is marked NODELETE (DT_FLAGS_1), so it could never be unloaded: link without -z nodelete");
  }
  return problems;
}

std::string describe_unload_problems(const std::string &file, const std::vector<std::string> &problems) {
  std::string text = file + " breaks the plugin build rules of abi/README.md \"Build rules\" (it could not be "
                            "unloaded, or it could disturb the host's symbols):";
  for (const auto &problem : problems) text += "\n  " + problem;
  return text;
}

FileStamp stamp_of(std::string_view bytes, const std::string &file) {
  if (const auto section = find_elf_section(bytes, ".kiln_stamp")) {
    if (auto stamp = stamp_at(bytes, section->first, file)) return *stamp;
  }
  return find_stamp(bytes, file);
}

void check_stamp_abi(const FileStamp &stamp, const std::string &file) {
  const auto major = KILN_ABI_VERSION_MAJOR_OF(stamp.abi_version);
  if (major != KILN_ABI_VERSION_MAJOR_OF(kAbiVersion)) {
    throw AbiError(file + " offers plugin ABI up to " + abi_version_text(stamp.abi_version) + " (its build stamp); this kiln "
                   "speaks " + std::to_string(KILN_ABI_VERSION_MAJOR_OF(kAbiVersion)) + ".x (up to " +
                   abi_version_text(kAbiVersion) + "), so no version can be agreed: rebuild the plugin against this "
                   "kiln's abi/ headers, or use a kiln that speaks ABI " + std::to_string(major) + ".x");
  }
}

FileStamp check_plugin_file(std::string_view bytes, const std::string &file) {
  const ElfFacts elf = read_elf(bytes, file);
  // The stamp first: a file without one is "not a kiln plugin", the clearest reason there is.
  const FileStamp stamp = find_stamp(bytes, file);
  check_stamp_abi(stamp, file);
  const std::vector<std::string> problems = unload_rule_problems(elf);
  if (!problems.empty()) throw AbiError(describe_unload_problems(file, problems));
  return stamp;
}

}  // namespace kiln::artifact
