# Fails if any source under DIR includes a SystemC or TLM header: the
# behavioural models in systemc/golden/ must stay plain C++17.
#   cmake -DDIR=<folder> -P check_plain_cxx.cmake
# With -DPLANT=<scratch folder>, DIR is first copied there and one of its
# headers gets a SystemC include, and the check runs on the copy (it must then
# fail: that shows the check can fail).
if(NOT DIR)
  message(FATAL_ERROR "check_plain_cxx: DIR not set")
endif()
if(PLANT)
  file(REMOVE_RECURSE "${PLANT}")
  file(COPY "${DIR}/" DESTINATION "${PLANT}")
  file(GLOB_RECURSE headers "${PLANT}/*.hpp")
  list(GET headers 0 victim)
  file(APPEND "${victim}" "\n#include <systemc>\n")
  set(DIR "${PLANT}")
endif()
file(GLOB_RECURSE sources "${DIR}/*.hpp" "${DIR}/*.h" "${DIR}/*.cpp" "${DIR}/*.cc")
if(NOT sources)
  message(FATAL_ERROR "check_plain_cxx: no sources under ${DIR}")
endif()
set(bad "")
foreach(f ${sources})
  file(STRINGS "${f}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"](systemc|tlm|sysc/|tlm_)")
  foreach(l ${lines})
    list(APPEND bad "${f}: ${l}")
  endforeach()
endforeach()
if(bad)
  list(JOIN bad "\n  " msg)
  message(FATAL_ERROR "SystemC/TLM includes in the golden models:\n  ${msg}")
endif()
list(LENGTH sources n)
message(STATUS "check_plain_cxx: ${n} files under ${DIR}, no SystemC or TLM include")
