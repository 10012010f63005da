# kcache_add_kernel_package: a manifest of kernels (what KCACHE_RECORD
# writes, docs/formats.md §4) made into a per-architecture kernel package:
# a .kdb built by `kcache pack` at build time, installed into
# <prefix>/share/kcache/db under a component of its own, and a .deb of that
# component (through CPack's DEB generator) that depends on the library.
#
# Installed with kcache's CMake package: after find_package(kcache CONFIG)
# the functions below are defined. Inside the kcache project, include this
# file.
#
#   kcache_add_kernel_package(<name>
#     MANIFEST <file> | RECORD_COMMAND <command> [<arg>...]
#     [TARGET <target>]        kcache pack --target (default: the target the
#                              manifest was recorded for; all lines must agree)
#     [ARCH <suffix>]          the package's name is <name>-<suffix>; default:
#                              TARGET without features, lower case, only
#                              [a-z0-9.+-] kept (sm_90 -> sm90); needed without TARGET
#     [BACKEND <backend>]      kcache pack --backend: only that backend's lines
#     [JOBS <n>]               kcache pack --jobs (default: one per core)
#     [PACK_OPTIONS <arg>...]  more kcache pack options (--nvrtc-library ...)
#     [DEPENDS <file or target>...]   what the manifest or the command needs
#     [PACKAGE_DEPENDS <text>] Debian Depends (default: the kcache library
#                              package of this kcache version: libkcache0 (>= V), libkcache0 (<< next minor))
#     [DESCRIPTION <text>]
#     [DROP_IN]                install as the drop-in <db>.kdb.d/<name>-<arch>.kdb
#                              instead of <db>.kdb, so that other libraries'
#                              packages for the same target can be installed
#                              beside it (two .debs cannot both own <db>.kdb)
#     [OPTIONAL]               when the backend's compiler cannot start (no
#                              NVRTC, no hipRTC), say so and build no package
#                              instead of failing; a backend that
#                              KCACHE_REQUIRE_BACKENDS names is never optional
#     [ALL]                    build it with the default target (not by default)
#     [KCACHE_TOOL <path>])    the kcache program (default: this project's
#                              kcache_tool target, else the installed one)
#
# makes a target named <name>-<arch> (also the component and the Debian
# package name). Building it runs, in ${CMAKE_CURRENT_BINARY_DIR}/kernel-packages/<name>-<arch>/:
#   1. with RECORD_COMMAND: the command, with KCACHE_RECORD=manifest.jsonl,
#      KCACHE_CUSTOM_CACHE_DIR=work (a fresh folder) and KCACHE_SYSTEM_DB_PATH
#      an empty folder, so that every kernel it asks for is compiled and
#      recorded; the work folder is then the pack's resume store, so the
#      package also holds the binaries the program itself compiled;
#   2. kcache pack --manifest M [--target T] --output out/package.kdb --work work;
#      any kernel that fails fails the build;
#   3. `kcache info --json` of the package gives its database name (db):
#      the package goes to db/<db>.kdb, the name the system tier looks up
#      (with DROP_IN: db/<db>.kdb.d/<name>-<arch>.kdb, which it looks up
#      after <db>.kdb).
# `install(DIRECTORY db/ DESTINATION share/kcache/db COMPONENT <name>-<arch>
# EXCLUDE_FROM_ALL)`: a plain `cmake --install` leaves kernel packages out.
# The package lands under the install (or CPACK_PACKAGING_INSTALL_PREFIX)
# prefix: libkcache finds <its own prefix>/share/kcache/db, so a kernel
# package's prefix must be the library's (/usr for libkcache0's .deb), or
# its programs must name the folder (KCACHE_SYSTEM_DB_PATH).
#
# Call kcache_kernel_package_cpack_settings() before include(CPack) (the
# directory scope that includes CPack), after the project's own install
# rules: it sets the CPACK_DEBIAN_<COMPONENT>_* variables of every kernel
# package and adds their components to CPACK_COMPONENTS_ALL (which, when
# the project had not set it, first gets every component there is, so that
# the project's own packages stay); where the project has not chosen,
# CPack makes one .deb per component (CPACK_GENERATOR DEB,
# CPACK_DEB_COMPONENT_INSTALL ON, CPACK_DEBIAN_FILE_NAME DEB-DEFAULT). The
# DEB generator also needs a maintainer: CPACK_PACKAGE_CONTACT.
include_guard(GLOBAL)

set(_KCACHE_KERNEL_PACKAGE_DIR "${CMAKE_CURRENT_LIST_DIR}")

