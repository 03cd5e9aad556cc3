# ctest's post-test command (CTestCustom.cmake): prints every skip the test binaries recorded in
# KILN_TEST_SKIP_DIR (one file per ctest test, "SKIPPED <what>: <why>" lines), so that plain
# `ctest` output says why.
file(GLOB files "${KILN_TEST_SKIP_DIR}/*.txt")
if(NOT files)
  return()
endif()
list(SORT files)
execute_process(COMMAND "${CMAKE_COMMAND}" -E echo "Skipped, and why (per ctest test):")
foreach(file IN LISTS files)
  get_filename_component(test "${file}" NAME_WE)
  execute_process(COMMAND "${CMAKE_COMMAND}" -E echo "${test}:")
  execute_process(COMMAND "${CMAKE_COMMAND}" -E cat "${file}")
endforeach()
