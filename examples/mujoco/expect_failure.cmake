# SPDX-License-Identifier: MIT
# Runs EXE with ARGS (a ;-list) and prints its output and exit status ("exit N"), failing the script
# when it exits 0: a test then matches the error text and the status with PASS_REGULAR_EXPRESSION.
execute_process(COMMAND ${EXE} ${ARGS} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}exit ${rc}")
if(rc EQUAL 0)
  message(FATAL_ERROR "expected a non-zero exit")
endif()
