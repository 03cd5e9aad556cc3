# Warnings on and clean: every kiln target links kiln_warnings.
add_library(kiln_warnings INTERFACE)
target_compile_options(kiln_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:C,CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion
                              -Wcast-align -Wformat=2 -Werror=return-type>
  $<$<COMPILE_LANGUAGE:CXX>:-Wnon-virtual-dtor -Wold-style-cast -Woverloaded-virtual>)
