# cmake --install: the library, the CLI, the headers (include/kiln and the plugin ABI abi/kiln,
# both under <prefix>/include/kiln), a CMake package (find_package(kiln CONFIG): kiln::runtime,
# kiln::abi, kiln_add_plugin) and kiln.pc. Nothing installed refers back to the source or build
# tree: the ABI headers builds compile against are inside the library (builder/abi_headers.hpp).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(KILN_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/kiln)

set_target_properties(kiln_runtime PROPERTIES EXPORT_NAME runtime)
if(KILN_SHARED)
  # The installed CLI finds the installed libkiln wherever the prefix was moved to.
  file(RELATIVE_PATH _kiln_lib_from_bin ${CMAKE_INSTALL_FULL_BINDIR} ${CMAKE_INSTALL_FULL_LIBDIR})
  set_target_properties(kiln PROPERTIES INSTALL_RPATH "$ORIGIN/${_kiln_lib_from_bin}")
endif()
# Install components, one Debian package each (cmake/KilnPackage.cmake maps them); an install
# rule names the component of what it installs:
#   runtime  the CLI (bin/kiln), its man page and completion, the Python binding    -> kiln
#   lib      libkiln.so.<major>.<minor> (KILN_SHARED)                              -> libkiln<major>.<minor>
#   remote   <libdir>/kiln/libkiln-remote.so, the remote backends (libcurl, hiredis) -> kiln-remote
#   dev      headers, CMake package, kiln.pc, libkiln.a or the libkiln.so link     -> kiln-dev
#   plugins  the plugin sources and recipe templates (share/kiln/plugins,
#            share/kiln/templates) and their generator bin/kiln-urdf-fk            -> kiln-plugins
install(TARGETS kiln_runtime EXPORT kilnTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT lib NAMELINK_COMPONENT dev
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS kiln RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
# The remote backends' module, where libkiln looks for it (src/remote/backend_module.hpp); a
# package of its own, so an install without remote caches pulls neither curl nor hiredis.
install(TARGETS kiln_remote_backends LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/kiln COMPONENT remote)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/kiln ${PROJECT_SOURCE_DIR}/abi/kiln
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)
install(FILES ${PROJECT_SOURCE_DIR}/abi/README.md DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/kiln-dev
        RENAME abi.md COMPONENT dev)  # the doc folder of the package it is in

install(EXPORT kilnTargets NAMESPACE kiln:: DESTINATION ${KILN_INSTALL_CMAKEDIR} COMPONENT dev)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/kilnConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/kilnConfig.cmake
                              INSTALL_DESTINATION ${KILN_INSTALL_CMAKEDIR}
                              PATH_VARS CMAKE_INSTALL_INCLUDEDIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/kilnConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)  # 0.x: a minor release may break the API
install(FILES ${PROJECT_BINARY_DIR}/kilnConfig.cmake ${PROJECT_BINARY_DIR}/kilnConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/KilnCuda.cmake
        DESTINATION ${KILN_INSTALL_CMAKEDIR} COMPONENT dev)

# pkg-config: a static libkiln's own dependencies are Libs.private and Requires.private
# (pkg-config --static --libs kiln), libarchive's and libsodium's with their own private libraries.
# Debian's libarchive-dev does not bring the -dev packages of those (-lacl, -lzstd, -llz4): each is
# looked up here, a missing one named, and the packages holding them are what kiln-dev depends on.
if(NOT KILN_SHARED)
  set(KILN_STATIC_LINK_DEV_PACKAGES)
  foreach(_lib IN LISTS LIBARCHIVE_STATIC_LIBRARIES SODIUM_STATIC_LIBRARIES)
    find_library(KILN_STATIC_LINK_${_lib} NAMES ${_lib} HINTS ${LIBARCHIVE_STATIC_LIBRARY_DIRS})
    if(NOT KILN_STATIC_LINK_${_lib})
      message(WARNING "kiln: pkg-config --static --libs kiln names -l${_lib}, which is not installed: a "
                      "program linking the static libkiln through pkg-config will not link (Debian: install "
                      "the -dev package of lib${_lib}, e.g. libacl1-dev, libzstd-dev, liblz4-dev)")
      continue()
    endif()
    find_program(KILN_DPKG_QUERY dpkg-query)
    if(KILN_DPKG_QUERY)
      execute_process(COMMAND ${KILN_DPKG_QUERY} -S ${KILN_STATIC_LINK_${_lib}} OUTPUT_VARIABLE _owner
                      ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
      string(REGEX REPLACE ":.*" "" _owner "${_owner}")
      if(_owner AND NOT _owner IN_LIST KILN_STATIC_LINK_DEV_PACKAGES)
        list(APPEND KILN_STATIC_LINK_DEV_PACKAGES ${_owner})
      endif()
    endif()
  endforeach()
  list(SORT KILN_STATIC_LINK_DEV_PACKAGES)
  list(JOIN KILN_STATIC_LINK_DEV_PACKAGES ", " KILN_STATIC_LINK_DEV_PACKAGES)
endif()
file(RELATIVE_PATH KILN_PC_TO_PREFIX ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
configure_file(${PROJECT_SOURCE_DIR}/cmake/kiln.pc.in ${PROJECT_BINARY_DIR}/kiln.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/kiln.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)

# The bash completion and kiln(1) the build wrote with the built kiln (src/CMakeLists.txt; not in
# a cross build).
if(TARGET kiln_cli_files)
  install(FILES ${PROJECT_BINARY_DIR}/completions/kiln DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
          COMPONENT runtime)
  install(FILES ${PROJECT_BINARY_DIR}/kiln.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT runtime)
endif()
