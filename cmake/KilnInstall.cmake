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
# Two components, the two Debian packages (cmake/KilnPackage.cmake): runtime (the CLI and a
# shared libkiln) and dev (headers, CMake package, kiln.pc, the static library or the .so link).
install(TARGETS kiln_runtime EXPORT kilnTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT dev
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS kiln RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
# The remote backends' module, where libkiln looks for it (src/remote/backend_module.hpp).
install(TARGETS kiln_remote_backends LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/kiln COMPONENT runtime)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/kiln ${PROJECT_SOURCE_DIR}/abi/kiln
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)
install(FILES ${PROJECT_SOURCE_DIR}/abi/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR} RENAME abi.md
        COMPONENT dev)

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

# pkg-config: a static libkiln's own dependencies are Libs.private (pkg-config --static --libs kiln).
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
