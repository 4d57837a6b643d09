# Which form of LibTorch's C++ API the worker's sources must use, probed against the headers
# they will be compiled with (LibTorch 1.13, 2.6 and 2.11 differ in each of these):
#
#   benchfleet_probe_torch_api(<prefix> INCLUDES <dir>... [LIBRARIES <lib>...] [CUDA])
#
# sets <prefix>_DEFINITIONS in the caller's scope, a list of compile definitions:
#   BENCHFLEET_HAVE_AOTI             1 when the AOTInductor package loader header exists (2.6+)
#   BENCHFLEET_AOTI_SINGLE_THREADED  1 when its constructor takes run_single_threaded (2.7+)
#   BENCHFLEET_CUDA_STAT_TYPE        (CUDA) the caching allocator's StatType enum:
#                                    c10::CachingDeviceAllocator::StatType (2.6+),
#                                    c10::cuda::CUDACachingAllocator::StatType (before)
#   BENCHFLEET_HAVE_LAZY_INIT_DEVICE (CUDA) 1 when at::Context has lazyInitDevice (2.6+; older
#                                    ones have lazyInitCUDA, which 2.6 deprecates)
# A probe that matches none of the known forms stops the configuration with the compiler's
# output, instead of building a worker that guesses. Results are cached per prefix and redone
# when the include directories or libraries change.
include_guard(GLOBAL)
include(CheckCXXSourceCompiles)

function(benchfleet_probe_torch_api prefix)
  cmake_parse_arguments(PARSE_ARGV 1 arg "CUDA" "" "INCLUDES;LIBRARIES")
  set(inputs "${arg_INCLUDES}|${arg_LIBRARIES}|${arg_CUDA}")
  if(NOT "${${prefix}_PROBED_FOR}" STREQUAL "${inputs}")
    foreach(var AOTI_HEADER AOTI_TWO_ARGS AOTI_SINGLE_THREADED STAT_TYPE_DEVICE STAT_TYPE_CUDA LAZY_INIT_DEVICE)
      unset(${prefix}_${var} CACHE)
    endforeach()
  endif()

  # Only compiled, never linked (the headers may come without libraries), and without the
  # project's -Werror: the probes ask what the API is, not whether LibTorch's headers are warning-free.
  set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)
  set(CMAKE_CXX_FLAGS "-w")
  set(CMAKE_REQUIRED_INCLUDES ${arg_INCLUDES})
  set(CMAKE_REQUIRED_LIBRARIES ${arg_LIBRARIES})
  set(CMAKE_REQUIRED_QUIET ON)

  set(defs)
  find_file(${prefix}_AOTI_HEADER torch/csrc/inductor/aoti_package/model_package_loader.h
            PATHS ${arg_INCLUDES} NO_DEFAULT_PATH NO_CACHE)
  if(${prefix}_AOTI_HEADER)
    set(loader "#include <string>\n#include <torch/csrc/inductor/aoti_package/model_package_loader.h>\n")
    check_cxx_source_compiles("${loader}
      void probe(const std::string& p) { torch::inductor::AOTIModelPackageLoader l(p, \"model\"); (void)l; }"
      ${prefix}_AOTI_TWO_ARGS)
    if(NOT ${prefix}_AOTI_TWO_ARGS)
      benchfleet_probe_failed("${prefix}" "AOTIModelPackageLoader(path, name)")
    endif()
    check_cxx_source_compiles("${loader}
      void probe(const std::string& p) { torch::inductor::AOTIModelPackageLoader l(p, \"model\", true); (void)l; }"
      ${prefix}_AOTI_SINGLE_THREADED)
    list(APPEND defs BENCHFLEET_HAVE_AOTI=1)
    if(${prefix}_AOTI_SINGLE_THREADED)
      list(APPEND defs BENCHFLEET_AOTI_SINGLE_THREADED=1)
    else()
      list(APPEND defs BENCHFLEET_AOTI_SINGLE_THREADED=0)
    endif()
  else()
    list(APPEND defs BENCHFLEET_HAVE_AOTI=0 BENCHFLEET_AOTI_SINGLE_THREADED=0)
  endif()

  if(arg_CUDA)
    set(allocator "#include <c10/cuda/CUDACachingAllocator.h>\n")
    check_cxx_source_compiles("${allocator}
      constexpr auto probe = c10::CachingDeviceAllocator::StatType::AGGREGATE;" ${prefix}_STAT_TYPE_DEVICE)
    if(${prefix}_STAT_TYPE_DEVICE)
      list(APPEND defs BENCHFLEET_CUDA_STAT_TYPE=c10::CachingDeviceAllocator::StatType)
    else()
      check_cxx_source_compiles("${allocator}
        constexpr auto probe = c10::cuda::CUDACachingAllocator::StatType::AGGREGATE;" ${prefix}_STAT_TYPE_CUDA)
      if(NOT ${prefix}_STAT_TYPE_CUDA)
        benchfleet_probe_failed("${prefix}" "the CUDA caching allocator's StatType")
      endif()
      list(APPEND defs BENCHFLEET_CUDA_STAT_TYPE=c10::cuda::CUDACachingAllocator::StatType)
    endif()
    check_cxx_source_compiles("#include <ATen/Context.h>
      void probe() { at::globalContext().lazyInitDevice(c10::DeviceType::CUDA); }" ${prefix}_LAZY_INIT_DEVICE)
    if(${prefix}_LAZY_INIT_DEVICE)
      list(APPEND defs BENCHFLEET_HAVE_LAZY_INIT_DEVICE=1)
    else()
      list(APPEND defs BENCHFLEET_HAVE_LAZY_INIT_DEVICE=0)
    endif()
  endif()

  set(${prefix}_PROBED_FOR "${inputs}" CACHE INTERNAL "what ${prefix}'s LibTorch API probes ran against")
  set(${prefix}_DEFINITIONS ${defs} PARENT_SCOPE)
endfunction()

function(benchfleet_probe_failed prefix what)
  message(FATAL_ERROR "${prefix}: none of the known forms of ${what} compiles against these LibTorch headers; "
                      "see CMakeFiles/CMakeConfigureLog.yaml for the compiler's output")
endfunction()
