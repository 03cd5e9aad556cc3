# CUDA for kiln plugins, and kiln_add_plugin().
#
#   include(KilnCuda)
#   kiln_add_plugin(<target> SOURCES <src>... [CUDA_ARCHS <arch>...] [DEFINITIONS <def>...])
#
# A plugin is a MODULE library built to be loaded and unloaded by kiln (abi/README.md, "Build
# rules"): C++17, hidden visibility, no gnu-unique symbols, no undefined symbols, the CUDA
# runtime linked statically (cudart_static: the plugin needs nothing beyond the system and
# the driver), and never -z nodelete. After each link a check runs (this file in script mode)
# that fails the build, and deletes the file, unless the only exported symbol is
# kiln_plugin_negotiate, no symbol is gnu-unique ("u") and the object is not marked NODELETE.
#
# CUDA_ARCHS takes CMAKE_CUDA_ARCHITECTURES form ("90" = sm_90 SASS + compute_90 PTX,
# "90-real", "87-real;90"); the default is the cache variable KILN_PLUGIN_CUDA_ARCHS.

# ---------------------------------------------------------------------------------------------
# Script mode: cmake -DKILN_CHECK_PLUGIN=<file> -DKILN_NM=<nm> [-DKILN_READELF=<readelf>] -P KilnCuda.cmake
if(CMAKE_SCRIPT_MODE_FILE AND DEFINED KILN_CHECK_PLUGIN)
  set(_file "${KILN_CHECK_PLUGIN}")
  if(NOT KILN_NM)
    set(KILN_NM nm)
  endif()
  set(_problems "")

  execute_process(COMMAND "${KILN_NM}" -D --defined-only "${_file}"
                  RESULT_VARIABLE _rc OUTPUT_VARIABLE _defined ERROR_VARIABLE _err)
  if(NOT _rc EQUAL 0)
    string(APPEND _problems "\n  '${KILN_NM} -D --defined-only' failed (${_rc}): ${_err}")
  endif()
  execute_process(COMMAND "${KILN_NM}" -D "${_file}"
                  RESULT_VARIABLE _rc OUTPUT_VARIABLE _all ERROR_VARIABLE _err)
  if(NOT _rc EQUAL 0)
    string(APPEND _problems "\n  '${KILN_NM} -D' failed (${_rc}): ${_err}")
  endif()

  # Lines look like "0000000000001139 T kiln_plugin_negotiate" (defined) or
  # "                 U malloc@GLIBC_2.2.5" (undefined; only in the full listing).
  set(_negotiate_found FALSE)
  string(REPLACE "\n" ";" _lines "${_defined}")
  foreach(_line IN LISTS _lines)
    if(_line MATCHES "^[0-9a-fA-F]* *([A-Za-z?]) (.+)$")
      set(_type "${CMAKE_MATCH_1}")
      set(_name "${CMAKE_MATCH_2}")
      if(_name STREQUAL "kiln_plugin_negotiate" AND _type STREQUAL "T")
        set(_negotiate_found TRUE)
      elseif(_type MATCHES "^[BCDGRSTVWi]$")
        # ("u" is reported below; "A" is a version node, not code or data.)
        string(APPEND _problems "\n  exports '${_name}' (nm type ${_type}); only kiln_plugin_negotiate may be exported")
      endif()
    endif()
  endforeach()
  if(NOT _negotiate_found)
    string(APPEND _problems "\n  does not export kiln_plugin_negotiate as a function (use KILN_PLUGIN from kiln/plugin.hpp)")
  endif()

  string(REPLACE "\n" ";" _lines "${_all}")
  foreach(_line IN LISTS _lines)
    if(_line MATCHES "^[0-9a-fA-F ]* u (.+)$")
      string(APPEND _problems "\n  gnu-unique symbol '${CMAKE_MATCH_1}' (build with -fno-gnu-unique): the file could never be unloaded")
    endif()
  endforeach()

  if(KILN_READELF)
    execute_process(COMMAND "${KILN_READELF}" -d "${_file}"
                    RESULT_VARIABLE _rc OUTPUT_VARIABLE _dynamic ERROR_VARIABLE _err)
    if(_rc EQUAL 0 AND _dynamic MATCHES "FLAGS_1[^\n]*NODELETE")
      string(APPEND _problems "\n  is marked NODELETE (linked with -z nodelete): it could never be unloaded")
    endif()
  endif()

  if(_problems)
    file(REMOVE "${_file}")  # so that the next build links and checks it again
    message(FATAL_ERROR "kiln plugin check failed for ${_file}:${_problems}\n"
                        "The file was deleted. See abi/README.md, \"Build rules\".")
  endif()
  return()
endif()

# ---------------------------------------------------------------------------------------------
include_guard(GLOBAL)

# The plugin ABI headers (abi/kiln/*.h), found beside this file so that any project including
# it works; in kiln's own tree this is ${PROJECT_SOURCE_DIR}/abi.
# (An installed kiln's package config sets it to the installed include directory first.)
if(NOT DEFINED KILN_ABI_INCLUDE_DIR)
  get_filename_component(KILN_ABI_INCLUDE_DIR "${CMAKE_CURRENT_LIST_DIR}/../abi" ABSOLUTE)
endif()

# KILN_CUDA OFF (a cross build: cmake/toolchains/aarch64-linux-gnu.cmake): no nvcc, and
# kiln_add_plugin takes C++ sources only.
option(KILN_CUDA "Build CUDA device code with nvcc" ON)
if(KILN_CUDA)
# nvcc: an explicit CMAKE_CUDA_COMPILER or CUDACXX wins; else CUDA_HOME, CUDA_PATH, /usr/local/cuda.
if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})
  foreach(_kiln_cuda_root IN ITEMS "$ENV{CUDA_HOME}" "$ENV{CUDA_PATH}" "/usr/local/cuda")
    if(_kiln_cuda_root AND EXISTS "${_kiln_cuda_root}/bin/nvcc")
      set(CMAKE_CUDA_COMPILER "${_kiln_cuda_root}/bin/nvcc" CACHE FILEPATH "CUDA compiler")
      break()
    endif()
  endforeach()
  unset(_kiln_cuda_root)
