# SPDX-License-Identifier: MIT
# cmake -DNM=nm -DOBJECTS=a.o;b.o -DEXPECT=none|some -P check_symbols.cmake
# none: the objects define and reference no symbol of simprof's (a name in namespace simprof, or
# its vtable, typeinfo or guard variable; the consumer's own functions may name simprof types in
# their signatures); some: at least one (the enabled build, so the check is known to see).
set(found "")
foreach(object IN LISTS OBJECTS)
  execute_process(COMMAND ${NM} -C ${object} OUTPUT_VARIABLE out RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${NM} -C ${object} failed (${rc})")
  endif()
  string(REPLACE "\n" ";" lines "${out}")
  foreach(line IN LISTS lines)
    # "<address> <type> <name>" or "                 U <name>"
    string(REGEX REPLACE "^[0-9a-fA-F ]* [A-Za-z] " "" name "${line}")
    if(name MATCHES "^(([a-z-]+ )+for )?simprof::")
      list(APPEND found "${line}")
    endif()
  endforeach()
endforeach()
list(LENGTH found n)
if(EXPECT STREQUAL "none" AND n GREATER 0)
  string(REPLACE ";" "\n  " found "${found}")
  message(FATAL_ERROR "compiled out, yet the engine object has ${n} simprof symbols:\n  ${found}")
elseif(EXPECT STREQUAL "some" AND n EQUAL 0)
  message(FATAL_ERROR "profiled, yet the engine object has no simprof symbol: the check is blind")
endif()
message(STATUS "simprof symbols in the engine object: ${n} (expected ${EXPECT})")
