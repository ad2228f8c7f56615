#!/usr/bin/env bash
# Builds the Debian package from the source tree with CPack:
#   packaging/build-deb.sh [BUILD_DIR [OUT_DIR]]
# BUILD_DIR (default build-deb) is reused, so a second run only rebuilds
# what changed. The build uses Debian's compiler and linker flags
# (dpkg-buildflags, hardening=+all), installs to /usr and leaves out the
# test-only fault-injection hook (PASSTHRU_TESTING=OFF). Prints the path of
# the .deb on stdout; everything else goes to stderr.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/build-deb}
out=${2:-$build/package}

export DEB_BUILD_MAINT_OPTIONS=hardening=+all
CXXFLAGS="$(dpkg-buildflags --get CXXFLAGS) $(dpkg-buildflags --get CPPFLAGS)"
LDFLAGS="$(dpkg-buildflags --get LDFLAGS)"
export CXXFLAGS LDFLAGS

cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=None -DCMAKE_INSTALL_PREFIX=/usr \
      -DPASSTHRU_TESTING=OFF -DPASSTHRU_WARNINGS_AS_ERRORS=OFF >&2
cmake --build "$build" -j"$(nproc)" >&2
rm -f "$out"/passthru_*.deb
(cd "$build" && cpack -G DEB -B "$out") >&2
ls "$out"/passthru_*.deb
