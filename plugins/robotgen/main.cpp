// kiln-urdf-fk: reads a URDF, walks the serial chain from --base to --tip and writes C++/CUDA
// headers usable from host and device code (__host__ __device__ under nvcc):
//
//   kiln-urdf-fk ROBOT.urdf --base LINK --tip LINK -o kiln_fk_chain.cuh [--namespace kiln_fk]
//                [--dynamics kiln_rnea_chain.cuh] [--dynamics-namespace kiln_rnea] [--gravity X Y Z]
//
//   -o          forward kinematics and the geometric Jacobian (fk_emitter.hpp)
//   --dynamics  recursive Newton-Euler inverse dynamics, gravity torques, the joint-space mass
//               matrix, and the joint limits (rnea_emitter.hpp)
//   --max-joints  refuse a chain longer than a plugin supports (before any compiler runs)
//   --check     write nothing: refuse what a build would refuse (with --dynamics-check, the
//               inertials too) and print the robot's name, the chain's joints and the model's
//               fingerprint on stdout (kiln robot init asks this before it writes recipes; kiln
//               load --model, to require a plugin's model: with --dynamics-check, the model with
//               the gravity of --gravity, as a build with --dynamics records it)
// The chain itself (fixed joints folded, bodies merged, every refusal) is urdf_chain.hpp's.
//
// The output is deterministic: the same URDF bytes and arguments give the same header bytes.
// It names the input file by its base name only: no directory, no time stamp, no user, so
// the header's bytes (which key the plugin artifact) do not depend on where it was built.
#include <urdf_parser/urdf_parser.h>

#include <CLI/CLI.hpp>

#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "fk_emitter.hpp"
#include "model_fingerprint.hpp"
#include "rnea_emitter.hpp"
#include "urdf_chain.hpp"

namespace {

using kiln::robotgen::GeneratorError;

std::string read_file(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw GeneratorError("cannot read '" + path + "'");
  std::ostringstream out;
  out << in.rdbuf();
  if (in.bad()) throw GeneratorError("cannot read '" + path + "'");
  return out.str();
}

// Write through a temporary file and rename: a build never sees a half-written header.
void write_file(const std::string &path, const std::string &text) {
  const std::string temporary = path + ".tmp-" + std::to_string(::getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) throw GeneratorError("cannot write '" + temporary + "'");
    out << text;
    out.close();
    if (!out) {
      std::remove(temporary.c_str());
      throw GeneratorError("cannot write '" + temporary + "'");
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
    throw GeneratorError("cannot rename '" + temporary + "' to '" + path + "'");
  }
}

bool valid_namespace(const std::string &name) {
  if (name.empty()) return false;
  std::size_t i = 0;
  while (i < name.size()) {
    const char c = name[i];
    const bool start = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!start) return false;
    while (i < name.size() && name[i] != ':') {
      const char d = name[i];
      if (!((d >= 'a' && d <= 'z') || (d >= 'A' && d <= 'Z') || (d >= '0' && d <= '9') || d == '_')) return false;
      ++i;
    }
    if (i < name.size()) {
      if (name.compare(i, 2, "::") != 0 || i + 2 >= name.size()) return false;
      i += 2;
    }
  }
  return true;
}

// --check's report, a line per fact: "robot NAME", "joints N", then "joint NAME KIND" per joint
// (main adds "fingerprint xxh128:...").
// A name is printed with its line breaks replaced, so every fact stays one line.
void print_chain(const kiln::robotgen::Chain &chain) {
  const auto one_line = [](std::string text) {
    for (char &c : text) {
      if (c == '\n' || c == '\r') c = ' ';
    }
    return text;
  };
  std::cout << "robot " << one_line(chain.robot) << "\njoints " << chain.joints.size() << '\n';
  for (const auto &joint : chain.joints) {
    std::cout << "joint " << one_line(joint.name) << ' ' << kiln::robotgen::kind_name(joint.kind) << '\n';
  }
}

}  // namespace

