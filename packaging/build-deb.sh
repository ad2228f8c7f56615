#!/usr/bin/env bash
# Builds the Debian package from the source tree with CPack:
#   packaging/build-deb.sh [--release bookworm|trixie|12|13] [BUILD_DIR [OUT_DIR]]
# BUILD_DIR (default build-deb) is reused, so a second run only rebuilds
# what changed. The build uses Debian's compiler and linker flags
# (dpkg-buildflags, hardening=+all, without -g), installs to /usr and builds no tests
# (PASSTHRU_TESTING=OFF; passthru itself never carries the test-only
# fault-injection hook, which only tests/ passthru-faults links). Prints the path of
# the .deb on stdout; everything else goes to stderr.
#
# The package is for one Debian release: its Depends come from that release's
# shlibs and its version says which (0.1.0-1+deb12, 0.1.0-1+deb13). Without
# --release it is built on this machine for this machine's release. With
# --release it is built inside a root of that release made from Debian's own
# packages (scripts/debian-root.sh, kept under BUILD_DIR's parent as
# debian-roots/RELEASE-dev, shared with scripts/test-debian13.sh), through
# scripts/in-root.sh: the source read-only, no network, nothing of this machine
# touched. That needs root, mmdebstrap and Debian's archive for the first build.
# Concurrent calls for one BUILD_DIR take turns (a lock in it).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
release=""
if [[ ${1:-} == --release ]]; then
    release=${2:?--release needs bookworm, trixie, 12 or 13}
    shift 2
elif [[ ${1:-} == --release=* ]]; then
    release=${1#*=}
    shift
fi
build=${1:-$here/build-deb}
out=${2:-$build/package}
# Both made absolute here: cpack runs in BUILD_DIR, and a relative OUT_DIR would
# land under it instead of where it was asked for.
mkdir -p "$build" "$out"
build=$(cd "$build" && pwd)
out=$(cd "$out" && pwd)

if [[ -n $release ]]; then
    case $release in
        12 | bookworm) release=bookworm ;;
        13 | trixie) release=trixie ;;
        *) echo "build-deb: unknown release '$release' (bookworm/12 or trixie/13)" >&2; exit 2 ;;
    esac
    mapfile -t packages < <("$here/scripts/deps.sh" --list build test docs package)
    packages+=(ifupdown2 ccache)
    root=$("$here/scripts/debian-root.sh" "$release" "$(dirname "$build")/debian-roots/$release-dev" "${packages[@]}")
    deb=$("$here/scripts/in-root.sh" --ro "$here:/src" --rw "$build:/build" --rw "$out:/out" "$root" \
        bash /src/packaging/build-deb.sh /build /out)
    echo "$out/$(basename "$deb")"
    exit 0
fi

# One build at a time in BUILD_DIR: the package tests and the reboot test share theirs
# and may run at once (scripts/test.sh). With --release this is the call inside the
# root, on the same directory bound at /build, so the lock is the same file.
exec 9>"$build/.build-deb.lock"
flock 9

# The release this machine runs, for the version suffix (+deb12, +deb13).
deb_revision=1
if [[ -r /etc/os-release ]]; then
    # shellcheck source=/dev/null
    os_id=$(. /etc/os-release && echo "${ID:-}")
    os_version=$(. /etc/os-release && echo "${VERSION_ID:-}")
    if [[ $os_id == debian && $os_version =~ ^[0-9]+ ]]; then
        deb_revision=1+deb${BASH_REMATCH[0]}
    fi
fi

export DEB_BUILD_MAINT_OPTIONS=hardening=+all
# Without Debian's -g (dpkg-buildflags' own way to drop a flag): the package ships its binary
# stripped (CPack strips it) and there is no -dbgsym package, so the debug information was
# thrown away after costing about a third of the compile time (a unity batch of the core:
# 61.6 s with -g, 40.2 s without, GCC 12 at -O3).
export DEB_CXXFLAGS_MAINT_STRIP=-g
CXXFLAGS="$(dpkg-buildflags --get CXXFLAGS) $(dpkg-buildflags --get CPPFLAGS)"
LDFLAGS="$(dpkg-buildflags --get LDFLAGS)"
export CXXFLAGS LDFLAGS

# The package is the project's Release configuration (-O3, after Debian's -O2 and
# _FORTIFY_SOURCE from dpkg-buildflags), with warnings as errors: the optimizer's
# warnings (-Wrestrict, -Wmaybe-uninitialized, ...) show only at -O2/-O3, never in a
# Debug build, and the package builds of both releases (GCC 12 on Debian 12, GCC 14
# inside the Debian 13 root) are where CI fails on them.
cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
      -DPASSTHRU_TESTING=OFF -DPASSTHRU_WARNINGS_AS_ERRORS=ON -DPASSTHRU_DEB_RELEASE="$deb_revision" >&2
cmake --build "$build" -j"$(nproc)" >&2
rm -f "$out"/passthru_*.deb

# The package is made again only when what goes into it changed. The package test and the
# reboot hosts of one run share this build tree, and cpack took 50-90 s of a QEMU lane each
# time for the same package. What goes in: the install tree (DESTDIR install: names, types,
# modes, link targets and the contents of every file), CPack's configuration (version,
# control fields) and the packaging directory (maintainer scripts). The kept package
# is reused when all of it is the same as when it was made.
kept=$build/package-kept
fp_root=$build/fingerprint-root
rm -rf "$fp_root"
DESTDIR=$fp_root cmake --install "$build" >/dev/null
fingerprint=$({
    (cd "$fp_root" && find . -printf '%p %y %m %l\n' | LC_ALL=C sort)
    (cd "$fp_root" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum)
    cat "$build/CPackConfig.cmake"
    (cd "$here/packaging" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum)
} | sha256sum | cut -d' ' -f1)
rm -rf "$fp_root"
if [[ -f $kept/fingerprint && $(cat "$kept/fingerprint") == "$fingerprint" ]] &&
    compgen -G "$kept/passthru_*.deb" >/dev/null; then
    echo "build-deb: nothing that goes into the package changed; the package made before is reused" >&2
    cp "$kept"/passthru_*.deb "$out"/
    ls "$out"/passthru_*.deb
    exit 0
fi
rm -rf "$kept"
# cpack leaves its work tree (_CPack_Packages) wherever -B points: it packs into
# a directory of the build tree, and OUT_DIR gets the .deb alone.
staging=$build/cpack-out
rm -rf "$staging"
(cd "$build" && cpack -G DEB -B "$staging") >&2
mv "$staging"/passthru_*.deb "$out"/
rm -rf "$staging"
mkdir -p "$kept"
cp "$out"/passthru_*.deb "$kept"/
echo "$fingerprint" >"$kept/fingerprint"
ls "$out"/passthru_*.deb
