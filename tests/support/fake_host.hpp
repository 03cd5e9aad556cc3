// What a plugin sees of kiln's host, without a Runtime: a kiln_host_services table whose
// get_service answers from a HostKernelsService the test sets up.
#pragma once

#include <kiln/host.h>

#include "load/host_kernels.hpp"

namespace kiln::test {

struct FakeHost {
  load::HostKernelsService *service = nullptr;
  kiln_host_services host{};
  FakeHost() {
    host.struct_size = sizeof(kiln_host_services);
    host.host_data = this;
    host.host_name = "kiln-test";
    host.host_version = "0";
    host.get_service = [](const kiln_host_services *h, const char *id) -> const void * {
      return static_cast<const FakeHost *>(h->host_data)->service->get_service(id);
    };
  }
};

}  // namespace kiln::test
