# cpack -G DEB: two Debian packages from the install components (cmake/KilnInstall.cmake).
#   kiln      the CLI, and libkiln.so.<major>.<minor> where KILN_SHARED is on; run-time
#             dependencies from dpkg-shlibdeps
#   kiln-dev  include/kiln (API and plugin ABI), the CMake package, kiln.pc, libkiln.a or the
#             libkiln.so link; depends on kiln of the same version and on what kilnConfig.cmake
#             finds (find_dependency)
# Installed with `apt-get install ./kiln_*.deb ./kiln-dev_*.deb`; scripts/test-install does it.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME kiln)
set(CPACK_PACKAGE_VENDOR "kiln")
set(CPACK_PACKAGE_CONTACT "kiln developers <kiln@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "GPU solver artifacts into a robot controller's process, fast and safely")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)  # the packages carry no debug info (and no build-tree paths inside it)

set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime dev)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # kiln_0.1.0_amd64.deb, kiln-dev_0.1.0_amd64.deb
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME kiln)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SHLIBDEPS ON)
if(KILN_PYTHON_VERSION)  # the extension is built for one CPython minor (python/), which shlibdeps cannot see
  string(REGEX REPLACE "^([0-9]+)\\.([0-9]+)$" "\\1.\\2.999" _kiln_python_below "${KILN_PYTHON_VERSION}")
  set(CPACK_DEBIAN_RUNTIME_PACKAGE_DEPENDS "python3 (>= ${KILN_PYTHON_VERSION}), python3 (<< ${_kiln_python_below})")
  set(CPACK_DEBIAN_RUNTIME_PACKAGE_RECOMMENDS "python3-numpy")
endif()
set(CPACK_DEBIAN_DEV_PACKAGE_NAME kiln-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_COMPONENT_DEV_DEPENDS runtime)
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)  # kiln-dev: Depends kiln (= version)
set(_kiln_dev_depends "nlohmann-json3-dev (>= 3.10)")
if(NOT KILN_SHARED)  # a static libkiln brings what it links into the host program's link
  string(APPEND _kiln_dev_depends ", libboost-filesystem-dev (>= 1.74), libarchive-dev, libsodium-dev, pkg-config")
endif()
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "${_kiln_dev_depends}")
unset(_kiln_dev_depends)
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION
    "kiln resolves a named GPU artifact from a manifest, checks it against the live GPU, loads it\nand binds a versioned C ABI; it builds a missing artifact exactly once.")
set(CPACK_COMPONENT_DEV_DESCRIPTION
    "Headers, CMake package (find_package(kiln): kiln::runtime, kiln::abi, kiln_add_plugin) and\npkg-config file for host programs and plugins using kiln.")
include(CPack)