function(kcache_add_kernel_package name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "OPTIONAL;ALL;DROP_IN"
    "MANIFEST;TARGET;ARCH;BACKEND;JOBS;PACKAGE_DEPENDS;DESCRIPTION;KCACHE_TOOL"
    "RECORD_COMMAND;DEPENDS;PACK_OPTIONS")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "kcache_add_kernel_package(${name}): unknown arguments ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if((arg_MANIFEST AND arg_RECORD_COMMAND) OR (NOT arg_MANIFEST AND NOT arg_RECORD_COMMAND))
    message(FATAL_ERROR "kcache_add_kernel_package(${name}): give MANIFEST or RECORD_COMMAND, one of them")
  endif()

  set(arch "${arg_ARCH}")
  if(arch STREQUAL "")
    if(NOT arg_TARGET)  # unset when not given: "arg_TARGET STREQUAL" would test the name
      message(FATAL_ERROR "kcache_add_kernel_package(${name}): ARCH is needed without TARGET")
    endif()
    string(REGEX REPLACE ":.*" "" arch "${arg_TARGET}")
    string(TOLOWER "${arch}" arch)
    string(REGEX REPLACE "[^a-z0-9.+-]" "" arch "${arch}")
  endif()
  set(package "${name}-${arch}")
  # Debian: lower case, digits, + - ., at least two characters, from an alphanumeric.
  if(NOT package MATCHES "^[a-z0-9][a-z0-9.+-]+$")
    message(FATAL_ERROR "kcache_add_kernel_package: '${package}' is not a Debian package name (lower case, digits, '.', '+', '-')")
  endif()
  if(TARGET "${package}")
    message(FATAL_ERROR "kcache_add_kernel_package: a target '${package}' exists already")
  endif()

  # The kcache program: this project's, or the installed one beside this file
  # (<prefix>/<libdir>/cmake/kcache/ -> <prefix>/bin).
  set(tool_depends "")
  if(arg_KCACHE_TOOL)
    set(tool "${arg_KCACHE_TOOL}")
  elseif(TARGET kcache_tool)
    set(tool "$<TARGET_FILE:kcache_tool>")
    set(tool_depends kcache_tool)
  else()
    find_program(KCACHE_PROGRAM kcache
      HINTS "${_KCACHE_KERNEL_PACKAGE_DIR}/../../../bin" "${_KCACHE_KERNEL_PACKAGE_DIR}/../../../../bin")
    if(NOT KCACHE_PROGRAM)
      message(FATAL_ERROR "kcache_add_kernel_package(${name}): the kcache program was not found (set KCACHE_PROGRAM or KCACHE_TOOL)")
    endif()
    set(tool "${KCACHE_PROGRAM}")
  endif()

  set(version "${kcache_VERSION}")
  if(version STREQUAL "" AND PROJECT_NAME STREQUAL "kcache")
    set(version "${PROJECT_VERSION}")
  endif()
  set(depends "${arg_PACKAGE_DEPENDS}")
  if(depends STREQUAL "" AND NOT version STREQUAL "")
    # A package's keys follow kcache's key format, which may change in a
    # minor release before 1.0: the same major.minor, this patch or later.
    string(REGEX MATCH "^([0-9]+)\\.([0-9]+)" _ "${version}")
    math(EXPR next_minor "${CMAKE_MATCH_2} + 1")
    set(depends "libkcache0 (>= ${version}), libkcache0 (<< ${CMAKE_MATCH_1}.${next_minor})")
  endif()
  set(description "${arg_DESCRIPTION}")
  if(description STREQUAL "")
    set(description "Precompiled kernels for ${arch} (a kcache system database)")
  endif()

  set(stage "${CMAKE_CURRENT_BINARY_DIR}/kernel-packages/${package}")
  set(stamp "${stage}/package.stamp")
  set(record "${arg_RECORD_COMMAND}")
  set(manifest "${stage}/manifest.jsonl")
  set(manifest_depends "")
  if(arg_MANIFEST)
    get_filename_component(manifest "${arg_MANIFEST}" ABSOLUTE)
    set(manifest_depends "${manifest}")
  endif()
  # Generator expressions ($<TARGET_FILE:...>) may appear in the command: the
  # settings reach the build step through a generated file.
  string(JOIN "\n" settings
    "set(package [==[${package}]==])"
    "set(stage [==[${stage}]==])"
    "set(tool [==[${tool}]==])"
    "set(manifest [==[${manifest}]==])"
    "set(record_command [==[${record}]==])"
    "set(target [==[${arg_TARGET}]==])"
    "set(backend [==[${arg_BACKEND}]==])"
    "set(jobs [==[${arg_JOBS}]==])"
    "set(pack_options [==[${arg_PACK_OPTIONS}]==])"
    "set(optional [==[${arg_OPTIONAL}]==])"
    "set(drop_in [==[${arg_DROP_IN}]==])"
    "")
  # Kept out of the stage folder (which may be removed to rebuild the
  # package). Their hash is on the command line: new settings, a new command,
  # which the build runs again.
  set(settings_file "${CMAKE_CURRENT_BINARY_DIR}/CMakeFiles/kcache-kernel-packages/${package}.cmake")
  file(GENERATE OUTPUT "${settings_file}" CONTENT "${settings}")
  string(SHA256 settings_hash "${settings}")

  add_custom_command(OUTPUT "${stamp}"
    COMMAND "${CMAKE_COMMAND}" -DKCACHE_PACK_SETTINGS=${settings_file}
            -DKCACHE_PACK_SETTINGS_HASH=${settings_hash}
            -P "${_KCACHE_KERNEL_PACKAGE_DIR}/KcacheRunPack.cmake"
    DEPENDS ${tool_depends} ${manifest_depends} ${arg_DEPENDS}
            "${_KCACHE_KERNEL_PACKAGE_DIR}/KcacheRunPack.cmake"
    COMMENT "kcache pack: kernel package ${package}"
    VERBATIM USES_TERMINAL)
  set(all "")
  if(arg_ALL)
    set(all ALL)
  endif()
  add_custom_target("${package}" ${all} DEPENDS "${stamp}")

  file(MAKE_DIRECTORY "${stage}/db")
  # share/, as GNUInstallDirs has it, without including it (which warns in
  # a project with no language enabled).
  set(datadir "${CMAKE_INSTALL_DATADIR}")
  if(datadir STREQUAL "")
    set(datadir share)
  endif()
  install(DIRECTORY "${stage}/db/" DESTINATION "${datadir}/kcache/db"
    COMPONENT "${package}" EXCLUDE_FROM_ALL
    FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ
    DIRECTORY_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
                          WORLD_READ WORLD_EXECUTE
    FILES_MATCHING PATTERN "*.kdb")

  set_property(GLOBAL APPEND PROPERTY KCACHE_KERNEL_PACKAGES "${package}")
  set_property(GLOBAL PROPERTY "KCACHE_KERNEL_PACKAGE_${package}_DEPENDS" "${depends}")
  set_property(GLOBAL PROPERTY "KCACHE_KERNEL_PACKAGE_${package}_DESCRIPTION" "${description}")
  set_property(GLOBAL PROPERTY "KCACHE_KERNEL_PACKAGE_${package}_STAMP" "${stamp}")
