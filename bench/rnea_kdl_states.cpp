// kiln_bench_rnea_kdl_states: Orocos KDL's inverse dynamics on random states of one chain of a
// URDF, written for kiln_bench_rnea --kdl on a machine without KDL (rnea_kdl_file.hpp: the format).
//
//   kiln_bench_rnea_kdl_states URDF --root LINK --tip LINK -o FILE [--states N] [--seed S]
//                              [--gravity X Y Z]
//
// The states as tests/robotgen draws them (rnea_checks.hpp: q uniform within the URDF's position
// limits, -pi..pi for a continuous joint; qd within its velocity limits, +-2 where it gives none;
// qdd within +-10 rad/s^2, +-2 m/s^2 for a prismatic joint), each value rounded to float so that
// the GPU's fp32 reads the same state. Torques: KDL::ChainIdSolver_RNE on the chain kdl_parser
// builds from the same bytes (no external wrenches) under --gravity (default 0 0 -9.81, the
// generator's default kGravity), in double. The URDF is read once: the digest in the header is
// of exactly the bytes urdfdom and KDL parsed. Deterministic: the same URDF bytes, arguments and
// toolchain give the same file bytes (the header names the URDF by its base name only).
#include <kdl/chainidsolver_recursive_newton_euler.hpp>
#include <kdl/config.h>
#include <kdl/tree.hpp>
#include <kdl_parser/kdl_parser.hpp>
#include <openssl/evp.h>
#include <urdf_parser/urdf_parser.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "rnea_kdl_file.hpp"

namespace {

using kiln_bench_rnea_kdl::StatesFile;

std::string read_urdf_bytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream out;
  out << in.rdbuf();
  if (in.bad()) throw std::runtime_error("cannot read " + path);
  return out.str();
}

std::string sha256_hex(const std::string &bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha256(), nullptr) != 1) {
    throw std::runtime_error("OpenSSL EVP_Digest(SHA-256) failed");
  }
  std::string hex;
  char pair[3];
  for (unsigned int i = 0; i < length; ++i) {
    std::snprintf(pair, sizeof pair, "%02x", digest[i]);
    hex += pair;
  }
  return hex;
}

constexpr double kKdlStatesPi = 3.14159265358979323846;

struct KdlStatesJointRange {
  double lower = 0, upper = 0, velocity = 0, acceleration = 0;
};

}  // namespace

