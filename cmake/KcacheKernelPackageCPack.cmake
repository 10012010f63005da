# Read by cpack when it runs, after the build (CPACK_PROJECT_CONFIG_FILE,
# which kcache_kernel_package_cpack_settings() names when the project has
# not): a kernel package (kcache_add_kernel_package) goes into a .deb only
# once it has been built; one not built, or skipped (OPTIONAL), is left
# out, saying how to build it, instead of an empty .deb.
# CPACK_KCACHE_KERNEL_PACKAGE_STAMPS lists "<component>=<stamp file>" (a
# CPACK_ variable, so that cpack has it).
foreach(_kcache_entry IN LISTS CPACK_KCACHE_KERNEL_PACKAGE_STAMPS)
  string(REGEX REPLACE "=.*" "" _kcache_component "${_kcache_entry}")
  string(REGEX REPLACE "^[^=]*=" "" _kcache_stamp "${_kcache_entry}")
  if(NOT EXISTS "${_kcache_stamp}")
    list(REMOVE_ITEM CPACK_COMPONENTS_ALL "${_kcache_component}")
    message(STATUS "cpack: kernel package ${_kcache_component} left out: not built "
                   "(build its target first: cmake --build <build folder> --target "
                   "${_kcache_component})")
  endif()
endforeach()
