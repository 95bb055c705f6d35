# Include rules a compiler does not check (issue 9): the command-line tool uses only public headers
# (no cotune/detail/), tune/ names no concrete backend, benchmarker or cache (defaults.hpp does), and no folder of
# the library includes batch/ (the tool's job files and databases, <cotune/batch/batch.hpp>).
# cmake -DROOT=<source dir> -P include_rules.cmake; fails naming each file and line that breaks one.
set(broken "")
function(check_rule glob pattern why)
  set(found "${broken}")
  file(GLOB_RECURSE files "${ROOT}/${glob}")
  foreach(f IN LISTS files)
    file(STRINGS "${f}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]${pattern}")
    foreach(line IN LISTS lines)
      file(RELATIVE_PATH rel "${ROOT}" "${f}")
      string(STRIP "${line}" line)
      string(APPEND found "\n  ${rel}: ${line} (${why})")
    endforeach()
  endforeach()
  set(broken "${found}" PARENT_SCOPE)
endfunction()
check_rule("tools/*pp" "cotune/detail/" "the tool uses public headers only")
# tune/ (and tune/detail/) names no concrete backend, benchmarker or cache, and nothing above it: the
# defaults that pull the host's concrete types in live in defaults.hpp.
foreach(concrete IN ITEMS backend/host_backend bench/host_benchmarker cache/file_cache cuda/ hip/ redis/ batch/)
  check_rule("include/cotune/tune/*pp" "cotune/${concrete}" "tune/ names no concrete backend, benchmarker or cache, and nothing above it")
endforeach()
# batch/ (the tool's job files, tuning databases, reports) sits above the tuners: no other file of the
# library includes it (every folder but batch/ and impl/, which compiles its bodies, and defaults.hpp);
# the umbrella cotune.hpp includes batch/shipped_database.hpp alone.
file(GLOB below LIST_DIRECTORIES true RELATIVE "${ROOT}/include/cotune" "${ROOT}/include/cotune/*")
list(REMOVE_ITEM below batch impl cotune.hpp)
foreach(part IN LISTS below)
  if(IS_DIRECTORY "${ROOT}/include/cotune/${part}")
    check_rule("include/cotune/${part}/*pp" "cotune/batch/" "batch/ is above ${part}/: ${part}/ never includes it")
  else()
    check_rule("include/cotune/${part}" "cotune/batch/" "batch/ is above ${part}")
  endif()
endforeach()
file(STRINGS "${ROOT}/include/cotune/cotune.hpp" umbrella_batch REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]cotune/batch/")
list(FILTER umbrella_batch EXCLUDE REGEX "cotune/batch/shipped_database\\.hpp[>\"]")
foreach(line IN LISTS umbrella_batch)
  string(STRIP "${line}" line)
  string(APPEND broken "\n  include/cotune/cotune.hpp: ${line} (the umbrella takes batch/shipped_database.hpp alone)")
endforeach()
if(broken)
  message(FATAL_ERROR "include rules broken:${broken}")
endif()
message(STATUS "include rules hold")