int main(int argc, char **argv) {
  CLI::App app{"Orocos KDL's RNEA torques on random states of a URDF chain, for kiln_bench_rnea --kdl"};
  std::string urdf_path, root, tip, output;
  std::size_t count = 4096;
  std::uint64_t seed = 20261202;
  std::vector<double> gravity = {0.0, 0.0, -9.81};
  app.add_option("urdf", urdf_path, "the URDF")->required();
  app.add_option("--root", root, "the chain's root (base) link, as kiln_rnea_chain_header's BASE")->required();
  app.add_option("--tip", tip, "the chain's tip link")->required();
  app.add_option("-o,--output", output, "the file to write")->required();
  app.add_option("--states", count, "random states (default 4096)")
      ->check(CLI::Range(std::size_t{1}, kiln_bench_rnea_kdl::kMaxStates));
  app.add_option("--seed", seed, "the std::mt19937_64 seed (default 20261202), written into the file");
  app.add_option("--gravity", gravity, "gravity in the root frame, m/s^2 (default 0 0 -9.81)")->expected(3);
  CLI11_PARSE(app, argc, argv);

  try {
    const std::string xml = read_urdf_bytes(urdf_path);
    const urdf::ModelInterfaceSharedPtr model = urdf::parseURDF(xml);
    if (!model) throw std::runtime_error("urdfdom cannot parse " + urdf_path);
    KDL::Tree tree;
    if (!kdl_parser::treeFromUrdfModel(*model, tree)) {
      throw std::runtime_error("kdl_parser::treeFromUrdfModel failed on " + urdf_path);
    }
    KDL::Chain chain;
    if (!tree.getChain(root, tip, chain)) {
      throw std::runtime_error("KDL::Tree::getChain(" + root + ", " + tip + ") failed on " + urdf_path +
                               ": check --root and --tip name links of one chain");
    }

    StatesFile f;
    f.robot = model->getName(), f.root = root, f.tip = tip;
    f.seed = seed, f.n = count;
    for (int k = 0; k < 3; ++k) f.gravity[k] = gravity[static_cast<std::size_t>(k)];
    const std::size_t slash = urdf_path.find_last_of('/');
    f.urdf = slash == std::string::npos ? urdf_path : urdf_path.substr(slash + 1);
    f.urdf_bytes = xml.size(), f.urdf_sha256 = sha256_hex(xml), f.kdl_version = KDL_VERSION_STRING;

    std::vector<KdlStatesJointRange> ranges;
    for (const KDL::Segment &segment : chain.segments) {
      if (segment.getJoint().getType() == KDL::Joint::None) continue;
      const std::string &name = segment.getJoint().getName();
      const urdf::JointConstSharedPtr joint = model->getJoint(name);
      if (!joint) throw std::runtime_error("KDL's joint " + name + " is not in " + urdf_path + " (urdfdom)");
      KdlStatesJointRange r;
      if (joint->type == urdf::Joint::CONTINUOUS) {
        r.lower = -kKdlStatesPi, r.upper = kKdlStatesPi;  // as the generated header's kLower / kUpper
      } else if (joint->limits) {
        r.lower = joint->limits->lower, r.upper = joint->limits->upper;
      } else {
        throw std::runtime_error("joint " + name + " of " + urdf_path + " has no <limit>: no range to draw q from");
      }
      r.velocity = joint->limits && joint->limits->velocity > 0 ? joint->limits->velocity : 2.0;
      r.acceleration = joint->type == urdf::Joint::PRISMATIC ? 2.0 : 10.0;
      ranges.push_back(r);
      f.joints.push_back(name);
    }
    f.dof = static_cast<int>(ranges.size());
    if (f.dof < 1 || static_cast<unsigned>(f.dof) != chain.getNrOfJoints()) {
      throw std::runtime_error("the chain " + root + " -> " + tip + " of " + urdf_path + " has no movable joint");
    }

    const std::size_t dof = ranges.size(), values = count * dof;
    for (auto *a : {&f.q, &f.qd, &f.qdd, &f.tau}) a->assign(values, 0.0);
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> unit(-1.0, 1.0);
    // Rounded to float: the file's double is then exactly what an fp32 evaluation reads.
    const auto draw = [&](double scale, double offset) {
      return static_cast<double>(static_cast<float>(offset + scale * unit(rng)));
    };
    KDL::ChainIdSolver_RNE solver(chain, KDL::Vector(f.gravity[0], f.gravity[1], f.gravity[2]));
    KDL::JntArray q(static_cast<unsigned>(dof)), qd(q), qdd(q), tau(q);
    const KDL::Wrenches no_wrenches(chain.getNrOfSegments(), KDL::Wrench::Zero());
    double largest = 0;
    for (std::size_t i = 0; i < count; ++i) {
      for (std::size_t j = 0; j < dof; ++j) {
        const KdlStatesJointRange &r = ranges[j];
        const std::size_t at = i * dof + j;
        // Clamped after rounding: a float-rounded end of the range may fall just outside it.
        f.q[at] = std::min(r.upper, std::max(r.lower, draw(0.5 * (r.upper - r.lower), 0.5 * (r.lower + r.upper))));
        f.qd[at] = draw(r.velocity, 0.0);
        f.qdd[at] = draw(r.acceleration, 0.0);
        const unsigned k = static_cast<unsigned>(j);
        q(k) = f.q[at], qd(k) = f.qd[at], qdd(k) = f.qdd[at];
      }
      const int status = solver.CartToJnt(q, qd, qdd, no_wrenches, tau);
      if (status < 0) {
        throw std::runtime_error("KDL::ChainIdSolver_RNE::CartToJnt failed (" + std::to_string(status) + ") at state " +
                                 std::to_string(i));
      }
      for (std::size_t j = 0; j < dof; ++j) {
        f.tau[i * dof + j] = tau(static_cast<unsigned>(j));
        largest = std::max(largest, std::fabs(f.tau[i * dof + j]));
      }
    }
    kiln_bench_rnea_kdl::write_states_file(output, f);
    std::printf("kiln_bench_rnea_kdl_states: %s: %s %s -> %s, %zu states x %zu joints, KDL %s, largest |tau| %.1f, "
                "URDF sha256 %.12s...\n",
                output.c_str(), f.robot.c_str(), root.c_str(), tip.c_str(), count, dof, f.kdl_version.c_str(), largest,
                f.urdf_sha256.c_str());
  } catch (const std::exception &error) {
    std::fprintf(stderr, "kiln_bench_rnea_kdl_states: %s\n", error.what());
    return 1;
  }
  return 0;
}
