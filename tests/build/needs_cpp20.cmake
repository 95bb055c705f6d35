# A compile without C++20 stops at cotune's one message, before any other diagnostic (issue 38: pkg-config
# users without -std=c++20 met a cascade that began at `'std::integral' has not been declared`).
# cmake -DCXX=<compiler> -DROOT=<source dir> -P needs_cpp20.cmake: compiles each public header alone, and
# the umbrella, with -std=c++17 and fails naming each one whose first diagnostic is not the message.
cmake_policy(SET CMP0057 NEW) # if(... IN_LIST ...) in script mode
set(message "cotune needs C++20 (-std=c++20)")
file(GLOB_RECURSE headers RELATIVE "${ROOT}/include" "${ROOT}/include/cotune/*.hpp")
list(LENGTH headers count)
if(count LESS 50)
  message(FATAL_ERROR "found ${count} headers under ${ROOT}/include/cotune: is ROOT the source directory?")
endif()
set(broken "")
# What a `.cu` or `.hip` file includes of cotune is C++17 on purpose (nvcc's front end compiles it, with
# -std=c++17): those headers compile here, and must.
set(cpp17_headers cotune/gpu/compiled_kernels.hpp cotune/cuda/compiled_kernels.hpp cotune/hip/compiled_kernels.hpp)
foreach(header IN LISTS headers)
  # The impl/ files are compiled by the separate library's one file, which defines the macro.
  set(defines "")
  if(header MATCHES "^cotune/impl/")
    set(defines -DCOTUNE_SEPARATE_COMPILATION)
  endif()
  file(WRITE "${CMAKE_CURRENT_BINARY_DIR}/needs_cpp20.cpp" "#include <${header}>\n")
  execute_process(COMMAND "${CXX}" -std=c++17 -fsyntax-only ${defines} -I "${ROOT}/include"
                          "${CMAKE_CURRENT_BINARY_DIR}/needs_cpp20.cpp"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  # The first diagnostic line (g++: "file:line:col: error: ...", clang: the same), not the
  # "In file included from" lines that lead to it.
  string(REGEX MATCH "[^\n]*: (fatal error|error|warning): [^\n]*" first "${out}")
  string(FIND "${first}" "${message}" at)
  if(header IN_LIST cpp17_headers)
    if(NOT rc EQUAL 0)
      string(APPEND broken "\n  ${header} (C++17 by design, exit ${rc}): ${first}")
    endif()
  elseif(rc EQUAL 0 OR at EQUAL -1)
    string(APPEND broken "\n  ${header} (exit ${rc}): ${first}")
  endif()
endforeach()
if(broken)
  message(FATAL_ERROR "with -std=c++17, these headers do not stop at \"${message}\" first:${broken}")
endif()
message(STATUS "${count} headers stop at \"${message}\" first with -std=c++17")
