# Warnings on and clean: every kiln target links kiln_warnings.
add_library(kiln_warnings INTERFACE)
target_compile_options(kiln_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:C,CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion
                              -Wcast-align -Wformat=2 -Werror=return-type>
  $<$<COMPILE_LANGUAGE:CXX>:-Wnon-virtual-dtor -Wold-style-cast -Woverloaded-virtual>)
# In a unity build (scripts/test's sanitizer, fuzz and aarch64 trees) one file's call can bind to
# another file's better-matching file-local overload; the overload it meant is then unused. Make
# that an error, so a unity tree never runs code the per-file build does not.
if(CMAKE_UNITY_BUILD)
  target_compile_options(kiln_warnings INTERFACE $<$<COMPILE_LANGUAGE:C,CXX>:-Werror=unused-function>)
endif()
