// Who holds a cross-machine build lease (RemoteCache::claim), as written into the lease:
// "<host>:<pid>:<random>:<boot id>:<pid namespace>".
//
// The last two let a waiter tell that a holder is a process it can see: the same boot of the same
// kernel (the boot id is random per boot) and the same pid namespace. Such a holder that no longer
// exists (killed, crashed, OOM-killed mid-build) is known dead at once, so a restarted controller
// does not wait out the lease's 30 s without renewal for its own dead predecessor. Hostnames do not
// decide it: they repeat across a fleet cloned from one image, and containers may share the host's.
#pragma once

#include <string>

namespace kiln::remote {

// This process's holder name (host, pid and a random number; then boot id and pid namespace
// where /proc gives them).
std::string lease_holder_name();

// True only when `holder` (a lease's current text: the name, then anything after a space) names a
// process of this boot and pid namespace that does not exist. Anything else -- another machine or
// container, an old-format or malformed name, a process that lives -- is false: the caller waits
// for the lease's renewals to stop instead.
bool lease_holder_gone(const std::string &holder);

}  // namespace kiln::remote