int main(int argc, char **argv) {
  CLI::App app{"kiln-urdf-fk: write the forward kinematics (and, with --dynamics, the inverse dynamics) of a URDF "
               "serial chain as C++/CUDA headers"};
  std::string input, base, tip, output, ns = "kiln_fk", dynamics, dynamics_ns = "kiln_rnea";
  std::vector<double> gravity = {0.0, 0.0, -9.81};
  app.add_option("urdf", input, "the robot's URDF file")->required();
  app.add_option("--base", base, "the chain's base link (frame of the results)")->required();
  app.add_option("--tip", tip, "the chain's tip link (the frame placed)")->required();
  app.add_option("-o,--output", output, "the forward-kinematics header to write");
  app.add_option("--namespace", ns, "C++ namespace of the forward-kinematics code (default kiln_fk)");
  app.add_option("--dynamics", dynamics, "the inverse-dynamics (RNEA) header to write");
  app.add_option("--dynamics-namespace", dynamics_ns, "C++ namespace of the dynamics code (default kiln_rnea)");
  app.add_option("--gravity", gravity, "gravity in the base frame, m/s^2 (default 0 0 -9.81)")->expected(3);
  std::size_t max_joints = 0;
  bool check = false, check_dynamics = false;
  app.add_option("--max-joints", max_joints, "refuse a chain of more movable joints than this (a plugin's limit)")
      ->check(CLI::PositiveNumber);
  app.add_flag("--check", check, "write nothing: check the chain and print the robot's name and joints");
  app.add_flag("--dynamics-check", check_dynamics,
               "with --check: check the inertials and limits the dynamics need, and print the fingerprint of the model "
               "with dynamics (the gravity included)");
  bool model_text = false;
  app.add_flag("--model-text", model_text,
               "with --check: also print the canonical model text the fingerprint digests (a line per link and joint)");
  app.set_version_flag("--version", kiln::robotgen::kFkGeneratorVersion);
  CLI11_PARSE(app, argc, argv);

  try {
    if (check && (!output.empty() || !dynamics.empty())) {
      throw GeneratorError("--check writes nothing: pass it without -o and --dynamics");
    }
    if (check_dynamics && !check) throw GeneratorError("--dynamics-check goes with --check");
    if (model_text && !check) throw GeneratorError("--model-text goes with --check");
    if (!check && output.empty() && dynamics.empty()) {
      throw GeneratorError("nothing to write: pass -o FILE and/or --dynamics FILE (or --check)");
    }
    if (!valid_namespace(ns)) throw GeneratorError("--namespace '" + ns + "' is not a C++ namespace name");
    if (!valid_namespace(dynamics_ns)) {
      throw GeneratorError("--dynamics-namespace '" + dynamics_ns + "' is not a C++ namespace name");
    }
    for (const double g : gravity) {
      if (!std::isfinite(g)) throw GeneratorError("--gravity takes three finite numbers (m/s^2, base frame)");
    }
    const std::string text = read_file(input);
    kiln::robotgen::refuse_xacro(text, input);
    const std::size_t slash = input.find_last_of('/');
    const std::string source = slash == std::string::npos ? input : input.substr(slash + 1);
    urdf::ModelInterfaceSharedPtr model = urdf::parseURDF(text);
    if (!model) {
      throw GeneratorError("'" + input + "' is not a valid URDF (the parser's reason is printed above)");
    }
    kiln::robotgen::Chain chain = kiln::robotgen::extract_chain(*model, source, base, tip);
    if (max_joints > 0) kiln::robotgen::check_joint_count(chain, max_joints);
    const std::array<double, 3> gravity_vector{gravity[0], gravity[1], gravity[2]};
    // A model with dynamics includes the gravity they apply: both headers written together carry
    // that model. --dynamics-check asks for the fingerprint such a build would record.
    const bool with_dynamics = !dynamics.empty() || check_dynamics;
    chain.model_text = kiln::robotgen::canonical_model_text(
        *model, base, tip, with_dynamics ? std::optional<std::array<double, 3>>(gravity_vector) : std::nullopt);
    chain.model_fingerprint = kiln::robotgen::model_fingerprint(chain.model_text);
    if (check) {
      if (check_dynamics) kiln::robotgen::check_inertials(*model, chain);
      print_chain(chain);
      std::cout << "fingerprint " << chain.model_fingerprint << '\n';
      if (model_text) std::cout << chain.model_text;
      return 0;
    }
    // Both headers are composed before either is written: a refusal leaves neither behind.
    std::string fk_text, dynamics_text;
    if (!output.empty()) fk_text = kiln::robotgen::emit_fk_header(chain, ns);
    if (!dynamics.empty()) {
      kiln::robotgen::check_inertials(*model, chain);
      dynamics_text = kiln::robotgen::emit_rnea_header(chain, dynamics_ns, gravity_vector);
    }
    if (!output.empty()) write_file(output, fk_text);
    if (!dynamics.empty()) write_file(dynamics, dynamics_text);
  } catch (const std::exception &error) {
    std::cerr << "kiln-urdf-fk: error: " << error.what() << '\n';
    return 1;
  }
  return 0;
}