endif()
# nvcc uses the same host compiler as the C++ code.
if(NOT CMAKE_CUDA_HOST_COMPILER AND NOT DEFINED ENV{CUDAHOSTCXX} AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  set(CMAKE_CUDA_HOST_COMPILER "${CMAKE_CXX_COMPILER}" CACHE FILEPATH "Host compiler of nvcc")
endif()

set(KILN_PLUGIN_CUDA_ARCHS "90" CACHE STRING
    "Default CUDA architectures of kiln plugins, in CMAKE_CUDA_ARCHITECTURES form (e.g. 90, 87-real;90)")
# Plugins link cudart statically: they run where only the driver (libcuda.so.1) is installed.
set(CMAKE_CUDA_RUNTIME_LIBRARY Static)
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES ${KILN_PLUGIN_CUDA_ARCHS})
endif()

enable_language(CUDA)

if(CMAKE_CUDA_COMPILER_VERSION VERSION_LESS 11.5)
  message(FATAL_ERROR "kiln plugins need nvcc >= 11.5 (for __CUDA_ARCH_LIST__); found "
                      "${CMAKE_CUDA_COMPILER} ${CMAKE_CUDA_COMPILER_VERSION}")
endif()
endif()  # KILN_CUDA

# kiln_archs_text(OUT ARCHS...): CMAKE_CUDA_ARCHITECTURES entries in kiln's spelling, comma
# separated, as `kiln publish --arch` takes them: "90" -> sm_90,compute_90; "87-real" -> sm_87;
# "90-virtual" -> compute_90.
function(kiln_archs_text out)
  set(_archs "")
  foreach(_arch IN LISTS ARGN)
    if(_arch MATCHES "^([0-9]+[af]?)-real$")
      list(APPEND _archs "sm_${CMAKE_MATCH_1}")
    elseif(_arch MATCHES "^([0-9]+[af]?)-virtual$")
      list(APPEND _archs "compute_${CMAKE_MATCH_1}")
    elseif(_arch MATCHES "^([0-9]+[af]?)$")
      list(APPEND _archs "sm_${CMAKE_MATCH_1}" "compute_${CMAKE_MATCH_1}")
    endif()
  endforeach()
  list(JOIN _archs "," _archs)
  set(${out} "${_archs}" PARENT_SCOPE)
endfunction()

function(kiln_add_plugin target)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "" "SOURCES;CUDA_ARCHS;DEFINITIONS")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "kiln_add_plugin(${target}): unknown arguments: ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "kiln_add_plugin(${target}): SOURCES is required")
  endif()
  if(NOT ARG_CUDA_ARCHS)
    set(ARG_CUDA_ARCHS ${KILN_PLUGIN_CUDA_ARCHS})
  endif()
  if(NOT KILN_CUDA)
    foreach(_source IN LISTS ARG_SOURCES)
      if(_source MATCHES "\\.cu$")
        message(FATAL_ERROR "kiln_add_plugin(${target}): ${_source} is CUDA, and this build has KILN_CUDA OFF")
      endif()
    endforeach()
  endif()

  add_library(${target} MODULE ${ARG_SOURCES})
  set_target_properties(${target} PROPERTIES
    CXX_STANDARD 17
    CXX_STANDARD_REQUIRED ON
    CXX_EXTENSIONS OFF
    CUDA_STANDARD 17
    CUDA_STANDARD_REQUIRED ON
    CUDA_EXTENSIONS OFF
    CUDA_ARCHITECTURES "${ARG_CUDA_ARCHS}"
    CUDA_RUNTIME_LIBRARY Static
    CUDA_SEPARABLE_COMPILATION OFF
    POSITION_INDEPENDENT_CODE ON
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    CUDA_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  target_include_directories(${target} PRIVATE "${KILN_ABI_INCLUDE_DIR}")
  if(ARG_DEFINITIONS)
    target_compile_definitions(${target} PRIVATE ${ARG_DEFINITIONS})
  endif()
  if(TARGET kiln_warnings)
    target_link_libraries(${target} PRIVATE kiln_warnings)
  endif()
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:C,CXX>:-fno-gnu-unique>
    # CUDA: the host compiler gets what C++ sources get (visibility comes from the preset).
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-fno-gnu-unique,-fvisibility-inlines-hidden,-Wall,-Wextra>)
  # Symbols of static archives (cudart_static) stay local as well; the plugin's own exports are
  # limited by hidden visibility, and the check below proves the result.
  target_link_options(${target} PRIVATE "LINKER:--no-undefined" "LINKER:--exclude-libs,ALL")

  set(_readelf "")
  if(CMAKE_READELF)
    set(_readelf "-DKILN_READELF=${CMAKE_READELF}")
  endif()
  set(_nm nm)
  if(CMAKE_NM)
    set(_nm "${CMAKE_NM}")
  endif()
  add_custom_command(TARGET ${target} POST_BUILD
    COMMAND "${CMAKE_COMMAND}" "-DKILN_CHECK_PLUGIN=$<TARGET_FILE:${target}>" "-DKILN_NM=${_nm}"
            ${_readelf} -P "${CMAKE_CURRENT_FUNCTION_LIST_FILE}"
    COMMENT "Checking kiln plugin ${target} (only kiln_plugin_negotiate exported, unloadable)"
    VERBATIM)
endfunction()
