# Project-wide compiler settings: warnings as errors for our own targets,
# sanitizers and line coverage as options, CUDA detection.

set(MOEHUB_WARNINGS -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion)
if(MOEHUB_WERROR)
  list(APPEND MOEHUB_WARNINGS -Werror)
endif()

if(MOEHUB_SANITIZE)
  add_compile_options($<$<COMPILE_LANGUAGE:CXX,C>:-fsanitize=address,undefined>
                      $<$<COMPILE_LANGUAGE:CXX,C>:-fno-omit-frame-pointer>
                      $<$<COMPILE_LANGUAGE:CXX,C>:-fno-sanitize-recover=undefined>)
  add_link_options(-fsanitize=address,undefined)
endif()

if(MOEHUB_COVERAGE)
  # gcov counters in every C/C++ object (scripts/coverage.sh reads them back);
  # CUDA stays off in that preset
  add_compile_options($<$<COMPILE_LANGUAGE:CXX,C>:--coverage>)
  add_link_options(--coverage)
endif()

# moehub_defaults(<target>): apply the project's warning flags to one of our own
# targets (third-party headers are included as SYSTEM and stay quiet).
function(moehub_defaults target)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${MOEHUB_WARNINGS}>)
endfunction()

set(MOEHUB_HAVE_CUDA OFF)
if(NOT MOEHUB_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90)   # Hopper (H100/H200/H800)
    endif()
    enable_language(CUDA)
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit REQUIRED)
    set(MOEHUB_HAVE_CUDA ON)
    message(STATUS "CUDA found: building kernels for sm_${CMAKE_CUDA_ARCHITECTURES}")
  elseif(MOEHUB_CUDA STREQUAL "ON")
    message(FATAL_ERROR "MOEHUB_CUDA=ON but no CUDA compiler was found")
  else()
    message(STATUS "No CUDA compiler: kernels and moehub-gpu are not built")
  endif()
endif()

# moehub_add_test(<name> SOURCES <files...> LIBS <targets...> [LABELS <labels...>])
# A GoogleTest executable whose tests are registered with CTest one by one.
include(GoogleTest)
function(moehub_add_test name)
  cmake_parse_arguments(T "" "" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  moehub_defaults(${name})
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main)
  target_compile_definitions(${name} PRIVATE
    MOEHUB_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    MOEHUB_BINARY_DIR="${PROJECT_BINARY_DIR}")
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES LABELS "${T_LABELS}")
endfunction()
