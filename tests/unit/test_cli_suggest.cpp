// The CLI's "did you mean": optimal string alignment distance and the nearest known word.
#include <doctest/doctest.h>

#include "cli/suggest.hpp"

using kiln::cli::edit_distance;
using kiln::cli::nearest;

TEST_CASE("cli suggest: edit distance counts insertions, deletions, substitutions and adjacent swaps") {
  CHECK(edit_distance("", "") == 0);
  CHECK(edit_distance("ls", "ls") == 0);
  CHECK(edit_distance("", "abc") == 3);
  CHECK(edit_distance("abc", "") == 3);
  CHECK(edit_distance("lss", "ls") == 1);          // insertion
  CHECK(edit_distance("publsh", "publish") == 1);  // deletion
  CHECK(edit_distance("verity", "verify") == 1);   // substitution
  CHECK(edit_distance("--arhc", "--arch") == 1);   // adjacent transposition: 1, not 2
  CHECK(edit_distance("ca", "abc") == 3);          // OSA: no substring edited twice (true Damerau: 2)
  CHECK(edit_distance("kitten", "sitting") == 3);
  CHECK(edit_distance("doctor", "docter") == 1);
  CHECK(edit_distance("abc", "xyz") == 3);
  CHECK(edit_distance("gc", "ls") == 2);
  CHECK(edit_distance("abcdef", "badcfe") == 3);  // three swaps
}

TEST_CASE("cli suggest: the nearest known word when one is close, else nothing") {
  const std::vector<std::string> verbs = {"doctor", "publish", "load",   "ls",     "show",
                                          "build",  "ensure",  "swap",   "verify", "gc",
                                          "keygen", "export",  "import", "remote", "completion"};
  CHECK(nearest("lss", verbs) == std::optional<std::string>("ls"));
  CHECK(nearest("publsh", verbs) == std::optional<std::string>("publish"));
  CHECK(nearest("imprt", verbs) == std::optional<std::string>("import"));
  CHECK(nearest("biuld", verbs) == std::optional<std::string>("build"));
  CHECK(nearest("docter", verbs) == std::optional<std::string>("doctor"));
  CHECK(nearest("remote", verbs) == std::optional<std::string>("remote"));
  CHECK(nearest("comp", verbs) == std::optional<std::string>("completion"));  // a prefix
  CHECK_FALSE(nearest("frobnicate", verbs).has_value());
  CHECK_FALSE(nearest("xyz", verbs).has_value());
  CHECK_FALSE(nearest("", verbs).has_value());
  CHECK_FALSE(nearest("ls", {}).has_value());
  // Short words allow one edit only: "gx" is gc, "xy" is nothing.
  CHECK(nearest("gx", verbs) == std::optional<std::string>("gc"));
  CHECK_FALSE(nearest("xy", verbs).has_value());

  const std::vector<std::string> options = {"--consumer", "--name", "--artifact", "--arch", "--cuda-toolkit",
                                            "--json",     "-v",     "--verbose",  "-h",     "--help"};
  CHECK(nearest("--arhc", options) == std::optional<std::string>("--arch"));
  CHECK(nearest("--consmer", options) == std::optional<std::string>("--consumer"));
  CHECK(nearest("--jsno", options) == std::optional<std::string>("--json"));
  CHECK(nearest("--cuda", options) == std::optional<std::string>("--cuda-toolkit"));
  CHECK_FALSE(nearest("--", options).has_value());  // dashes alone are no word
  CHECK_FALSE(nearest("--device", options).has_value());
  // Ties go to the first candidate.
  CHECK(nearest("ab", {"ac", "ad"}) == std::optional<std::string>("ac"));
}
