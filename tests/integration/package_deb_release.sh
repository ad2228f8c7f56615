#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A package per Debian release (PVE 8 runs on Debian 12, PVE 9 on Debian 13):
# for each supported release other than the one this machine runs (whose package
# integration.package_deb builds, checks with lintian and installs here, and the
# reboot test installs into that release's own root), or for the releases
# PASSTHRU_PACKAGE_RELEASES names (`bookworm trixie`: both), packaging/build-deb.sh
# --release builds the .deb inside a root of that release, and then:
#  - its version ends in +deb12 / +deb13 and its Depends are that release's
#    libraries (bookworm: libboost-program-options1.74.0, libssl3; trixie:
#    libboost-program-options1.83.0, libssl3t64), as dpkg-shlibdeps found them;
#  - that release's lintian reports no error or warning (overrides: see
#    packaging/debian/lintian-overrides);
#  - apt installs it into a clean minbase root of the same release (through an
#    overlay, so the clean root stays clean), resolving the dependencies from the
#    archive; `passthru --version`, `man -w passthru` and a scan of the installed
#    sample host work there; apt removes it, then purges it, and nothing of it is left.
# Everything runs in roots (scripts/in-root.sh): this machine's dpkg is never used.
# Needs root, mmdebstrap and Debian's archive.
source "$(dirname "$0")/lib.inc"
: "${PASSTHRU_BUILD_DIR:?}"
need mmdebstrap unshare chroot
[[ $(id -u) == 0 ]] || skip "building and using Debian roots needs root"

version=$(sed -n 's/^project(passthru VERSION \([0-9.]*\).*/\1/p' "$SRC/CMakeLists.txt")
[[ -n $version ]] || fatal "no project(VERSION) in CMakeLists.txt"
roots=$PASSTHRU_BUILD_DIR/debian-roots
arch=$(dpkg --print-architecture)

# The shell run inside the clean root: install, use, remove, purge.
# shellcheck disable=SC2016
install_check='
set -eu
export DEBIAN_FRONTEND=noninteractive
deb=$1 want=$2
apt-get -q update >/tmp/update.log 2>&1 || { cat /tmp/update.log; exit 1; }
[ -z "$(dpkg-query -W -f="\${Status}" passthru 2>/dev/null)" ] || { echo "the clean root has passthru"; exit 1; }
apt-get install -y -q --no-install-recommends "$deb" >/tmp/install.log 2>&1 || { cat /tmp/install.log; exit 1; }
echo "version: $(passthru --version)"
echo "man: $(man -w passthru)"
passthru scan --root /usr/share/passthru/samples/epyc-4x2080ti >/tmp/scan 2>&1 || { cat /tmp/scan; echo "scan failed"; exit 1; }
echo "scan: $(grep -c "RTX 2080 Ti" /tmp/scan) RTX 2080 Ti lines"
apt-get remove -y -q passthru >/tmp/remove.log 2>&1 || { cat /tmp/remove.log; exit 1; }
echo "after remove: $(dpkg-query -W -f="\${Status}" passthru 2>/dev/null), bin $(test -e /usr/bin/passthru && echo present || echo gone)"
apt-get purge -y -q passthru >/tmp/purge.log 2>&1 || { cat /tmp/purge.log; exit 1; }
echo "after purge: [$(dpkg-query -W -f="\${Status}" passthru 2>/dev/null || true)]"
for d in /usr/share/passthru /usr/share/doc/passthru /var/lib/passthru /etc/passthru /etc/kernel/postinst.d/passthru; do
    [ ! -e "$d" ] || echo "left: $d"
done
'

