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
# Only the folders (or top-level files) named in ARGN may include cotune/<folder>/: every other part of
# include/cotune/ is checked (a folder, recursively; a file, alone). `why` ends the message.
function(check_only_from folder why)
  set(found "${broken}")
  file(GLOB parts LIST_DIRECTORIES true RELATIVE "${ROOT}/include/cotune" "${ROOT}/include/cotune/*")
  list(REMOVE_ITEM parts ${ARGN})
  foreach(part IN LISTS parts)
    set(broken "")
    if(IS_DIRECTORY "${ROOT}/include/cotune/${part}")
      check_rule("include/cotune/${part}/*pp" "cotune/${folder}/" "${why}: ${part}/ never includes it")
    else()
      check_rule("include/cotune/${part}" "cotune/${folder}/" "${why}")
    endif()
    string(APPEND found "${broken}")
  endforeach()
  set(broken "${found}" PARENT_SCOPE)
endfunction()
# tune/detail/ (the tuner's machinery) is included only by tune/ (tune/detail/ itself) and impl/, and
# by neither the tool nor the examples (the tests may).
check_only_from(tune/detail "tune/detail/ is the tuner's machinery" tune impl)
check_rule("tools/*pp" "cotune/tune/detail/" "the tool uses public headers only")
check_rule("examples/*pp" "cotune/tune/detail/" "examples use public headers only")
# batch/ (the tool's job files, tuning databases, reports) sits above the tuners: no other file of the
# library includes it (every folder but batch/ and impl/, which compiles its bodies); the umbrella
# cotune.hpp includes batch/shipped_database.hpp alone.
check_only_from(batch "batch/ is above the rest of the library" batch impl cotune.hpp)
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
