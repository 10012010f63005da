# The build step of kcache_add_kernel_package (KcacheKernelPackage.cmake):
#   cmake -DKCACHE_PACK_SETTINGS=<stage>/settings.cmake -P KcacheRunPack.cmake
# Records the manifest (RECORD_COMMAND), runs kcache pack, and puts the
# package in <stage>/db/<db>.kdb, the name the system tier looks up (or,
# with drop_in, <stage>/db/<db>.kdb.d/<package>.kdb). Writes
# <stage>/package.stamp only when a package was made.
cmake_minimum_required(VERSION 3.25)
include("${KCACHE_PACK_SETTINGS}")

set(stamp "${stage}/package.stamp")
set(work "${stage}/work")
file(REMOVE "${stamp}")

# fail(TEXT [LOG]): stops the build, with LOG's text when given.
function(fail text)
  set(log_text "")
  if(ARGC GREATER 1 AND EXISTS "${ARGV1}")
    file(READ "${ARGV1}" log_text)
  endif()
  message(FATAL_ERROR "kcache kernel package ${package}: ${text}\n${log_text}")
endfunction()

# skip_or_fail(TEXT LOG [PACK]): an OPTIONAL package whose compiler cannot
# start is skipped, saying why (no stamp: cpack leaves it out), unless
# KCACHE_REQUIRE_BACKENDS names its backend; otherwise the build fails.
# For the pack (PACK given), only when it says its compiler cannot start
# here: kernels that fail to compile fail the build, OPTIONAL or not.
macro(skip_or_fail text log)
  set(required "$ENV{KCACHE_REQUIRE_BACKENDS}")
  string(REPLACE " " "" required "${required}")
  set(is_required FALSE)
  if(NOT backend STREQUAL "" AND ",${required}," MATCHES ",${backend},")
    set(is_required TRUE)
  endif()
  set(compiler_missing TRUE)
  if(${ARGC} GREATER 2)
    file(STRINGS "${log}" missing REGEX "the compiler of its lines cannot start here")
    if(NOT missing)
      set(compiler_missing FALSE)
    endif()
  endif()
  if(optional AND compiler_missing AND NOT is_required AND NOT EXISTS "${stage}/out/package.kdb")
    file(STRINGS "${log}" why REGEX "[Ff]ail|[Cc]annot|[Nn]o |[Nn]ot |[Ss]kip|needs")
    list(SUBLIST why 0 4 why)
    list(JOIN why "\n    " why)
    message(WARNING "kcache kernel package ${package} NOT built: ${text} "
                    "(is its compiler missing?):\n    ${why}\n"
                    "  (log: ${log}; cpack leaves this package out)")
    return()
  endif()
  fail("${text}; its output:" "${log}")
endmacro()

# The recording and the pack see only the settings given here.
foreach(name KCACHE_RECORD KCACHE_DISABLE_CACHE KCACHE_CUSTOM_CACHE_DIR KCACHE_SYSTEM_DB_PATH)
  unset(ENV{${name}})
endforeach()

if(NOT record_command STREQUAL "")
  # A fresh manifest and cache each time: what the program asks for now,
  # nothing left from an earlier build.
  file(REMOVE_RECURSE "${work}" "${stage}/no-system-db")
  file(REMOVE "${manifest}")
  file(MAKE_DIRECTORY "${stage}/no-system-db")
  set(ENV{KCACHE_RECORD} "${manifest}")
  set(ENV{KCACHE_CUSTOM_CACHE_DIR} "${work}")
  set(ENV{KCACHE_SYSTEM_DB_PATH} "${stage}/no-system-db")
  list(JOIN record_command " " shown)
  message(STATUS "${package}: recording the kernels of: ${shown}")
  execute_process(COMMAND ${record_command}
    WORKING_DIRECTORY "${stage}"
    RESULT_VARIABLE rc OUTPUT_FILE "${stage}/record.log" ERROR_FILE "${stage}/record.log")
  unset(ENV{KCACHE_RECORD})
  unset(ENV{KCACHE_CUSTOM_CACHE_DIR})
  unset(ENV{KCACHE_SYSTEM_DB_PATH})
  if(NOT rc EQUAL 0)
    skip_or_fail("the recording command exited ${rc} (${shown})" "${stage}/record.log")
  endif()
  if(NOT EXISTS "${manifest}")
    fail("the recording command asked for no kernel: ${manifest} was not written" "${stage}/record.log")
  endif()