endfunction()

# Sets, in the caller's scope, what CPack needs for every kernel package
# made so far: CPACK_COMPONENTS_ALL gets their components, and each its
# Debian name, Depends, description and no shlibdeps (a .kdb is data).
# CPACK_KCACHE_KERNEL_PACKAGE_STAMPS lists "<component>=<stamp file>" (the
# stamp exists once the package is built), which KcacheKernelPackageCPack.cmake
# reads at cpack time to leave out the packages not built (named as
# CPACK_PROJECT_CONFIG_FILE unless the project names its own, which may
# include it). A macro: the variables are the caller's.
macro(kcache_kernel_package_cpack_settings)
  get_property(_kcache_packages GLOBAL PROPERTY KCACHE_KERNEL_PACKAGES)
  # Unset, CPACK_COMPONENTS_ALL means every component: appending alone would
  # leave only the kernel packages.
  if(NOT DEFINED CPACK_COMPONENTS_ALL)
    get_cmake_property(CPACK_COMPONENTS_ALL COMPONENTS)
  endif()
  if(NOT DEFINED CPACK_GENERATOR)
    set(CPACK_GENERATOR DEB)
  endif()
  if(NOT DEFINED CPACK_DEB_COMPONENT_INSTALL)
    set(CPACK_DEB_COMPONENT_INSTALL ON)
  endif()
  if(NOT DEFINED CPACK_DEBIAN_FILE_NAME)
    set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
  endif()
  set(CPACK_KCACHE_KERNEL_PACKAGE_STAMPS "")
  if(NOT DEFINED CPACK_PROJECT_CONFIG_FILE)
    set(CPACK_PROJECT_CONFIG_FILE "${_KCACHE_KERNEL_PACKAGE_DIR}/KcacheKernelPackageCPack.cmake")
  endif()
  foreach(_kcache_package IN LISTS _kcache_packages)
    string(TOUPPER "${_kcache_package}" _kcache_upper)
    get_property(_kcache_value GLOBAL PROPERTY "KCACHE_KERNEL_PACKAGE_${_kcache_package}_DEPENDS")
    set(CPACK_DEBIAN_${_kcache_upper}_PACKAGE_DEPENDS "${_kcache_value}")
    get_property(_kcache_value GLOBAL PROPERTY "KCACHE_KERNEL_PACKAGE_${_kcache_package}_DESCRIPTION")
    set(CPACK_COMPONENT_${_kcache_upper}_DESCRIPTION "${_kcache_value}")
    get_property(_kcache_value GLOBAL PROPERTY "KCACHE_KERNEL_PACKAGE_${_kcache_package}_STAMP")
    list(APPEND CPACK_KCACHE_KERNEL_PACKAGE_STAMPS "${_kcache_package}=${_kcache_value}")
    set(CPACK_DEBIAN_${_kcache_upper}_PACKAGE_NAME "${_kcache_package}")
    set(CPACK_DEBIAN_${_kcache_upper}_PACKAGE_SECTION "libs")
    set(CPACK_DEBIAN_${_kcache_upper}_PACKAGE_SHLIBDEPS OFF)
    list(APPEND CPACK_COMPONENTS_ALL "${_kcache_package}")
  endforeach()
  list(REMOVE_DUPLICATES CPACK_COMPONENTS_ALL)
  unset(_kcache_packages)
  unset(_kcache_package)
  unset(_kcache_upper)
  unset(_kcache_value)
endmacro()