check_release() {
    local release=$1 major=$2 boost=$3 ssl=$4
    local start=$SECONDS deb depends log=$T/$release

    mkdir -p "$log"
    if ! deb=$("$SRC/packaging/build-deb.sh" --release "$release" "$PASSTHRU_BUILD_DIR/package-$release" "$log/out" 2>"$log/build.log"); then
        tail -n 40 "$log/build.log" >&3
        fail "$release: packaging/build-deb.sh --release $release failed"
        return
    fi
    echo "$release: built $(basename "$deb") in $((SECONDS - start)) s"
    [[ $(basename "$deb") == "passthru_${version}-1+deb${major}_${arch}.deb" ]] || fail "$release: package named $(basename "$deb")"
    [[ $(dpkg-deb -f "$deb" Version) == "${version}-1+deb${major}" ]] || fail "$release: Version is $(dpkg-deb -f "$deb" Version)"
    # Relative BUILD_DIR and OUT_DIR count from the caller's directory (the .deb once went
    # under BUILD_DIR, where cpack runs): the same build again, from / inside the root,
    # with OUT_DIR tmp/rel-out; it only repackages.
    local rel
    rel=$("$SRC/scripts/in-root.sh" --ro "$SRC:/src" --rw "$PASSTHRU_BUILD_DIR/package-$release:/build" "$roots/$release-dev" \
        sh -c 'cd / && bash /src/packaging/build-deb.sh build tmp/rel-out 2>/tmp/log || { tail -n 20 /tmp/log; exit 1; }; ls /tmp/rel-out' 2>&1) ||
        fail "$release: packaging/build-deb.sh build tmp/rel-out (relative, from /) failed: $rel"
    [[ $rel == "/tmp/rel-out/$(basename "$deb")"$'\n'"$(basename "$deb")" ]] ||
        fail "$release: with relative directories the .deb is not printed and placed as /tmp/rel-out/$(basename "$deb"): $rel"
    [[ ! -e $PASSTHRU_BUILD_DIR/package-$release/tmp ]] || fail "$release: a relative OUT_DIR put the .deb under BUILD_DIR"
    depends=$(dpkg-deb -f "$deb" Depends)
    echo "$release: Depends: $depends"
    for lib in "$boost" "$ssl" libpci3 libkmod2 libc6 libstdc++6; do
        [[ ",$depends," == *[,\ ]"$lib"[\ ,]* ]] || fail "$release: Depends lacks $lib: $depends"
    done
    # libarchive13 on Debian 12, libarchive13t64 on Debian 13 (the 64-bit time_t rename)
    [[ ",$depends," == *[,\ ]libarchive13* ]] || fail "$release: Depends lacks libarchive13: $depends"
    if [[ $release == trixie ]]; then
        [[ ",$depends," != *" libssl3 "* && ",$depends," != *" libssl3,"* ]] || fail "$release: Depends names bookworm's libssl3"
    fi

    # lintian of the same release, in the root the package was built in.
    if ! "$SRC/scripts/in-root.sh" --ro "$(dirname "$deb"):/pkg" "$roots/$release-dev" \
        lintian --display-info --pedantic --tag-display-limit 0 "/pkg/$(basename "$deb")" >"$log/lintian" 2>&1; then
        grep -q '^[EW]: ' "$log/lintian" || { cat "$log/lintian" >&3; fail "$release: lintian did not run"; }
    fi
    sed "s/^/$release: lintian: /" "$log/lintian"
    ! grep -q '^[EW]: ' "$log/lintian" || fail "$release: lintian reports errors or warnings"

    # A clean root of the same release; apt resolves the dependencies from the archive.
    local clean
    if ! clean=$("$SRC/scripts/debian-root.sh" "$release" "$roots/$release-clean" man-db 2>"$log/root.log"); then
        tail -n 30 "$log/root.log" >&3
        fail "$release: building the clean root failed"
        return
    fi
    "$SRC/scripts/in-root.sh" --net --overlay "$log/overlay" --ro "$(dirname "$deb"):/pkg" "$clean" \
        sh -c "$install_check" install-check "/pkg/$(basename "$deb")" "${version}-1+deb${major}" >"$log/install" 2>&1 ||
        { cat "$log/install" >&3; fail "$release: install, use, remove or purge failed in the clean root"; return; }
    sed "s/^/$release: /" "$log/install"
    grep -qx "version: passthru $version" "$log/install" || fail "$release: passthru --version is wrong"
    grep -qx "man: /usr/share/man/man1/passthru.1.gz" "$log/install" || fail "$release: man -w passthru is wrong"
    local n
    n=$(sed -n 's/^scan: \([0-9]*\) RTX 2080 Ti lines$/\1/p' "$log/install")
    [[ -n $n && $n -ge 4 ]] || fail "$release: the scan of the installed sample host shows ${n:-no} RTX 2080 Ti lines"
    grep -qx "after remove: deinstall ok config-files, bin gone" "$log/install" || fail "$release: remove left more than config files"
    grep -qx "after purge: \[\]" "$log/install" || fail "$release: passthru is still known to dpkg after purge"
    ! grep -q '^left: ' "$log/install" || fail "$release: purge left $(grep '^left: ' "$log/install")"
    [[ ! -e $clean/usr/bin/passthru ]] || fail "$release: the install reached the clean root itself"
    rm -rf "$log/overlay"
    ok "$release: package built, lintian clean, installed, used, removed and purged in $((SECONDS - start)) s"
}

# The supported releases but this machine's own, unless PASSTHRU_PACKAGE_RELEASES says.
this_release=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
releases=${PASSTHRU_PACKAGE_RELEASES-}
if [[ -z $releases ]]; then
    for release in bookworm trixie; do
        [[ $release == "$this_release" ]] || releases+=" $release"
    done
fi
for release in $releases; do
    case $release in
        bookworm) check_release bookworm 12 libboost-program-options1.74.0 libssl3 ;;
        trixie) check_release trixie 13 libboost-program-options1.83.0 libssl3t64 ;;
        *) fatal "unknown release $release in PASSTHRU_PACKAGE_RELEASES" ;;
    esac
done
finish "a package per release"
