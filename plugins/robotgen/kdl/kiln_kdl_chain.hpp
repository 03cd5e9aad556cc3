// The independent reference's model of a robot: Orocos KDL's chain base -> tip of a URDF, read by
// kdl_parser (not by kiln's generator), for the tests and benches that compare against KDL.
// Needs the kiln_kdl target (cmake/KilnKdl.cmake).
#pragma once

#include <kdl/chain.hpp>
#include <kdl/tree.hpp>
#include <kdl_parser/kdl_parser.hpp>

#include <stdexcept>
#include <string>

namespace kiln_kdl {

// Throws std::runtime_error naming the step that failed and the URDF.
inline KDL::Chain chain_from_urdf(const std::string &urdf, const std::string &base, const std::string &tip) {
  KDL::Tree tree;
  if (!kdl_parser::treeFromFile(urdf, tree)) throw std::runtime_error("kdl_parser::treeFromFile failed on " + urdf);
  KDL::Chain chain;
  if (!tree.getChain(base, tip, chain)) {
    throw std::runtime_error("KDL::Tree::getChain(" + base + ", " + tip + ") failed on " + urdf);
  }
  return chain;
}

}  // namespace kiln_kdl
