# cpack -G DEB: one Debian package per install component (cmake/KilnInstall.cmake lists them),
# laid out as Debian policy asks: lintian reports no error on them (scripts/test-install).
#   kiln            the CLI (and the Python binding where built); Recommends kiln-remote
#   libkiln<M>.<m>  libkiln.so.<M>.<m> (KILN_SHARED), named after its soname; shlibs, and the
#                   ldconfig trigger
#   kiln-remote     the remote backends' module: libcurl and hiredis come only with it
#   kiln-dev        headers, CMake package, kiln.pc, libkiln.a or the libkiln.so link
#   kiln-plugins    plugin sources, recipe templates and kiln-urdf-fk (where installed): what
#                   generating and building plugins needs, apart from what host programs need
# Each has its copyright (DEP-5) and changelog.Debian.gz in /usr/share/doc/<package>.
# Configure with -DCMAKE_INSTALL_PREFIX=/usr (GNUInstallDirs then gives the multiarch libdir,
# lib/<triplet>); cpack refuses another libdir. Installed with `apt-get install ./*.deb`.
set(KILN_PACKAGE_MAINTAINER "kiln maintainers <maintainers@users.noreply.a-seed-fc529632.example>"
    CACHE STRING "The Maintainer of kiln's Debian packages: \"Name <address>\"")
set(KILN_PACKAGE_RELEASE 1 CACHE STRING "The Debian revision of kiln's packages (0.1.0-<this>)")
set(KILN_PACKAGE_VERSION ${PROJECT_VERSION}-${KILN_PACKAGE_RELEASE})

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME kiln)
set(CPACK_PACKAGE_VENDOR "kiln")
set(CPACK_PACKAGE_CONTACT "${KILN_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${KILN_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_RELEASE ${KILN_PACKAGE_RELEASE})
# No CPACK_PACKAGE_DESCRIPTION_SUMMARY: each package's description starts with its own synopsis.
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)  # the packages carry no debug info (and no build-tree paths inside it)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # kiln_0.1.0-1_amd64.deb, libkiln0.1_0.1.0-1_amd64.deb, ...
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)  # a component's DEPENDS: Depends <package> (= version)
# cpack refuses a libdir off the multiarch one (cmake/KilnPackageCheck.cmake, at cpack time).
set(CPACK_KILN_LIBDIR ${CMAKE_INSTALL_LIBDIR})
set(CPACK_KILN_ARCH ${CMAKE_LIBRARY_ARCHITECTURE})
set(CPACK_PROJECT_CONFIG_FILE ${PROJECT_SOURCE_DIR}/cmake/KilnPackageCheck.cmake)

# The packages of the components that have install rules here (kiln-plugins only where its
# files are installed, libkiln<M>.<m> only with KILN_SHARED).
get_cmake_property(_kiln_components COMPONENTS)
set(CPACK_COMPONENTS_ALL)
foreach(_c IN ITEMS runtime lib remote dev plugins)
  if(_c IN_LIST _kiln_components)
    list(APPEND CPACK_COMPONENTS_ALL ${_c})
  endif()
endforeach()
set(_kiln_lib_package libkiln${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})  # soname libkiln.so.0.1
set(_kiln_exact "(= ${KILN_PACKAGE_VERSION})")
# libkiln.so and the remote module were in the kiln package before 0.1.0-1.
set(_kiln_moved_out "kiln (<< 0.1.0-1)")

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME kiln)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_RECOMMENDS "kiln-remote ${_kiln_exact}")
if(KILN_PYTHON_VERSION)  # the extension is built for one CPython minor (python/), which shlibdeps cannot see
  string(REGEX REPLACE "^([0-9]+)\\.([0-9]+)$" "\\1.\\2.999" _kiln_python_below "${KILN_PYTHON_VERSION}")
  set(CPACK_DEBIAN_RUNTIME_PACKAGE_DEPENDS "python3 (>= ${KILN_PYTHON_VERSION}), python3 (<< ${_kiln_python_below})")
  string(APPEND CPACK_DEBIAN_RUNTIME_PACKAGE_RECOMMENDS ", python3-numpy")
endif()
# Descriptions: a synopsis, then lines of at most 79 characters (cpack does not wrap them).
set(_kiln_about "kiln resolves a named GPU artifact from a manifest, checks it against the live\nGPU, loads it and binds a versioned C ABI; it builds a missing artifact\nexactly once.")
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION
    "GPU solver plugins into a robot controller's process (command line)\n${_kiln_about}\nThis package holds the kiln command and the Python binding.")

