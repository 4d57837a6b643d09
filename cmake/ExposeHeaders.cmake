# benchfleet_expose_headers(TARGET FOLDER): `target`, and whatever links it, sees the headers of
# FOLDER (a repository path such as coordinator/store) under their repository path
# ("coordinator/store/x.h") and no others beside them: an include directory of its own holding
# one link to the folder. A file that includes a folder its target does not link then fails to
# compile; this is how the coordinator's layers are kept (coordinator/CMakeLists.txt).
function(benchfleet_expose_headers target folder)
  string(REPLACE "/" "_" key "${folder}")
  set(root "${PROJECT_BINARY_DIR}/include/${key}")
  cmake_path(GET folder PARENT_PATH parent)
  file(MAKE_DIRECTORY "${root}/${parent}")
  file(CREATE_LINK "${PROJECT_SOURCE_DIR}/${folder}" "${root}/${folder}" SYMBOLIC)
  target_include_directories(${target} PUBLIC "$<BUILD_INTERFACE:${root}>")
endfunction()
