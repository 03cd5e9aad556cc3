// The kiln CLI's verbs, one file each. add_<verb> adds the subcommand with its options to `app`
// and returns what runs it; main parses, runs the chosen verb and maps its errors to exit codes.
#pragma once

#include "common.hpp"

namespace kiln::cli {

Verb add_doctor(CLI::App &app, const Flags &flags);   // doctor.cpp
Verb add_publish(CLI::App &app, const Flags &flags);  // publish.cpp
Verb add_load(CLI::App &app, const Flags &flags);     // load.cpp
Verb add_ls(CLI::App &app, const Flags &flags);       // ls.cpp
Verb add_show(CLI::App &app, const Flags &flags);     // show.cpp
Verb add_build(CLI::App &app, const Flags &flags);    // build.cpp
Verb add_ensure(CLI::App &app, const Flags &flags);   // ensure.cpp
Verb add_swap(CLI::App &app, const Flags &flags);     // swap.cpp
Verb add_verify(CLI::App &app, const Flags &flags);   // verify.cpp
Verb add_gc(CLI::App &app, const Flags &flags);       // gc.cpp
Verb add_keygen(CLI::App &app, const Flags &flags);   // keygen.cpp
Verb add_key(CLI::App &app, const Flags &flags);      // key.cpp
Verb add_export(CLI::App &app, const Flags &flags);   // export.cpp
Verb add_import(CLI::App &app, const Flags &flags);   // import.cpp
Verb add_remote(CLI::App &app, const Flags &flags);   // remote.cpp
Verb add_robot(CLI::App &app, const Flags &flags);    // robot_init.cpp

}  // namespace kiln::cli
