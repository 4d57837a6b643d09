# benchfleet_web_assets(TARGET <name> SOURCE_DIR <dir> OUTPUT_DIR <dir> CHART_JS <file>)
# Assembles the dashboard in OUTPUT_DIR: every file under SOURCE_DIR, plus Chart.js's UMD build
# (it defines the global `Chart`) as vendor/chart.umd.js. OUTPUT_DIR mirrors the sources: a file
# is copied when it changed, and one no longer in SOURCE_DIR is removed. When CHART_JS is missing
# (no `npm ci` yet) configuring warns and the dashboard is assembled without it; it is globbed
# with CONFIGURE_DEPENDS, so a later `npm ci` brings it in at the next build.
function(benchfleet_web_assets)
  cmake_parse_arguments(ARG "" "TARGET;SOURCE_DIR;OUTPUT_DIR;CHART_JS" "" ${ARGN})
  # FOLLOW_SYMLINKS: web/rules is common/rules, the rules the programs share (served at /rules/).
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS FOLLOW_SYMLINKS LIST_DIRECTORIES false "${ARG_SOURCE_DIR}/*")
  file(GLOB chart_js CONFIGURE_DEPENDS "${ARG_CHART_JS}")
  if(NOT chart_js)
    message(WARNING "${ARG_CHART_JS} is missing: the dashboard is assembled without its chart "
                    "library (it then says charts are unavailable). Run `npm ci` in ${PROJECT_SOURCE_DIR}.")
  endif()

  # The list of files itself is an input, so that removing a source re-runs the copy.
  set(manifest "${CMAKE_CURRENT_BINARY_DIR}/${ARG_TARGET}.manifest")
  string(REPLACE ";" "\n" listing "${sources};${chart_js}")
  file(CONFIGURE OUTPUT "${manifest}" CONTENT "${listing}\n" @ONLY)

  set(stamp "${CMAKE_CURRENT_BINARY_DIR}/${ARG_TARGET}.stamp")
  set(script "${PROJECT_SOURCE_DIR}/cmake/WebAssetsScript.cmake")
  add_custom_command(
    OUTPUT "${stamp}"
    COMMAND ${CMAKE_COMMAND} "-DSOURCE_DIR=${ARG_SOURCE_DIR}" "-DOUTPUT_DIR=${ARG_OUTPUT_DIR}"
            "-DCHART_JS=${chart_js}" -P "${script}"
    COMMAND ${CMAKE_COMMAND} -E touch "${stamp}"
    DEPENDS ${sources} ${chart_js} "${manifest}" "${script}"
    COMMENT "Assembling the dashboard in ${ARG_OUTPUT_DIR}"
    VERBATIM)
  add_custom_target(${ARG_TARGET} ALL DEPENDS "${stamp}")
endfunction()
