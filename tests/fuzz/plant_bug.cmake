# Writes a copy of the config loader with one bounds check removed (the range
# check of numbers), for the planted-bug test of the fuzzing set-up: the short
# CI fuzz run must find it. Fails when the line is no longer there, so that
# the plant never silently disappears.
# cmake -DIN=config_loader.cpp -DOUT=planted_config_loader.cpp -P plant_bug.cmake
file(READ "${IN}" text)
set(check "if (!range.contains(*parsed)) fail(key, \"must be \" + range.describe() + \" (got \" + text + \")\");")
string(FIND "${text}" "${check}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "plant_bug.cmake: the range check of get_double is not in ${IN}; update the plant")
endif()
string(REPLACE "${check}" "/* planted bug: range check removed */" text "${text}")
file(WRITE "${OUT}" "${text}")
