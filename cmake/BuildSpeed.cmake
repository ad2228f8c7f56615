# SPDX-License-Identifier: GPL-2.0-or-later
# Build speed (tests/README.md, "Where the time goes"). The standard library and the
# heavy third-party headers that nearly every translation unit includes (nlohmann/json
# above all) are precompiled once per large target instead of parsed again in each of
# its files. Every file still includes what it uses; PASSTHRU_PCH=OFF builds without.
option(PASSTHRU_PCH "Precompile the common standard and third-party headers" ON)
set(PASSTHRU_PCH_HEADERS
  <algorithm> <array> <cstdint> <cstdio> <cstdlib> <filesystem> <functional> <map> <memory>
  <optional> <set> <sstream> <string> <string_view> <utility> <vector>
  <nlohmann/json.hpp> <tl/expected.hpp>)

# passthru_precompile(TARGET [EXTRA-HEADER...]): TARGET's files get the common headers
# (and EXTRA-HEADERs) precompiled
function(passthru_precompile target)
  if(PASSTHRU_PCH)
    target_precompile_headers(${target} PRIVATE ${PASSTHRU_PCH_HEADERS} ${ARGN})
  endif()
endfunction()

# Unity builds: each target's files are compiled in batches of 16, one translation unit
# a batch, so the templates every file instantiates (nlohmann/json, the standard
# containers) are compiled once a batch instead of once a file. A from-scratch Debug build
# of the tree took 3.2 times less CPU this way with the headers above (tests/README.md).
# CMAKE_UNITY_BUILD=OFF on the cmake command line builds file by file; the compile
# database scripts/check-tidy.sh reads is always file by file.
if(NOT DEFINED CMAKE_UNITY_BUILD)
  set(CMAKE_UNITY_BUILD ON)
endif()
if(NOT DEFINED CMAKE_UNITY_BUILD_BATCH_SIZE)
  set(CMAKE_UNITY_BUILD_BATCH_SIZE 16)
endif()
