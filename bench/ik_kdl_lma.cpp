#include "ik_kdl_lma.hpp"

#include <stdexcept>
#include <utility>

#if KILN_BENCH_HAVE_KDL
#include <kdl/chainfksolverpos_recursive.hpp>
#include <kdl/chainiksolverpos_lma.hpp>
#include <kdl/frames.hpp>
#include <kdl/jntarray.hpp>

#include "kiln_kdl_chain.hpp"
#endif

namespace kiln_bench_ik {

#if KILN_BENCH_HAVE_KDL

std::optional<std::string> kdl_unavailable() { return std::nullopt; }

namespace {
Eigen::Matrix<double, 6, 1> weights(double position_tolerance, double orientation_tolerance) {
  const double r = position_tolerance / orientation_tolerance;
  Eigen::Matrix<double, 6, 1> L;
  L << 1, 1, 1, r, r, r;
  return L;
}
}  // namespace

struct KdlLma::Impl {
  Impl(KDL::Chain c, double position_tolerance, double orientation_tolerance, unsigned max_iterations)
      : chain(std::move(c)),
        solver(chain, weights(position_tolerance, orientation_tolerance), position_tolerance,
               static_cast<int>(max_iterations)),
        fk(chain),
        q_init(chain.getNrOfJoints()),
        q_out(chain.getNrOfJoints()) {}
  KDL::Chain chain;  // before the solvers, which keep a reference to it
  KDL::ChainIkSolverPos_LMA solver;
  KDL::ChainFkSolverPos_recursive fk;
  KDL::JntArray q_init, q_out;
};

KdlLma::KdlLma(const std::string &urdf, const std::string &base, const std::string &tip, double position_tolerance,
               double orientation_tolerance, unsigned max_iterations)
    : impl_(new Impl(kiln_kdl::chain_from_urdf(urdf, base, tip), position_tolerance, orientation_tolerance,
                     max_iterations)) {}

KdlLma::~KdlLma() = default;

unsigned KdlLma::joints() const { return impl_->chain.getNrOfJoints(); }

int KdlLma::solve(const double *q_init, const double target[7], double *q_out, int &iterations) {
  const unsigned n = joints();
  for (unsigned j = 0; j < n; ++j) impl_->q_init(j) = q_init[j];
  const KDL::Frame goal(KDL::Rotation::Quaternion(target[4], target[5], target[6], target[3]),
                        KDL::Vector(target[0], target[1], target[2]));
  const int status = impl_->solver.CartToJnt(impl_->q_init, goal, impl_->q_out);
  for (unsigned j = 0; j < n; ++j) q_out[j] = impl_->q_out(j);
  iterations = impl_->solver.lastNrOfIter;
  return status;
}

void KdlLma::fk(const double *q, double p[3], double R[9]) const {
  KDL::JntArray joints(this->joints());
  for (unsigned j = 0; j < joints.rows(); ++j) joints(j) = q[j];
  KDL::Frame frame;
  if (impl_->fk.JntToCart(joints, frame) < 0) throw std::runtime_error("KDL::ChainFkSolverPos_recursive failed");
  for (int i = 0; i < 3; ++i) {
    p[i] = frame.p(i);
    for (int k = 0; k < 3; ++k) R[3 * i + k] = frame.M(i, k);
  }
}

#else

// Not found at configure time (cmake/KilnKdl.cmake).
std::optional<std::string> kdl_unavailable() { return std::string("KDL not found"); }

struct KdlLma::Impl {};
KdlLma::KdlLma(const std::string &, const std::string &, const std::string &, double, double, unsigned) {
  throw std::runtime_error(*kdl_unavailable());
}
KdlLma::~KdlLma() = default;
unsigned KdlLma::joints() const { return 0; }
int KdlLma::solve(const double *, const double *, double *, int &iterations) {
  iterations = 0;
  return -1;
}
void KdlLma::fk(const double *, double *, double *) const {}

#endif

}  // namespace kiln_bench_ik
