// kiln: every public header at once, for programs that use many concerns. Each header also
// stands alone; include only the ones you use to keep rebuilds small.
#pragma once

#include <kiln/bundle.hpp>
#include <kiln/cancel.hpp>
#include <kiln/dynamics.hpp>
#include <kiln/errors.hpp>
#include <kiln/gc.hpp>
#include <kiln/identity.hpp>
#include <kiln/json.hpp>
#include <kiln/kernels.hpp>
#include <kiln/keys.hpp>
#include <kiln/log.hpp>
#include <kiln/module.hpp>
#include <kiln/placement.hpp>
#include <kiln/realtime.hpp>
#include <kiln/recipe.hpp>
#include <kiln/remote.hpp>
#include <kiln/runtime.hpp>
#include <kiln/store.hpp>
#include <kiln/swap.hpp>
#include <kiln/toolchain.hpp>
#include <kiln/verify.hpp>
#include <kiln/version.hpp>
