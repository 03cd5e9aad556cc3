#include "support/preconditions.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <vector>

#include <boost/filesystem/operations.hpp>

namespace kiln::test {
namespace {

struct Registered {
  std::string name;
  std::string suite;
  std::string file;  // the source file, as doctest's --source-file filters match it
  Precondition missing;
};

std::vector<Registered> &registry() {
  static std::vector<Registered> cases;  // filled during static initialisation
  return cases;
}

// doctest's filter semantics: case-insensitive, '*' any run, '?' any one character.
bool wildcard_match(const char *pattern, const char *text) {
  if (*pattern == '\0') return *text == '\0';
  if (*pattern == '*') return wildcard_match(pattern + 1, text) || (*text != '\0' && wildcard_match(pattern, text + 1));
  if (*text == '\0') return false;
  const bool same = *pattern == '?' || std::tolower(static_cast<unsigned char>(*pattern)) ==
                                           std::tolower(static_cast<unsigned char>(*text));
  return same && wildcard_match(pattern + 1, text + 1);
}

// The comma-separated values of one doctest option ("-ts=gpu", "--test-suite=gpu",
// "--dt-test-suite=gpu", ...), "\," being a comma inside a value.
std::vector<std::string> option_values(int argc, const char *const *argv, const char *long_name, const char *short_name) {
  std::vector<std::string> values;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    arg.erase(0, arg.find_first_not_of('-'));
    if (arg.compare(0, 3, "dt-") == 0) arg.erase(0, 3);
    const auto equals = arg.find('=');
    if (equals == std::string::npos) continue;
    const std::string name = arg.substr(0, equals);
    if (name != long_name && name != short_name) continue;
    std::string value;
    for (std::size_t at = equals + 1; at < arg.size(); ++at) {
      if (arg[at] == '\\' && at + 1 < arg.size() && (arg[at + 1] == ',' || arg[at + 1] == '\\')) {
        value += arg[++at];
      } else if (arg[at] == ',') {
        values.push_back(value);
        value.clear();
      } else {
        value += arg[at];
      }
    }
    values.push_back(value);
  }
  return values;
}

bool any_match(const std::vector<std::string> &patterns, const std::string &text) {
  return std::any_of(patterns.begin(), patterns.end(),
                     [&](const std::string &pattern) { return wildcard_match(pattern.c_str(), text.c_str()); });
}

// A case name as one value of a doctest filter: commas and backslashes escaped.
std::string filter_value(const std::string &name) {
  std::string out;
  for (const char c : name) {
    if (c == ',' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

void skip_if::fill(doctest::detail::TestCase &state) const {
  registry().push_back({state.m_name != nullptr ? state.m_name : "", state.m_test_suite != nullptr ? state.m_test_suite : "",
                        state.m_file.c_str(), missing_});
}

void skip_if::fill(doctest::detail::TestSuite &) const {
  std::fprintf(stderr, "kiln::test::skip_if decorates test cases, not suites\n");
  std::abort();
}

void report_skip(const std::string &what, const std::string &why) {
  const std::string line = "SKIPPED " + what + ": " + why;
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
  if (const char *file = std::getenv("KILN_TEST_SKIP_FILE"); file != nullptr && *file != '\0') {
    boost::system::error_code ignored;  // ctest's pre-test command removed the directory
    boost::filesystem::create_directories(boost::filesystem::path(file).parent_path(), ignored);
    std::ofstream out(file, std::ios::app);
    out << line << "\n";
    if (!out) std::fprintf(stderr, "cannot record the skip in KILN_TEST_SKIP_FILE=%s\n", file);
  }
}

void apply_preconditions(doctest::Context &context, int argc, const char *const *argv) {
  const auto suites = option_values(argc, argv, "test-suite", "ts");
  const auto suites_excluded = option_values(argc, argv, "test-suite-exclude", "tse");
  const auto cases = option_values(argc, argv, "test-case", "tc");
  const auto cases_excluded = option_values(argc, argv, "test-case-exclude", "tce");
  const auto files = option_values(argc, argv, "source-file", "sf");
  const auto files_excluded = option_values(argc, argv, "source-file-exclude", "sfe");
  std::map<Precondition, std::optional<std::string>> decided;  // each precondition once
  for (const auto &registered : registry()) {
    const bool selected = (suites.empty() || any_match(suites, registered.suite)) &&
                          !any_match(suites_excluded, registered.suite) &&
                          (cases.empty() || any_match(cases, registered.name)) &&
                          !any_match(cases_excluded, registered.name) &&
                          (files.empty() || any_match(files, registered.file)) &&
                          !any_match(files_excluded, registered.file);
    // A precondition of a case not selected is never decided: some cost seconds (a child in
    // a new pid namespace, a read-only bind mount), more under an emulator.
    if (!selected) continue;
    auto found = decided.find(registered.missing);
    if (found == decided.end()) found = decided.emplace(registered.missing, registered.missing()).first;
    if (!found->second) continue;
    context.addFilter("test-case-exclude", filter_value(registered.name).c_str());
    report_skip(registered.name, *found->second);
  }
}

}  // namespace kiln::test
