# cmake --install: the library, the CLI, the headers (include/kiln and the plugin ABI abi/kiln,
# both under <prefix>/include/kiln), a CMake package (find_package(kiln CONFIG): kiln::runtime,
# kiln::abi, kiln_add_plugin) and kiln.pc. Nothing installed refers back to the source or build
# tree: the ABI headers builds compile against are inside the library (builder/abi_headers.hpp).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(KILN_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/kiln)

set_target_properties(kiln_runtime PROPERTIES EXPORT_NAME runtime)
install(TARGETS kiln_runtime EXPORT kilnTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS kiln RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/kiln ${PROJECT_SOURCE_DIR}/abi/kiln
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_SOURCE_DIR}/abi/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR} RENAME abi.md)

install(EXPORT kilnTargets NAMESPACE kiln:: DESTINATION ${KILN_INSTALL_CMAKEDIR})
set(KILN_SHARED OFF)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/kilnConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/kilnConfig.cmake
                              INSTALL_DESTINATION ${KILN_INSTALL_CMAKEDIR}
                              PATH_VARS CMAKE_INSTALL_INCLUDEDIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/kilnConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)  # 0.x: a minor release may break the API
install(FILES ${PROJECT_BINARY_DIR}/kilnConfig.cmake ${PROJECT_BINARY_DIR}/kilnConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/KilnCuda.cmake
        DESTINATION ${KILN_INSTALL_CMAKEDIR})

# pkg-config: libkiln is static, so a host links what it links (pkg-config --static --libs kiln).
configure_file(${PROJECT_SOURCE_DIR}/cmake/kiln.pc.in ${PROJECT_BINARY_DIR}/kiln.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/kiln.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
