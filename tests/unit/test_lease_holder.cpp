// Who holds a remote build lease (remote/lease_holder.hpp): a holder that is a gone process
// of this boot and pid namespace is known dead at once; anything else is not.
#include <doctest/doctest.h>

#include <unistd.h>

#include <fstream>
#include <vector>

#include "remote/lease_holder.hpp"
#include "support/fixtures.hpp"
#include "support/preconditions.hpp"

using kiln::remote::lease_holder_gone;
using kiln::remote::lease_holder_name;

namespace {

std::optional<std::string> no_proc_identity() {
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  char link[64];
  if (!boot || ::readlink("/proc/self/ns/pid", link, sizeof link) <= 0) {
    return std::string("/proc gives no boot id or pid namespace here: holders are never known dead (the 30 s rule applies)");
  }
  return std::nullopt;
}

std::vector<std::string> split(const std::string &text) {
  std::vector<std::string> fields;
  std::size_t start = 0;
  for (std::size_t colon; (colon = text.find(':', start)) != std::string::npos; start = colon + 1) {
    fields.push_back(text.substr(start, colon - start));
  }
  fields.push_back(text.substr(start));
  return fields;
}

std::string join(const std::vector<std::string> &fields) {
  std::string out;
  for (const auto &field : fields) out += (out.empty() ? "" : ":") + field;
  return out;
}

}  // namespace

TEST_CASE("lease holder: host, pid, random, boot id and pid namespace; only a gone process of this boot and pid "
          "namespace is gone" * kiln::test::skip_if(no_proc_identity)) {
  const std::string mine = lease_holder_name();
  std::vector<std::string> fields = split(mine);
  REQUIRE(fields.size() == 5);
  CHECK(fields[1] == std::to_string(::getpid()));
  CHECK(fields[3].size() == 36);
  CHECK_FALSE(lease_holder_gone(mine));  // this process lives

  const std::vector<std::string> dead = split(kiln::test::gone_lease_holder());
  REQUIRE(dead.size() == 5);
  CHECK(dead[1] != fields[1]);
  CHECK(lease_holder_gone(join(dead)));
  CHECK(lease_holder_gone(join(dead) + " 3"));  // HTTP's form: the holder, then its renewal count

  // A live process (our parent), another boot or another pid namespace: never known dead.
  std::vector<std::string> live = fields;
  live[1] = std::to_string(::getppid());
  CHECK_FALSE(lease_holder_gone(join(live)));
  std::vector<std::string> other_boot = dead;
  other_boot[3] = "00000000-0000-0000-0000-000000000000";
  CHECK_FALSE(lease_holder_gone(join(other_boot)));
  std::vector<std::string> other_namespace = dead;
  other_namespace[4] = "1";
  CHECK_FALSE(lease_holder_gone(join(other_namespace)));

  // A hostname holding ':' (sethostname allows it) is read from the right.
  std::vector<std::string> colon_host = dead;
  colon_host[0] = "rack:7";
  CHECK(lease_holder_gone(join(colon_host)));

  // Old-format, malformed and hostile names are never gone, and never signal anything.
  const std::string tail = ":" + fields[3] + ":" + fields[4];
  for (const std::string &name :
       {std::string(""), std::string("dead-holder"), "host:" + dead[1] + ":42", ":" + dead[1] + ":1" + tail,
        "host:0:1" + tail, "host:1:1" + tail, "host:-1:1" + tail, "host:" + std::to_string(::getpid()) + ":1" + tail,
        "host:" + dead[1] + ":x" + tail, "host::1" + tail, "host:99999999999:1" + tail, "host:" + dead[1] + "::" +
        fields[3] + ":" + fields[4], std::string("::::")}) {
    CAPTURE(name);
    CHECK_FALSE(lease_holder_gone(name));
  }
}
