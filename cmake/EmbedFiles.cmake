# benchfleet_embed_files(OUTPUT <cpp> NAMESPACE <ns> FUNCTION <fn> FILES <f>...)
# Generates a .cpp defining `std::vector<benchfleet::EmbeddedFile> <ns>::<fn>()` with each file's
# name and contents, so binaries carry their migrations and documents without install paths.
function(benchfleet_embed_files)
  cmake_parse_arguments(ARG "" "OUTPUT;NAMESPACE;FUNCTION" "FILES" ${ARGN})
  add_custom_command(
    OUTPUT ${ARG_OUTPUT}
    COMMAND ${CMAKE_COMMAND} -DOUTPUT=${ARG_OUTPUT} -DNAMESPACE=${ARG_NAMESPACE} -DFUNCTION=${ARG_FUNCTION}
            "-DFILES=${ARG_FILES}" -P ${PROJECT_SOURCE_DIR}/cmake/EmbedFilesScript.cmake
    DEPENDS ${ARG_FILES} ${PROJECT_SOURCE_DIR}/cmake/EmbedFilesScript.cmake
    COMMENT "Embedding ${ARG_FUNCTION}"
    VERBATIM)
endfunction()
