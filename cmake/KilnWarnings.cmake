# Warnings on and clean: every kiln target links kiln_warnings.
add_library(kiln_warnings INTERFACE)
target_compile_options(kiln_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX,C>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion
                              -Wnon-virtual-dtor -Wold-style-cast -Wcast-align -Woverloaded-virtual
                              -Wformat=2 -Werror=return-type>)
# -Wold-style-cast / -Wnon-virtual-dtor do not apply to C.
target_compile_options(kiln_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:C>:-Wno-old-style-cast>)
