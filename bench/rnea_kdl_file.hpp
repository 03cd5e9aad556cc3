// The file that carries Orocos KDL's inverse dynamics to a machine without KDL (the GPU machine):
// written by kiln_bench_rnea_kdl_states (rnea_kdl_states.cpp, where KDL is), read by
// kiln_bench_rnea --kdl. Plain C++, no dependencies (the bench travels without any).
//
// Layout, version 1: one ASCII header line ending in '\n', then the payload.
//   kiln-rnea-kdl-states 1 robot=R root=LINK tip=LINK dof=D n=N seed=S gravity=GX,GY,GZ
//     joints=J1,...,JD urdf=NAME urdf_bytes=B urdf_sha256=HEX kdl=VERSION solver=ChainIdSolver_RNE
//     layout=q,qd,qdd,tau/state-major/f64le
// (one line; fields separated by single spaces, values without spaces; numbers in the fewest
// digits that read back exactly). The payload is 4 arrays of N x D IEEE-754 binary64 values,
// little-endian, one after the other: q, qd, qdd (the states: rad, rad/s, rad/s^2 or m, m/s,
// m/s^2) and tau (KDL's torques or forces, N m or N); within an array state-major, joint j of
// state i at [i * D + j]. The file's size is exactly the header line plus 32 N D bytes. The
// states are float-representable (drawn in double, rounded to float), so an fp32 evaluation reads
// exactly the states KDL was given.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace kiln_bench_rnea_kdl {

constexpr const char *kMagic = "kiln-rnea-kdl-states";
constexpr int kVersion = 1;
constexpr const char *kLayout = "q,qd,qdd,tau/state-major/f64le";
constexpr std::size_t kMaxStates = std::size_t{1} << 24, kMaxDof = 64;

struct StatesFile {
  std::string robot, root, tip;
  int dof = 0;
  std::size_t n = 0;
  std::uint64_t seed = 0;
  double gravity[3] = {0, 0, 0};
  std::vector<std::string> joints;
  std::string urdf;  // the URDF's file name (no directory: the bytes do not depend on where it was)
  std::size_t urdf_bytes = 0;
  std::string urdf_sha256;  // lower-case hex of the URDF's bytes
  std::string kdl_version;
  std::vector<double> q, qd, qdd, tau;  // n * dof each, state-major
};

inline bool host_is_little_endian() {
  const std::uint32_t one = 1;
  unsigned char first = 0;
  std::memcpy(&first, &one, 1);
  return first == 1;
}

// The shortest of %.15g, %.16g, %.17g that reads back as the same double (-9.81, not
// -9.8100000000000005).
inline std::string format_double(double value) {
  char text[40];
  for (int digits = 15; digits <= 17; ++digits) {
    std::snprintf(text, sizeof text, "%.*g", digits, value);
    if (std::strtod(text, nullptr) == value) break;
  }
  return text;
}

// A header value must not hold the separators (space, newline, '=', ','), or the line would not
// read back: refused here rather than written ambiguously.
inline const std::string &plain_value(const std::string &value, const char *what) {
  if (value.empty() || value.find_first_of(" \t\r\n=,") != std::string::npos) {
    throw std::runtime_error(std::string(what) + " \"" + value +
                             "\" is empty or holds a space, '=' or ',': it cannot go into the header line");
  }
  return value;
}

inline std::string header_line(const StatesFile &f) {
  std::ostringstream h;
  h << kMagic << ' ' << kVersion << " robot=" << plain_value(f.robot, "the robot name")
    << " root=" << plain_value(f.root, "the root link") << " tip=" << plain_value(f.tip, "the tip link")
    << " dof=" << f.dof << " n=" << f.n << " seed=" << f.seed << " gravity=" << format_double(f.gravity[0]) << ','
    << format_double(f.gravity[1]) << ',' << format_double(f.gravity[2]) << " joints=";
  for (std::size_t j = 0; j < f.joints.size(); ++j) h << (j ? "," : "") << plain_value(f.joints[j], "a joint name");
  h << " urdf=" << plain_value(f.urdf, "the URDF's file name") << " urdf_bytes=" << f.urdf_bytes
    << " urdf_sha256=" << plain_value(f.urdf_sha256, "the digest")
    << " kdl=" << plain_value(f.kdl_version, "the KDL version")
    << " solver=ChainIdSolver_RNE layout=" << kLayout << '\n';
  return h.str();
}

// Writes to PATH.tmp, then renames: a reader (or an interrupted build) never sees half a file.
inline void write_states_file(const std::string &path, const StatesFile &f) {
  if (!host_is_little_endian()) throw std::runtime_error("this host is big-endian; the format is little-endian");
  const std::size_t values = f.n * static_cast<std::size_t>(f.dof);
  for (const auto *a : {&f.q, &f.qd, &f.qdd, &f.tau}) {
    if (a->size() != values) throw std::runtime_error("write_states_file: an array does not hold n * dof values");
  }
  if (f.joints.size() != static_cast<std::size_t>(f.dof)) {
    throw std::runtime_error("write_states_file: not dof joint names");
  }
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("cannot open " + tmp + " for writing (does its directory exist?)");
    const std::string header = header_line(f);
    out.write(header.data(), static_cast<std::streamsize>(header.size()));
    for (const auto *a : {&f.q, &f.qd, &f.qdd, &f.tau}) {
      out.write(reinterpret_cast<const char *>(a->data()), static_cast<std::streamsize>(values * sizeof(double)));
    }
    out.close();
    if (!out) throw std::runtime_error("writing " + tmp + " failed (disk full?)");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) throw std::runtime_error("cannot rename " + tmp + " to " + path);
}

