# Orocos KDL and kdl_parser, the independent reference the generated robot models are checked
# and benchmarked against (tests/robotgen, bench/ik_bench). Optional: where they are missing,
# whoever uses them skips visibly.
#
#   include(KilnKdl)
#   KILN_HAVE_KDL      1 when found, else 0
#   KILN_KDL_MISSING   what was not found (empty when found)
#   kiln_kdl           INTERFACE target (when found): KDL's, kdl_parser's and TinyXML's headers
#                      as system headers (no kiln warnings), the two libraries, and
#                      plugins/robotgen/kdl (kiln_kdl_chain.hpp: the chain base -> tip of a URDF)
#
# Debian: liborocos-kdl-dev, libkdl-parser-dev, whose kdl_parser.hpp also includes tinyxml.h
# (libtinyxml-dev). Found by path, not find_package(kdl_parser): Debian's kdl_parserConfig.cmake
# is catkin's and requires urdf -> pluginlib -> ament_cmake, which stops configuration with a
# fatal error (no ament_package Python module) even under QUIET. There are no static archives of
# either: a binary linking kiln_kdl needs liborocos-kdl.so.1.5 and libkdl_parser.so.1d (and what
# they load: `ldd`) where it runs.
# No include guard: every directory that includes this gets the variables in its own scope (the
# find_* results are cached, so a second include costs nothing); the target is made once.

find_package(orocos_kdl CONFIG QUIET)
find_path(KILN_KDL_INCLUDE_DIR kdl/chainidsolver_recursive_newton_euler.hpp HINTS ${orocos_kdl_INCLUDE_DIRS})
find_library(KILN_KDL_LIBRARY NAMES orocos-kdl)
find_path(KILN_KDL_PARSER_INCLUDE_DIR kdl_parser/kdl_parser.hpp)
find_library(KILN_KDL_PARSER_LIBRARY NAMES kdl_parser)
find_path(KILN_TINYXML_INCLUDE_DIR tinyxml.h)
find_path(KILN_TINYXML2_INCLUDE_DIR tinyxml2.h)
set(KILN_KDL_MISSING "")
foreach(_var KILN_KDL_INCLUDE_DIR KILN_KDL_LIBRARY KILN_KDL_PARSER_INCLUDE_DIR KILN_KDL_PARSER_LIBRARY
             KILN_TINYXML_INCLUDE_DIR KILN_TINYXML2_INCLUDE_DIR)
  if(NOT ${_var})
    list(APPEND KILN_KDL_MISSING ${_var})
  endif()
endforeach()
unset(_var)

if(KILN_KDL_MISSING)
  set(KILN_HAVE_KDL 0)
else()
  set(KILN_HAVE_KDL 1)
endif()
# Once per configuration: the message and the target.
get_property(_kiln_kdl_done GLOBAL PROPERTY KILN_KDL_DONE)
if(NOT _kiln_kdl_done)
  set_property(GLOBAL PROPERTY KILN_KDL_DONE TRUE)
  if(KILN_HAVE_KDL)
    message(STATUS "Orocos KDL: ${KILN_KDL_LIBRARY}, ${KILN_KDL_PARSER_LIBRARY}")
    add_library(kiln_kdl INTERFACE)
    target_include_directories(kiln_kdl SYSTEM INTERFACE ${KILN_KDL_INCLUDE_DIR} ${KILN_KDL_PARSER_INCLUDE_DIR}
                                                         ${KILN_TINYXML_INCLUDE_DIR} ${KILN_TINYXML2_INCLUDE_DIR})
    target_include_directories(kiln_kdl INTERFACE "${CMAKE_CURRENT_LIST_DIR}/../plugins/robotgen/kdl")
    target_link_libraries(kiln_kdl INTERFACE ${KILN_KDL_PARSER_LIBRARY} ${KILN_KDL_LIBRARY})
  else()
    message(STATUS "Orocos KDL not found (${KILN_KDL_MISSING}): its comparisons will be skipped "
                   "(install liborocos-kdl-dev libkdl-parser-dev libtinyxml-dev: scripts/install-deps)")
  endif()
endif()
unset(_kiln_kdl_done)
