#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# scripts/debian-root.sh: bad arguments are refused with exit 2 and nothing made;
# a small Debian 13 root is built from Debian's archive (variant extract: only
# the named packages unpacked, not configured, which keeps the test short): the release,
# the extra package, Debian's default sources, no .deb left in the root, the
# .debs in the shared apt cache; the same call again reuses it without rebuilding; a build
# that fails (a package the archive does not have) leaves the old root as it was.
#
# Needs root (mmdebstrap --mode=root) and Debian's archive; the roots live under
# the build tree next to the other test roots; the apt cache is the test's own.
source "$(dirname "$0")/lib.inc"
: "${PASSTHRU_BUILD_DIR:?}"
need mmdebstrap
[[ $(id -u) == 0 ]] || skip "mmdebstrap needs root here"
script=$SRC/scripts/debian-root.sh
roots=$PASSTHRU_BUILD_DIR/debian-roots
out=$roots/test-debian-root
cache=$T/apt-archives

# --- bad input: exit 2, nothing made ----------------------------------------
expect_rc 2 "$script" >/dev/null 2>&1
expect_rc 2 "$script" sid "$T/x" 2>"$T/err"
grep -q "unknown release 'sid'" "$T/err" || fail "no reason given for an unknown release: $(cat "$T/err")"
expect_rc 2 "$script" trixie "$T/x" 'bad;name' 2>/dev/null
expect_rc 2 "$script" --variant nope trixie "$T/x" 2>/dev/null
expect_rc 2 "$script" trixie / 2>/dev/null
[[ ! -e $T/x ]] || fail "a refused call made $T/x"

# --- a fresh build ------------------------------------------------------------
rm -rf "$out" "$out.new"
got=$("$script" --variant extract --cache "$cache" trixie "$out" base-files pci.ids 2>"$T/build.log") || {
    tail -n 30 "$T/build.log" >&3
    fatal "building a trixie root failed"
}
[[ $got == "$out" ]] || fail "printed '$got', not the root's path"
[[ $(cut -d. -f1 "$out/etc/debian_version") == 13 ]] || fail "not a Debian 13 root: $(cat "$out/etc/debian_version")"
[[ -f $out/usr/share/misc/pci.ids ]] || fail "pci.ids' file is not in the root"
grep -qx 'deb http://deb.debian.org/debian trixie main' "$out/etc/apt/sources.list" ||
    fail "the root's sources.list lacks Debian's default trixie line"
grep -qx 'deb http://deb.debian.org/debian-security trixie-security main' "$out/etc/apt/sources.list" ||
    fail "the root's sources.list lacks trixie-security"
[[ -z $(find "$out/var/cache/apt/archives" -name '*.deb') ]] || fail ".debs were left in the root"
compgen -G "$cache/pci.ids_*.deb" >/dev/null || fail "the apt cache $cache lacks pci.ids' .deb"
compgen -G "$cache/base-files_*.deb" >/dev/null || fail "the apt cache $cache lacks base-files' .deb"
[[ ! -e $out.new ]] || fail "the build left $out.new"
stamp=$(stat -c %i:%Y "$out/.debian-root")

# --- the same inputs again: reused ---------------------------------------------
"$script" --variant=extract 13 "$out" pci.ids base-files pci.ids >/dev/null 2>"$T/again.log" || fail "the second call failed"
grep -q 'is up to date' "$T/again.log" || fail "the same release, variant and packages did not reuse the root: $(cat "$T/again.log")"
[[ $(stat -c %i:%Y "$out/.debian-root") == "$stamp" ]] || fail "the root was rebuilt"

# --- a failed build keeps the old root ----------------------------------------
expect_rc 1 "$script" --variant extract trixie "$out" base-files pci.ids passthru-no-such-package 2>"$T/bad.log"
grep -q 'mmdebstrap failed' "$T/bad.log" || fail "no reason given for the failed build"
[[ $(stat -c %i:%Y "$out/.debian-root") == "$stamp" ]] || fail "the failed build touched the old root"
[[ ! -e $out.new ]] || fail "the failed build left $out.new"

finish "debian-root.sh builds, reuses and keeps roots"