set(CPACK_DEBIAN_LIB_PACKAGE_NAME ${_kiln_lib_package})
set(CPACK_DEBIAN_LIB_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)  # a shlibs line for each library with a soname: libkiln's
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
set(CPACK_DEBIAN_LIB_PACKAGE_CONTROL_EXTRA ${PROJECT_SOURCE_DIR}/cmake/debian/triggers)  # ldconfig
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_DEBIAN_LIB_PACKAGE_RECOMMENDS "kiln-remote ${_kiln_exact}")
set(CPACK_DEBIAN_LIB_PACKAGE_BREAKS "${_kiln_moved_out}")
set(CPACK_DEBIAN_LIB_PACKAGE_REPLACES "${_kiln_moved_out}")
set(CPACK_COMPONENT_LIB_DESCRIPTION
    "GPU solver plugins into a robot controller's process (library)\n${_kiln_about}\nThis package holds the shared library host programs link.")

set(CPACK_DEBIAN_REMOTE_PACKAGE_NAME kiln-remote)
set(CPACK_DEBIAN_REMOTE_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_REMOTE_PACKAGE_BREAKS "${_kiln_moved_out}")
set(CPACK_DEBIAN_REMOTE_PACKAGE_REPLACES "${_kiln_moved_out}")
set(CPACK_COMPONENT_REMOTE_DESCRIPTION
    "kiln's remote artifact caches (HTTP and Redis backends)\nThe module libkiln loads on a build's first remote use, with libcurl and\nhiredis. Without it kiln loads and builds with no remote cache.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME kiln-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(_kiln_dev_depends "nlohmann-json3-dev (>= 3.10), pkg-config")
if(NOT KILN_SHARED)  # a static libkiln brings what it links (and libarchive's own libraries) into the link
  string(APPEND _kiln_dev_depends ", libboost-filesystem-dev (>= 1.74)")
  if(KILN_STATIC_LINK_DEV_PACKAGES)  # cmake/KilnInstall.cmake: what pkg-config --static --libs kiln names
    string(APPEND _kiln_dev_depends ", ${KILN_STATIC_LINK_DEV_PACKAGES}")
  else()
    string(APPEND _kiln_dev_depends ", libarchive-dev, libsodium-dev")
  endif()
endif()
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "${_kiln_dev_depends}")
set(CPACK_COMPONENT_DEV_DESCRIPTION
    "GPU solver plugins into a robot controller's process (development files)\nHeaders, CMake package (find_package(kiln): kiln::runtime, kiln::abi,\nkiln_add_plugin) and pkg-config file for host programs and plugins using kiln.")

set(CPACK_DEBIAN_PLUGINS_PACKAGE_NAME kiln-plugins)
set(CPACK_DEBIAN_PLUGINS_PACKAGE_SECTION devel)
set(CPACK_COMPONENT_PLUGINS_DESCRIPTION
    "kiln's solver plugin sources, recipe templates and URDF generator\nThe sources of kiln's solver plugins (IK, trajectory optimisation), the recipe\ntemplates and kiln-urdf-fk, which generates a robot's kinematics from its\nURDF: what `kiln robot init` and `kiln build` need to make plugins for a robot.")

if(KILN_SHARED)
  set(CPACK_COMPONENT_RUNTIME_DEPENDS lib)
  set(CPACK_COMPONENT_REMOTE_DEPENDS lib)
  set(CPACK_COMPONENT_DEV_DEPENDS lib runtime)
  set(CPACK_KILN_LIB_PACKAGE_DIR ON)  # cmake/KilnPackageCheck.cmake: where dpkg-shlibdeps finds libkiln
else()
  set(CPACK_COMPONENT_DEV_DEPENDS runtime)
endif()
set(CPACK_COMPONENT_PLUGINS_DEPENDS runtime)

# /usr/share/doc/<package>/{copyright,changelog.Debian.gz}: in the packages only (EXCLUDE_FROM_ALL
# keeps them out of `cmake --install`, cpack installs each component by name).
string(TIMESTAMP KILN_PACKAGE_DATE "%a, %d %b %Y %H:%M:%S +0000" UTC)  # SOURCE_DATE_EPOCH when set
configure_file(${PROJECT_SOURCE_DIR}/cmake/debian/copyright.in ${PROJECT_BINARY_DIR}/debian/copyright @ONLY)
configure_file(${PROJECT_SOURCE_DIR}/cmake/debian/changelog.in ${PROJECT_BINARY_DIR}/debian/changelog @ONLY)
execute_process(COMMAND gzip -9nc ${PROJECT_BINARY_DIR}/debian/changelog
                OUTPUT_FILE ${PROJECT_BINARY_DIR}/debian/changelog.Debian.gz COMMAND_ERROR_IS_FATAL ANY)
foreach(_c IN LISTS CPACK_COMPONENTS_ALL)
  string(TOUPPER ${_c} _C)
  install(FILES ${PROJECT_BINARY_DIR}/debian/copyright ${PROJECT_BINARY_DIR}/debian/changelog.Debian.gz
          DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${CPACK_DEBIAN_${_C}_PACKAGE_NAME}
          COMPONENT ${_c} EXCLUDE_FROM_ALL)
endforeach()
unset(_kiln_components)
unset(_kiln_about)
unset(_kiln_dev_depends)
include(CPack)
