# tasc_merge_archives.cmake: merge static archives into one (libtasc.a) with an `ar` MRI script.
#   cmake -DAR=<ar> -DMRI=<script> -DOUT=<archive> -P tasc_merge_archives.cmake
# The script (written by CMakeLists.txt with file(GENERATE)) says "create OUT", "addlib L" for
# each layer's archive, "save", "end". Run through execute_process so that feeding the script on
# stdin works the same under every generator.
foreach(v AR MRI OUT)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "tasc_merge_archives.cmake: -D${v}=... is required")
  endif()
endforeach()
file(REMOVE "${OUT}")
execute_process(COMMAND "${AR}" -M INPUT_FILE "${MRI}" RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "tasc_merge_archives.cmake: ${AR} -M failed (${rc}): ${err}")
endif()
