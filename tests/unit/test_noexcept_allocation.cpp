// Functions that promise not to throw keep the promise when memory runs out
// (support/failure_point.hpp): an allocation failure inside them is an answer, not std::terminate.
#include <doctest/doctest.h>

#include <string>

#include "store/maintenance/verification_records.hpp"
#include "support/failure_point.hpp"
#include "support/fixtures.hpp"

using namespace kiln;
using namespace kiln::test;

TEST_CASE("noexcept: VerificationRecords::vouches answers no when an allocation fails") {
  TempDir dir;
  const store::VerificationRecords records(dir / "verified");
  const std::string key(32, 'a'), digest(32, 'b');
  support::ArmedFailure failure("store.vouches");
  CHECK_FALSE(records.vouches(key, files::FileIdentity{}, digest));
  CHECK(failure.fired());
}