else()
  # A work folder per manifest content (its resume store): one that changed
  # starts afresh, so that no kernel it no longer lists stays in the package.
  file(SHA256 "${manifest}" manifest_hash)
  string(SUBSTRING "${manifest_hash}" 0 16 manifest_hash)
  set(work "${stage}/work-${manifest_hash}")
  file(GLOB old_work LIST_DIRECTORIES true "${stage}/work-*")
  list(REMOVE_ITEM old_work "${work}")
  if(old_work)
    file(REMOVE_RECURSE ${old_work})
  endif()
endif()

# Without TARGET: the one target the manifest was recorded for.
if(target STREQUAL "")
  file(STRINGS "${manifest}" lines)
  set(targets "")
  foreach(line IN LISTS lines)
    string(JSON line_backend ERROR_VARIABLE json_error GET "${line}" backend)
    if(json_error OR (NOT backend STREQUAL "" AND NOT line_backend STREQUAL backend))
      continue()
    endif()
    string(JSON arch ERROR_VARIABLE json_error GET "${line}" target arch)
    string(JSON features ERROR_VARIABLE features_error GET "${line}" target features)
    string(JSON units ERROR_VARIABLE units_error GET "${line}" target units)
    if(json_error)
      continue()
    endif()
    set(one "${arch}")
    if(NOT units_error AND units GREATER 0)
      string(APPEND one "_${units}")
    endif()
    if(NOT features_error AND NOT features STREQUAL "")
      string(APPEND one ":${features}")
    endif()
    list(APPEND targets "${one}")
  endforeach()
  list(REMOVE_DUPLICATES targets)
  list(LENGTH targets count)
  if(count EQUAL 0)
    if(backend STREQUAL "")
      fail("${manifest} has no kernel line (is it empty?)")
    endif()
    fail("${manifest} has no kernel line of backend ${backend} (BACKEND)")
  endif()
  if(NOT count EQUAL 1)
    fail("no TARGET given and ${manifest} was recorded for ${count} targets (${targets}): give TARGET")
  endif()
  set(target "${targets}")
endif()

set(pack_args pack --manifest "${manifest}" --target "${target}"
    --output "${stage}/out/package.kdb" --work "${work}")
if(NOT backend STREQUAL "")
  list(APPEND pack_args --backend "${backend}")
endif()
if(NOT jobs STREQUAL "")
  list(APPEND pack_args --jobs "${jobs}")
endif()
list(APPEND pack_args ${pack_options})
file(REMOVE_RECURSE "${stage}/out")
file(MAKE_DIRECTORY "${stage}/out")
message(STATUS "${package}: kcache pack for ${target}")
execute_process(COMMAND "${tool}" ${pack_args}
  RESULT_VARIABLE rc OUTPUT_FILE "${stage}/pack.log" ERROR_FILE "${stage}/pack.log")
if(NOT rc EQUAL 0)
  skip_or_fail("kcache pack exited ${rc}" "${stage}/pack.log" PACK)
endif()

execute_process(COMMAND "${tool}" info "${stage}/out/package.kdb" --json
  RESULT_VARIABLE rc OUTPUT_VARIABLE info ERROR_VARIABLE info_error)
if(NOT rc EQUAL 0)
  fail("kcache info --json of the package exited ${rc}: ${info_error}")
endif()
string(JSON db ERROR_VARIABLE json_error GET "${info}" 0 metadata db)
string(JSON kernels ERROR_VARIABLE kernels_error GET "${info}" 0 kernels)
if(json_error OR db STREQUAL "" OR NOT db MATCHES "^[A-Za-z0-9_.-]+$")
  fail("no database name in kcache info --json of the package: ${json_error} ${info}")
endif()

# The package's name in the system folder: <db>.kdb, or with DROP_IN the
# drop-in <db>.kdb.d/<package>.kdb.
set(installed "${db}.kdb")
if(drop_in)
  set(installed "${db}.kdb.d/${package}.kdb")
endif()
file(REMOVE_RECURSE "${stage}/db")  # an earlier build's package (another db)
file(MAKE_DIRECTORY "${stage}/db")
get_filename_component(folder "${stage}/db/${installed}" DIRECTORY)
file(MAKE_DIRECTORY "${folder}")
file(RENAME "${stage}/out/package.kdb" "${stage}/db/${installed}")
file(CHMOD "${stage}/db/${installed}" PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
file(STRINGS "${stage}/pack.log" summary REGEX "^packed ")
set(kernels_word kernels)
if(kernels EQUAL 1)
  set(kernels_word kernel)
endif()
message(STATUS "${package}: ${installed}, ${kernels} ${kernels_word} (${summary})")
file(WRITE "${stamp}" "${installed}\n")
