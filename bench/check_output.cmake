# SPDX-License-Identifier: MIT
# A benchmark's output test (Google Benchmark's habit): runs a benchmark binary with tiny iteration
# counts and checks what it says, not how fast it was.
#   cmake -DCMD="bin@@arg@@arg" -DEXPECT_RC=0 -DMATCH="regex@@regex" [-DVERDICTS=file.json
#         -DCOUNT=n -DSTATUS=regex] -P check_output.cmake
# CMD and MATCH are lists separated by "@@"; every MATCH must occur in stdout; VERDICTS: the JSON
# written by --verdicts must hold COUNT verdicts, each with a status matching STATUS.
string(REPLACE "@@" ";" cmd "${CMD}")
string(REPLACE "@@" ";" match "${MATCH}")
if(VERDICTS)
  file(REMOVE "${VERDICTS}")
endif()
execute_process(COMMAND ${cmd} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}")
message("${err}")
if(NOT "${rc}" STREQUAL "${EXPECT_RC}")
  message(FATAL_ERROR "exit code ${rc}, expected ${EXPECT_RC}")
endif()
foreach(re IN LISTS match)
  if(NOT out MATCHES "${re}")
    message(FATAL_ERROR "no line matches '${re}'")
  endif()
endforeach()
if(VERDICTS)
  file(READ "${VERDICTS}" json)
  string(JSON n LENGTH "${json}" verdicts)
  if(NOT n EQUAL COUNT)
    message(FATAL_ERROR "${VERDICTS}: ${n} verdicts, expected ${COUNT}")
  endif()
  math(EXPR last "${n} - 1")
  foreach(i RANGE ${last})
    string(JSON status GET "${json}" verdicts ${i} status)
    string(JSON name GET "${json}" verdicts ${i} name)
    if(NOT status MATCHES "${STATUS}")
      message(FATAL_ERROR "${VERDICTS}: verdict ${name} is '${status}', expected '${STATUS}'")
    endif()
  endforeach()
endif()
message("output test ok")
