# kiln IK plugin, split form (plugins/ik/README.md, "Split form"): the host part as a CMake target.
#
#   kiln_ik_split_plugin(<target> ROBOT <name> CHAIN_DIR <dir> KERNELS <artifact> [CONSUMER <c>])
#
# builds solver/ik_split_plugin.cpp with the C++ compiler alone (g++, or aarch64-linux-gnu-g++ in a
# cross build): no nvcc, no CUDA library linked, cuda.h for types only (kiln_cuda_headers, which
# kiln itself needs too, so every tree that builds kiln has it). <dir>/kiln_fk_chain.cuh is the
# robot's generated chain (kiln-urdf-fk's output: generated C++ text, the same for every target
# machine, so a cross build may take it from a native build). KERNELS names the device-image
# artifact (recipes/<robot>-split-kernels.json.in) the host part asks its host for at activate.
include_guard(GLOBAL)

set(KILN_IK_SOLVER_DIR "${CMAKE_CURRENT_LIST_DIR}/solver")
set(KILN_IK_COMMON_DIR "${CMAKE_CURRENT_LIST_DIR}/common")
# what kiln.ik shares with kiln.trajopt
get_filename_component(KILN_PLUGIN_COMMON_DIR "${CMAKE_CURRENT_LIST_DIR}/../common" ABSOLUTE)

function(kiln_ik_split_plugin target)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "ROBOT;CHAIN_DIR;KERNELS;CONSUMER" "")
  if(ARG_UNPARSED_ARGUMENTS OR NOT ARG_ROBOT OR NOT ARG_CHAIN_DIR OR NOT ARG_KERNELS)
    message(FATAL_ERROR "kiln_ik_split_plugin(${target} ROBOT <name> CHAIN_DIR <dir> KERNELS <artifact> [CONSUMER <c>])")
  endif()
  if(NOT ARG_CONSUMER)
    set(ARG_CONSUMER kiln-ik)
  endif()
  kiln_add_plugin(${target} SOURCES "${KILN_IK_SOLVER_DIR}/ik_split_plugin.cpp" "${ARG_CHAIN_DIR}/kiln_fk_chain.cuh"
    DEFINITIONS "KILN_IK_PLUGIN_ID=\"org.kiln.ik.${ARG_ROBOT}\"" "KILN_IK_KERNELS_CONSUMER=\"${ARG_CONSUMER}\""
                "KILN_IK_KERNELS_NAME=\"${ARG_KERNELS}\"")
  target_include_directories(${target} PRIVATE "${ARG_CHAIN_DIR}" "${KILN_IK_SOLVER_DIR}" "${KILN_IK_COMMON_DIR}"
                                                     "${KILN_PLUGIN_COMMON_DIR}")
  target_link_libraries(${target} PRIVATE kiln_cuda_headers)
  set_source_files_properties("${ARG_CHAIN_DIR}/kiln_fk_chain.cuh" PROPERTIES HEADER_FILE_ONLY ON)
endfunction()
