// What kiln-urdf-fk --check --model-text says of a URDF chain -- the fingerprint and canonical
// text a host requires a plugin's model by -- for the IK and TrajOpt model-identity tests.
#pragma once

#include <doctest/doctest.h>

#include <string>

#include "support/fixtures.hpp"

namespace kiln::test {

struct CheckedModel {
  std::string fingerprint, text;
};

// `tool` is kiln-urdf-fk; `options` more of its flags (e.g. "--dynamics-check --gravity 0 0 -1.62").
inline CheckedModel check_model(const std::string &tool, const std::string &urdf, const std::string &base,
                                const std::string &tip, const std::string &options = "") {
  const auto result = run_shell(shell_quote(tool) + " " + shell_quote(urdf) + " --base " + shell_quote(base) +
                                " --tip " + shell_quote(tip) + " --check --model-text " + options);
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  const std::size_t print = result.out.find("fingerprint ");
  const std::size_t text = result.out.find("kiln-model 1\n");
  REQUIRE(print != std::string::npos);
  REQUIRE(text != std::string::npos);
  return {result.out.substr(print + 12, result.out.find('\n', print) - print - 12), result.out.substr(text)};
}

}  // namespace kiln::test
