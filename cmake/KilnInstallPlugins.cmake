# kiln's data directory, <prefix>/share/kiln, what `kiln robot init` writes recipes from
# (src/cli/robot_init.cpp): the recipe templates (templates/*.json.tmpl) and the plugin sources
# they point at (plugins/ik, plugins/trajopt, plugins/common, in the source tree's layout: the
# TrajOpt module finds ../solver and ../../common), plus bin/kiln-urdf-fk, which the recipes'
# generator steps run. All in the "plugins" component. Included from plugins/CMakeLists.txt once
# the plugin targets exist, or, with KILN_BUILD_ROBOT_KIT and no plugins built, from the top
# level after plugins/robotgen (kiln-urdf-fk).
#
# A build tree has no share/kiln of its own: <build>/share/kiln/kiln-data.json (next to the kiln
# executable's ../share/kiln) names the source tree's templates and plugins and the build's
# kiln-urdf-fk, so `kiln robot init` from a build tree uses them.
include(GNUInstallDirs)
include(KilnRecipeJson)

set(KILN_DATA_INSTALL_DIR "${CMAKE_INSTALL_DATADIR}/kiln")
set(_kiln_plugins_src "${PROJECT_SOURCE_DIR}/plugins")

install(DIRECTORY "${_kiln_plugins_src}/templates/" DESTINATION "${KILN_DATA_INSTALL_DIR}/templates"
        COMPONENT plugins FILES_MATCHING PATTERN "*.json.tmpl")
install(DIRECTORY "${_kiln_plugins_src}/common/" DESTINATION "${KILN_DATA_INSTALL_DIR}/plugins/common"
        COMPONENT plugins)
install(DIRECTORY "${_kiln_plugins_src}/ik/solver" "${_kiln_plugins_src}/ik/common"
        DESTINATION "${KILN_DATA_INSTALL_DIR}/plugins/ik" COMPONENT plugins)
install(DIRECTORY "${_kiln_plugins_src}/trajopt/module" "${_kiln_plugins_src}/trajopt/solver"
                  "${_kiln_plugins_src}/trajopt/common"
        DESTINATION "${KILN_DATA_INSTALL_DIR}/plugins/trajopt" COMPONENT plugins)
if(TARGET kiln-urdf-fk)
  install(TARGETS kiln-urdf-fk RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}" COMPONENT plugins)
endif()

set(_kiln_data_urdf_fk "")
if(TARGET kiln-urdf-fk)
  set(_kiln_data_urdf_fk "$<TARGET_FILE:kiln-urdf-fk>")
endif()
kiln_recipe_json_escape(_kiln_data_src "${_kiln_plugins_src}")
file(GENERATE OUTPUT "$<TARGET_FILE_DIR:kiln>/../share/kiln/kiln-data.json"
     CONTENT "{\n  \"templates\": \"${_kiln_data_src}/templates\",\n  \"plugins\": \"${_kiln_data_src}\",\n  \"urdf_fk\": \"${_kiln_data_urdf_fk}\"\n}\n")
