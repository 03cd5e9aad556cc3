# cmake -DKILN=<built kiln> -DOUT=<dir> -P KilnCliFiles.cmake: the bash completion script
# (OUT/completions/kiln) and the man page (OUT/kiln.1, and OUT/kiln.1.gz as packages ship it:
# gzip -9n, no name or time stamp, so the file is the same at every build).
function(kiln_write file)
  execute_process(COMMAND ${ARGN} OUTPUT_FILE ${OUT}/${file}.tmp RESULT_VARIABLE result)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "${ARGN} failed (${result})")
  endif()
  file(RENAME ${OUT}/${file}.tmp ${OUT}/${file})
endfunction()

file(MAKE_DIRECTORY ${OUT}/completions)
kiln_write(completions/kiln ${KILN} completion bash)
kiln_write(kiln.1 ${KILN} man)
kiln_write(kiln.1.gz gzip -9n -c ${OUT}/kiln.1)
