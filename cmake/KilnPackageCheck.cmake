# CPACK_PROJECT_CONFIG_FILE: read by cpack, once per generator, before it packs.
if(CPACK_GENERATOR STREQUAL "DEB")
  # Debian puts libraries in the multiarch libdir; GNUInstallDirs gives it for the prefix /usr.
  if(CPACK_KILN_ARCH AND NOT CPACK_KILN_LIBDIR STREQUAL "lib/${CPACK_KILN_ARCH}")
    message(FATAL_ERROR "kiln: the Debian packages need the multiarch libdir lib/${CPACK_KILN_ARCH}, "
                        "this build installs to ${CPACK_KILN_LIBDIR}: configure it with -DCMAKE_INSTALL_PREFIX=/usr")
  endif()
  # dpkg-shlibdeps finds libkiln.so.<M>.<m> for the packages linking it in the library package's
  # staging folder (the exact Depends on that package is the component's DEPENDS).
  if(CPACK_KILN_LIB_PACKAGE_DIR)
    set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS
        "${CPACK_PACKAGE_DIRECTORY}/_CPack_Packages/${CPACK_SYSTEM_NAME}/DEB/${CPACK_PACKAGE_FILE_NAME}/lib/${CPACK_PACKAGING_INSTALL_PREFIX}/${CPACK_KILN_LIBDIR}")
  endif()
endif()