namespace detail {

inline std::vector<std::string> split(const std::string &text, char separator) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, separator)) parts.push_back(part);
  return parts;
}

inline unsigned long long whole_number(const std::string &text, const std::string &what, const std::string &path) {
  char *end = nullptr;
  const unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || text[0] == '-' || *end != '\0') {
    throw std::runtime_error(path + ": " + what + " \"" + text + "\" is not a whole number");
  }
  return value;
}

}  // namespace detail

// Throws std::runtime_error naming the file, what is wrong and (where it helps) the fix.
inline StatesFile read_states_file(const std::string &path) {
  const std::string regenerate = " (regenerate it: bench/README.md, \"--kdl\")";
  if (!host_is_little_endian()) throw std::runtime_error("this host is big-endian; " + path + " is little-endian");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::string header;
  std::getline(in, header);
  if (!in || header.size() > 1 << 16) {
    throw std::runtime_error(path + ": no header line: not a KDL states file" + regenerate);
  }
  const std::vector<std::string> fields = detail::split(header, ' ');
  if (fields.size() < 2 || fields[0] != kMagic) {
    throw std::runtime_error(path + ": does not start with \"" + kMagic + "\": not a KDL states file" + regenerate);
  }
  if (fields[1] != std::to_string(kVersion)) {
    throw std::runtime_error(path + ": format version " + fields[1] + ", this binary reads version " +
                             std::to_string(kVersion) + regenerate);
  }
  std::map<std::string, std::string> kv;
  for (std::size_t i = 2; i < fields.size(); ++i) {
    const std::size_t eq = fields[i].find('=');
    if (eq == std::string::npos || eq == 0) {
      throw std::runtime_error(path + ": malformed header field \"" + fields[i] + "\"");
    }
    kv[fields[i].substr(0, eq)] = fields[i].substr(eq + 1);
  }
  const auto field = [&](const char *key) -> const std::string & {
    const auto it = kv.find(key);
    if (it == kv.end()) throw std::runtime_error(path + ": the header has no " + key + "=" + regenerate);
    return it->second;
  };
  StatesFile f;
  f.robot = field("robot"), f.root = field("root"), f.tip = field("tip");
  f.urdf = field("urdf"), f.urdf_sha256 = field("urdf_sha256"), f.kdl_version = field("kdl");
  f.urdf_bytes = static_cast<std::size_t>(detail::whole_number(field("urdf_bytes"), "urdf_bytes", path));
  f.seed = detail::whole_number(field("seed"), "seed", path);
  const unsigned long long dof = detail::whole_number(field("dof"), "dof", path);
  const unsigned long long n = detail::whole_number(field("n"), "n", path);
  if (dof < 1 || dof > kMaxDof || n < 1 || n > kMaxStates) {
    throw std::runtime_error(path + ": dof " + std::to_string(dof) + " or n " + std::to_string(n) + " out of range");
  }
  f.dof = static_cast<int>(dof), f.n = static_cast<std::size_t>(n);
  if (field("layout") != kLayout) {
    throw std::runtime_error(path + ": layout " + field("layout") + ", this binary reads " + kLayout + regenerate);
  }
  f.joints = detail::split(field("joints"), ',');
  if (f.joints.size() != dof) {
    throw std::runtime_error(path + ": joints= names " + std::to_string(f.joints.size()) + " joints, dof= says " +
                             std::to_string(dof));
  }
  const std::vector<std::string> g = detail::split(field("gravity"), ',');
  if (g.size() != 3) throw std::runtime_error(path + ": gravity= is not three numbers");
  for (int k = 0; k < 3; ++k) {
    char *end = nullptr;
    f.gravity[k] = std::strtod(g[static_cast<std::size_t>(k)].c_str(), &end);
    if (*end != '\0' || !std::isfinite(f.gravity[k])) {
      throw std::runtime_error(path + ": gravity= is not three numbers");
    }
  }

  const std::size_t values = f.n * dof;
  const std::string payload((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (payload.size() != 4 * values * sizeof(double)) {
    throw std::runtime_error(path + ": " + std::to_string(payload.size()) + " payload bytes, the header's n and dof " +
                             "need " + std::to_string(4 * values * sizeof(double)) + ": truncated or not this format" +
                             regenerate);
  }
  std::size_t at = 0;
  for (auto *a : {&f.q, &f.qd, &f.qdd, &f.tau}) {
    a->resize(values);
    std::memcpy(a->data(), payload.data() + at, values * sizeof(double));
    at += values * sizeof(double);
    for (const double v : *a) {
      if (!std::isfinite(v)) throw std::runtime_error(path + ": a non-finite value in the payload" + regenerate);
    }
  }
  return f;
}

}  // namespace kiln_bench_rnea_kdl
