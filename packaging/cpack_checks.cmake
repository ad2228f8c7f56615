# SPDX-License-Identifier: GPL-2.0-or-later
# Run by cpack (CPACK_PROJECT_CONFIG_FILE) before it packages anything.
if(CPACK_GENERATOR STREQUAL "DEB")
  if(CPACK_PASSTHRU_TESTING)
    message(FATAL_ERROR "refusing to package a build with PASSTHRU_TESTING=ON (a package is built without "
                        "the tests and their fault-hook binary); configure with -DPASSTHRU_TESTING=OFF, or use packaging/build-deb.sh")
  endif()
  if(NOT CPACK_PASSTHRU_INSTALL_PREFIX STREQUAL "/usr")
    message(FATAL_ERROR "refusing to package a build for prefix ${CPACK_PASSTHRU_INSTALL_PREFIX}: the binary looks "
                        "for its data there; configure with -DCMAKE_INSTALL_PREFIX=/usr, or use packaging/build-deb.sh")
  endif()
endif()
