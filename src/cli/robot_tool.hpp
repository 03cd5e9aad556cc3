// kiln's robot tooling from the CLI: where kiln's data and its kiln-urdf-fk are, and running
// kiln-urdf-fk --check on a URDF chain (kiln robot init, kiln load --model).
//
// Where kiln's data is (templates/, plugins/{ik,trajopt,common}, kiln-urdf-fk): KILN_DATA_DIR,
// else <dir of the kiln executable>/../share/kiln. An installed tree has the default layout
// (kiln-urdf-fk in <prefix>/bin); a build tree's share/kiln holds kiln-data.json naming the
// source tree's plugins and templates and the build's kiln-urdf-fk (cmake/KilnInstallPlugins.cmake).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace kiln::cli {

struct DataDir {
  std::filesystem::path root;       // share/kiln
  std::filesystem::path templates;  // *.json.tmpl
  std::filesystem::path plugins;    // ik/, trajopt/, common/
  std::filesystem::path urdf_fk;    // the kiln-urdf-fk program
};

// NotFoundError naming where it looked and how to install what is missing.
DataDir find_data_dir();

// A file's bytes; NotFoundError naming it when it cannot be read.
std::string read_text(const std::filesystem::path &path);

struct ChainCheck {
  std::string robot;
  int joints = 0;
  std::string fingerprint;  // "xxh128:..."
  std::string model_text;   // the canonical text, with --model-text among `options`
};

// kiln-urdf-fk URDF --base BASE --tip TIP --check OPTIONS...: the refusal a build's generator step
// would give, now (UsageError "<what> cannot take this chain: <the generator's reason>").
ChainCheck check_chain(const DataDir &data, const std::string &urdf, const std::string &base, const std::string &tip,
                       const std::vector<std::string> &options, const std::string &what);

}  // namespace kiln::cli
