# cotune_precompile(): GPU kernels compiled ahead of time, at build time, into one file a program ships
# and names at run time (COTUNE_PRECOMPILED_FILE); docs/cuda.md, "Ahead-of-time compilation".
#
#   cotune_precompile(<target>
#     JOB <job.json>            a job file (docs/jobs.md): its "cuda" and "hip" kernels, their sources and spaces
#     ARCHS <arch>...           sm_90, sm_80 (CUDA kernels, built by nvcc), gfx90a, gfx942 (HIP kernels, by hipcc)
#     OUTPUT <file>             the file to write (relative: to the current binary directory)
#     [NVCC <path>] [HIPCC <path>]  the compilers (default: cotune_find_nvcc() and cotune_find_hipcc() below)
#     [JOBS <n>]                compiles at once (default: one per hardware thread)
#     [DEPENDS <file>...])      more files the kernels include (the job's sources are dependencies already)
#
# adds the target <target> (built by default) that runs `cotune precompile` when the job, a kernel
# source or the tool changed, and sets its property COTUNE_PRECOMPILED_FILE to the output's path.
# The tool is the `cotune` program: this build's (target cotune_tool), else the installed one beside
# this file's package, else `cotune` on PATH.

# cotune_find_nvcc(<var>) and cotune_find_hipcc(<var>): the one lookup of each compiler, shared by
# cotune_precompile() and cotune's own build (CMakeLists.txt, tests/). nvcc: COTUNE_NVCC when set, else
# the CUDA language's compiler when it is nvcc (CMAKE_CUDA_COMPILER, from check_language(CUDA) or
# enable_language(CUDA)), else a search ($CUDA_HOME/bin, /usr/local/cuda/bin, PATH) cached in COTUNE_NVCC.
# hipcc: COTUNE_HIPCC when set, else a search ($ROCM_PATH/bin, /opt/rocm/bin, PATH) cached there. A
# found search is not repeated (find_program keeps its result in the cache); <var> is empty when none.
function(cotune_find_nvcc var)
  set(nvcc "")
  if(COTUNE_NVCC)
    set(nvcc "${COTUNE_NVCC}")
  elseif(CMAKE_CUDA_COMPILER)
    get_filename_component(name "${CMAKE_CUDA_COMPILER}" NAME)
    if(CMAKE_CUDA_COMPILER_ID STREQUAL "NVIDIA" OR (NOT CMAKE_CUDA_COMPILER_ID AND name MATCHES "^nvcc"))
      set(nvcc "${CMAKE_CUDA_COMPILER}")
    endif()
  endif()
  if(NOT nvcc)
    find_program(COTUNE_NVCC nvcc HINTS "$ENV{CUDA_HOME}/bin" /usr/local/cuda/bin DOC "nvcc for cotune_precompile")
    if(COTUNE_NVCC)
      set(nvcc "${COTUNE_NVCC}")
    endif()
  endif()
  set(${var} "${nvcc}" PARENT_SCOPE)
endfunction()

function(cotune_find_hipcc var)
  find_program(COTUNE_HIPCC hipcc HINTS "$ENV{ROCM_PATH}/bin" /opt/rocm/bin DOC "hipcc (cotune_precompile, HIP kernels built ahead)")
  if(COTUNE_HIPCC)
    set(${var} "${COTUNE_HIPCC}" PARENT_SCOPE)
  else()
    set(${var} "" PARENT_SCOPE)
  endif()
endfunction()

# Where an installed package's `cotune` program lies: <prefix>/bin, this file being in <prefix>/share/cmake/cotune.
get_filename_component(_cotune_precompile_bin_hint "${CMAKE_CURRENT_LIST_DIR}/../../../bin" ABSOLUTE)

