# SPDX-License-Identifier: GPL-2.0-or-later
# Warnings for first-party code only; third-party headers come in as system includes.
add_library(passthru_warnings INTERFACE)
option(PASSTHRU_WARNINGS_AS_ERRORS "Treat warnings as errors (CI)" OFF)
target_compile_options(passthru_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Woverloaded-virtual
  -Wcast-align -Wformat=2 -Wimplicit-fallthrough
  -Werror=return-type -Werror=switch
  $<$<BOOL:${PASSTHRU_WARNINGS_AS_ERRORS}>:-Werror>)

# Sanitizers for every target (scripts/test-sanitize.sh builds with address;undefined).
# Nothing recovers: the first report ends the process, so it cannot go unnoticed.
set(PASSTHRU_SANITIZE "" CACHE STRING "Sanitizers, e.g. address;undefined")
if(PASSTHRU_SANITIZE)
  list(JOIN PASSTHRU_SANITIZE "," _passthru_san)
  add_compile_options(-fsanitize=${_passthru_san} -fno-sanitize-recover=all -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${_passthru_san} -fno-sanitize-recover=all)
endif()
add_compile_definitions($<$<CONFIG:Debug>:_GLIBCXX_ASSERTIONS>)
