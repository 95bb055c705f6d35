# The object of tests/build/umbrella_only.cpp (header-only, -O2) defines none of cotune's code: every
# registration and body it would emit belongs to the files that use them (issue 38).
# cmake -DNM=<nm> -DOBJECT=<object file> -P umbrella_emits.cmake
execute_process(COMMAND "${NM}" -C --defined-only "${OBJECT}" RESULT_VARIABLE rc OUTPUT_VARIABLE symbols
                ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${NM} failed on ${OBJECT}: ${err}")
endif()
string(REGEX MATCH "[^\n]* main\n" has_main "${symbols}")
if(NOT has_main)
  message(FATAL_ERROR "${OBJECT} defines no main: is it the object of umbrella_only.cpp?")
endif()
string(REGEX MATCHALL "[^\n]*cotune::[^\n]*" emitted "${symbols}")
if(emitted)
  list(LENGTH emitted count)
  list(JOIN emitted "\n  " emitted)
  message(FATAL_ERROR "<cotune/cotune.hpp> with an empty main defines ${count} of cotune's symbols; files that "
                      "do not use them must not emit them (static registrations, inline variables):\n  ${emitted}")
endif()
message(STATUS "<cotune/cotune.hpp> with an empty main defines none of cotune's symbols")