function(cotune_precompile target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "JOB;OUTPUT;NVCC;HIPCC;JOBS" "ARCHS;DEPENDS")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "cotune_precompile(${target}): unknown arguments: ${arg_UNPARSED_ARGUMENTS}")
  endif()
  foreach(required IN ITEMS JOB OUTPUT ARCHS)
    if(NOT arg_${required})
      message(FATAL_ERROR "cotune_precompile(${target}): ${required} is required")
    endif()
  endforeach()
  get_filename_component(job "${arg_JOB}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  get_filename_component(output "${arg_OUTPUT}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")
  if(NOT EXISTS "${job}")
    message(FATAL_ERROR "cotune_precompile(${target}): the job file '${job}' does not exist")
  endif()

  # The tool: this build's, else an installed one.
  set(tool_depends "")
  if(TARGET cotune_tool)
    set(tool "$<TARGET_FILE:cotune_tool>")
    set(tool_depends cotune_tool)
  else()
    find_program(COTUNE_TOOL_PROGRAM cotune HINTS "${_cotune_precompile_bin_hint}"
                 DOC "the cotune command-line tool (cotune_precompile runs `cotune precompile`)")
    if(NOT COTUNE_TOOL_PROGRAM)
      message(FATAL_ERROR "cotune_precompile(${target}): the `cotune` tool was not found (it is built with cotune "
                          "when CLI11 is found: Debian libcli11-dev); set COTUNE_TOOL_PROGRAM to its path")
    endif()
    set(tool "${COTUNE_TOOL_PROGRAM}")
  endif()

  # The compilers the architectures need.
  set(compiler_args "")
  set(needs_nvcc OFF)
  set(needs_hipcc OFF)
  foreach(arch IN LISTS arg_ARCHS)
    if(arch MATCHES "^sm_[0-9]+$")
      set(needs_nvcc ON)
    elseif(arch MATCHES "^gfx[0-9a-f]+$")
      set(needs_hipcc ON)
    else()
      message(FATAL_ERROR "cotune_precompile(${target}): architecture '${arch}' is neither sm_XY (CUDA) nor gfxNNN (HIP)")
    endif()
    list(APPEND compiler_args --arch "${arch}")
  endforeach()
  if(needs_nvcc)
    set(nvcc "${arg_NVCC}")
    if(NOT nvcc)
      cotune_find_nvcc(nvcc)
    endif()
    if(NOT nvcc)
      message(FATAL_ERROR "cotune_precompile(${target}): nvcc was not found (CUDA_HOME, /usr/local/cuda/bin, PATH); "
                          "pass NVCC <path> or set COTUNE_NVCC")
    endif()
    list(APPEND compiler_args --nvcc "${nvcc}")
  endif()
  if(needs_hipcc)
    set(hipcc "${arg_HIPCC}")
    if(NOT hipcc)
      cotune_find_hipcc(hipcc)
    endif()
    if(NOT hipcc)
      message(FATAL_ERROR "cotune_precompile(${target}): hipcc was not found (ROCM_PATH, /opt/rocm/bin, PATH); "
                          "pass HIPCC <path> or set COTUNE_HIPCC")
    endif()
    list(APPEND compiler_args --hipcc "${hipcc}")
  endif()
  if(arg_JOBS)
    list(APPEND compiler_args -j "${arg_JOBS}")
  endif()

  # The kernels' source files (relative to the job's folder) rebuild the file when they change.
  file(READ "${job}" job_text)
  get_filename_component(job_dir "${job}" DIRECTORY)
  set(sources "")
  string(JSON kernel_count ERROR_VARIABLE json_error LENGTH "${job_text}" kernels)
  if(json_error)
    message(FATAL_ERROR "cotune_precompile(${target}): '${job}' has no \"kernels\" list: ${json_error}")
  endif()
  if(kernel_count GREATER 0)
    math(EXPR last "${kernel_count} - 1")
    foreach(i RANGE ${last})
      string(JSON source ERROR_VARIABLE json_error GET "${job_text}" kernels ${i} source)
      if(NOT json_error AND source)
        get_filename_component(source "${source}" ABSOLUTE BASE_DIR "${job_dir}")
        list(APPEND sources "${source}")
      endif()
    endforeach()
  endif()

  string(REPLACE ";" " " shown_archs "${arg_ARCHS}")
  add_custom_command(OUTPUT "${output}"
    COMMAND "${tool}" precompile "${job}" ${compiler_args} -o "${output}"
    DEPENDS "${job}" ${sources} ${arg_DEPENDS} ${tool_depends}
    COMMENT "cotune: precompiling the GPU kernels of ${arg_JOB} for ${shown_archs}"
    VERBATIM)
  add_custom_target(${target} ALL DEPENDS "${output}")
  set_target_properties(${target} PROPERTIES COTUNE_PRECOMPILED_FILE "${output}")
endfunction()
