# What `cmake --install` lays out besides the binaries (bin/, each program's CMakeLists.txt) and
# the dashboard (share/benchfleet/web, coordinator/CMakeLists.txt), so that an installed prefix is
# a complete release: ansible/build-release.sh only packs one. The programs find these files
# relative to their executable (common/install_dirs.h, the agent's defaults) and the Ansible roles
# name them (roles/*/templates, roles/agent/tasks/torch_builds.yml):
#   share/benchfleet/catalog/models.yaml   the model catalog
#   share/benchfleet/benchfleet_*.py       the agent's python modules (the exporter, the runner...)
#   share/benchfleet/benchfleet-g++        Inductor's compiler where libtorch links Sleef dynamically
#   share/benchfleet/rules/*.json          the rules they share with the C++ programs (common/rules)
#   share/benchfleet/in-root.sh            runs the programs of a build that lives in its own root
#   share/benchfleet/src/                  the worker's sources: the top CMakeLists.txt,
#                                          cmake/TorchApi.cmake, cmake/EmbedFiles*.cmake,
#                                          cmake/ExposeHeaders.cmake, common/,
#                                          agent/worker/
#   share/benchfleet/build-worker.sh       builds a worker from src/ against a torch build's LibTorch
#   share/benchfleet/SOURCE_ID             a digest of src/ (cmake/SourceId.cmake): releases with the
#                                          same worker sources share the workers built from them
#   share/benchfleet/VERSION               the release's name: $BENCHFLEET_RELEASE_VERSION at install
#                                          time if set, else the project's version
# Included from the top-level CMakeLists.txt for the full build only (a BENCHFLEET_WORKER_ONLY
# build, which build-worker.sh installs, installs just the worker).
set(benchfleet_share share/benchfleet)

install(FILES ${PROJECT_SOURCE_DIR}/common/catalog/models.yaml DESTINATION ${benchfleet_share}/catalog)
file(GLOB agent_python_modules CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/agent/python/benchfleet_*.py)
install(FILES ${agent_python_modules} DESTINATION ${benchfleet_share})
install(PROGRAMS ${PROJECT_SOURCE_DIR}/agent/python/benchfleet-g++ DESTINATION ${benchfleet_share})
file(GLOB shared_rules CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/common/rules/*.json)
install(FILES ${shared_rules} DESTINATION ${benchfleet_share}/rules)
install(PROGRAMS ${PROJECT_SOURCE_DIR}/scripts/in-root.sh ${PROJECT_SOURCE_DIR}/scripts/build-worker.sh
        DESTINATION ${benchfleet_share})

# src/ is replaced as a whole: a file since removed from the sources must not linger in an
# earlier install and change SOURCE_ID.
install(CODE "file(REMOVE_RECURSE \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${benchfleet_share}/src\")")
install(FILES ${PROJECT_SOURCE_DIR}/CMakeLists.txt DESTINATION ${benchfleet_share}/src)
install(FILES ${PROJECT_SOURCE_DIR}/cmake/TorchApi.cmake ${PROJECT_SOURCE_DIR}/cmake/EmbedFiles.cmake
              ${PROJECT_SOURCE_DIR}/cmake/ExposeHeaders.cmake
              ${PROJECT_SOURCE_DIR}/cmake/EmbedFilesScript.cmake DESTINATION ${benchfleet_share}/src/cmake)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/common DESTINATION ${benchfleet_share}/src)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/agent/worker DESTINATION ${benchfleet_share}/src/agent)

install(CODE "
  set(dir \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${benchfleet_share}\")
  set(version \"\$ENV{BENCHFLEET_RELEASE_VERSION}\")
  if(version STREQUAL \"\")
    set(version \"${PROJECT_VERSION}\")
  endif()
  message(STATUS \"Installing: \${dir}/VERSION (\${version})\")
  file(WRITE \"\${dir}/VERSION\" \"\${version}\\n\")
  include(\"${PROJECT_SOURCE_DIR}/cmake/SourceId.cmake\")
  benchfleet_source_id(\"\${dir}/src\" source_id)
  message(STATUS \"Installing: \${dir}/SOURCE_ID (\${source_id})\")
  file(WRITE \"\${dir}/SOURCE_ID\" \"\${source_id}\\n\")
")
