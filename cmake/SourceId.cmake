# benchfleet_source_id(<dir> <out-var>): the id of the worker sources under <dir> (a release's
# share/benchfleet/src), written to share/benchfleet/SOURCE_ID: the first 16 hex digits of the
# SHA-256 of what sha256sum prints for every regular file under <dir>, named ./<path> and in byte
# order. It is the same text as
#   cd <dir> && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16
# (how releases computed it before `cmake --install` laid them out), so an agent host that built a
# worker for some sources recognises them in any release that ships them. Run at install time
# (cmake/ReleaseLayout.cmake); needs nothing but CMake.
cmake_policy(VERSION 3.25)  # recorded by the function: GLOB_RECURSE does not follow symlinks (CMP0009)

function(benchfleet_source_id dir out_var)
  file(GLOB_RECURSE files LIST_DIRECTORIES false RELATIVE "${dir}" "${dir}/*")
  list(SORT files)  # byte order, as LC_ALL=C sort
  set(listing "")
  foreach(file IN LISTS files)
    if(IS_SYMLINK "${dir}/${file}")
      continue()  # find -type f lists regular files only
    endif()
    # sha256sum escapes a name with a newline or a backslash: refuse it rather than compute a
    # different id (a backslash or a ';' already fails below, CMake's lists cannot carry them).
    if(file MATCHES "\n")
      message(FATAL_ERROR "SOURCE_ID: ${dir}/${file}: a source name with a newline")
    endif()
    file(SHA256 "${dir}/${file}" digest)
    string(APPEND listing "${digest}  ./${file}\n")
  endforeach()
  if(listing STREQUAL "")
    message(FATAL_ERROR "SOURCE_ID: no files under ${dir}")
  endif()
  string(SHA256 id "${listing}")
  string(SUBSTRING "${id}" 0 16 id)
  set(${out_var} "${id}" PARENT_SCOPE)
endfunction()
