#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Builds the .deb from the source tree (packaging/build-deb.sh, in a build
# directory kept under the test build tree so reruns are incremental),
# inspects it (contents, control fields, maintainer scripts, hardening, no
# fault-injection hook), runs lintian, and then, as root only, installs it,
# runs the installed passthru, removes and purges it, and checks what is
# left against the policy: /var/lib/passthru survives remove, goes on purge
# with a warning while a generation is applied, nothing of the package stays.
#
# The install half needs root and a machine where passthru is not installed
# and has no /var/lib/passthru or /etc/passthru (a CI machine); otherwise it
# is skipped (exit 125) after the build checks pass. Install runs are
# serialised by a lock, since several builds may share one machine.
source "$(dirname "$0")/lib.inc"
: "${PASSTHRU_BUILD_DIR:?}"
src=$SRC
need dpkg-deb dpkg-buildflags lintian cpack readelf flock

installed_by_us=no
created_state=no
cleanup() {
    if [[ $installed_by_us == yes ]]; then
        dpkg --purge passthru >/dev/null 2>&1 || true
    fi
    if [[ $created_state == yes ]]; then
        rm -rf /var/lib/passthru
    fi
}
at_exit cleanup

version=$(sed -n 's/^project(passthru VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
[[ -n $version ]] || fatal "no project(VERSION) in CMakeLists.txt"
# The Debian revision names this machine's release (packaging/build-deb.sh).
revision=1
os_major=$(. /etc/os-release && [[ ${ID:-} == debian ]] && echo "${VERSION_ID%%.*}" || true)
[[ -z $os_major ]] || revision=1+deb$os_major

# --- build -------------------------------------------------------------------
pkgbuild=$PASSTHRU_BUILD_DIR/package-build
mkdir -p "$pkgbuild"
exec 8>"$pkgbuild.lock"
flock 8
if ! deb=$("$src/packaging/build-deb.sh" "$pkgbuild" "$T/out" 2>"$T/build.log"); then
    tail -n 40 "$T/build.log" >&2
    fatal "packaging/build-deb.sh failed"
fi
[[ $(basename "$deb") == "passthru_${version}-${revision}_$(dpkg --print-architecture).deb" ]] || fail "unexpected package name $deb"
echo "built $deb"

# --- contents ----------------------------------------------------------------
dpkg-deb -c "$deb" | awk '{ print $6 }' | sed 's|^\./|/|; s|/$||' | grep -v '^$' | sort >"$T/contents"
# outside /usr only the kernel hook, the package's one conffile (packaging/CMakeLists.txt)
hook=/etc/kernel/postinst.d/passthru
outside=$(grep -v '^/usr\(/\|$\)' "$T/contents" | grep -vxF -e /etc -e /etc/kernel -e /etc/kernel/postinst.d -e "$hook" || true)
[[ -z $outside ]] || fail "files outside /usr: $outside"
grep -qxF "$hook" "$T/contents" || fail "the package lacks $hook"
for path in /usr/bin/passthru /usr/share/man/man1/passthru.1.gz \
            /usr/share/bash-completion/completions/passthru /usr/share/zsh/vendor-completions/_passthru \
            /usr/share/doc/passthru/copyright /usr/share/doc/passthru/changelog.Debian.gz \
            /usr/share/doc/passthru/README.Debian /usr/share/lintian/overrides/passthru \
            /usr/share/passthru/samples/epyc-4x2080ti/sys/bus/pci/devices/0000:01:00.0; do
    grep -qxF "$path" "$T/contents" || fail "the package lacks $path"
done
while read -r f; do
    grep -qxF "/usr/share/passthru/$f" "$T/contents" || fail "the package lacks /usr/share/passthru/$f"
done < <(cd "$src" && find templates profiles -type f)
want=$(cd "$src/tests/fixtures/hosts" && find epyc-4x2080ti | wc -l)
have=$(grep -c '^/usr/share/passthru/samples/epyc-4x2080ti\(/\|$\)' "$T/contents" || true)
[[ $want == "$have" ]] || fail "the sample host has $want entries in the tree but $have in the package"

# --- control -----------------------------------------------------------------
[[ $(dpkg-deb -f "$deb" Version) == "${version}-${revision}" ]] || fail "Version is $(dpkg-deb -f "$deb" Version), not ${version}-${revision}"
depends=$(dpkg-deb -f "$deb" Depends)
for lib in libc6 libpci3 libkmod2 libarchive13 libstdc++6; do
    [[ $depends == *"$lib "* || $depends == *"$lib," || $depends == *"$lib" ]] ||
        fail "Depends lacks $lib (shlibdeps): $depends"
done
dpkg-deb --ctrl-tarfile "$deb" | tar -tvf - >"$T/control"
for script in prerm postrm; do
    grep -q -- "-rwxr-xr-x .* \./$script\$" "$T/control" || fail "maintainer script $script is missing or not 0755"
done
[[ $(dpkg-deb --info "$deb" conffiles) == "$hook" ]] || fail "conffiles is not exactly $hook: $(dpkg-deb --info "$deb" conffiles 2>&1)"
dpkg-deb -c "$deb" >"$T/listing"
grep -q -- "^-rwxr-xr-x .* \.$hook\$" "$T/listing" || fail "$hook is not a 0755 file"

# --- the shipped binary --------------------------------------------------------
dpkg-deb -x "$deb" "$T/x"
bin=$T/x/usr/bin/passthru
if grep -q PASSTHRU_TEST_FAULT "$bin"; then
    fail "the shipped binary carries the fault-injection hook (PASSTHRU_FAULT_HOOK)"
fi
sections=$(readelf -SW "$bin")
grep -q '\.debug_info\|\.symtab' <<<"$sections" && fail "the shipped binary is not stripped"
grep -q '\.comment' <<<"$sections" && fail "the shipped binary keeps its .comment section"
readelf -lW "$bin" | grep -q GNU_RELRO || fail "the shipped binary lacks RELRO"
readelf -dW "$bin" | grep -q 'BIND_NOW\|FLAGS.*NOW' || fail "the shipped binary lacks BIND_NOW"
readelf -hW "$bin" | grep -q 'Type: *DYN' || fail "the shipped binary is not PIE"
gzip -t "$T/x/usr/share/man/man1/passthru.1.gz" || fail "the man page is not gzip"

# --- lintian -----------------------------------------------------------------
lintian --display-info --pedantic --tag-display-limit 0 "$deb" >"$T/lintian" 2>&1 || true
cat "$T/lintian"
if grep -q '^[EW]: ' "$T/lintian"; then
    fail "lintian reports errors or warnings"
fi

stop_if_failed
ok "package build, contents and lintian"

# --- install, use, remove, purge -------------------------------------------------
if [[ $(id -u) != 0 ]]; then
    skip "install checks need root"
fi
exec 9>/run/lock/passthru-package-test.lock
flock -w 1800 9 || fatal "another package test holds the install lock"
if dpkg-query -W -f='${Status}' passthru 2>/dev/null | grep -q 'installed\|config-files'; then
    skip "passthru is already installed on this machine; not touching it"
fi
if [[ -e /var/lib/passthru || -e /etc/passthru ]]; then
    skip "/var/lib/passthru or /etc/passthru exists on this machine; not touching it"
fi

installed_by_us=yes
export DEBIAN_FRONTEND=noninteractive
if ! apt-get -o DPkg::Lock::Timeout=300 install -y -q --no-install-recommends "$deb" >"$T/install.log" 2>&1; then
    cat "$T/install.log" >&2
    fatal "apt-get install failed"
fi
[[ $(command -v passthru) == /usr/bin/passthru ]] || fail "passthru is not /usr/bin/passthru"
[[ $(/usr/bin/passthru --version) == "passthru $version" ]] || fail "--version says '$(/usr/bin/passthru --version)'"
[[ $(man -w passthru) == /usr/share/man/man1/passthru.1.gz ]] || fail "man -w passthru gives '$(man -w passthru 2>&1)'"
MANPAGER=cat MANWIDTH=80 man passthru 2>/dev/null | grep -q '^EXIT STATUS' || fail "man passthru does not render"
sample=/usr/share/passthru/samples/epyc-4x2080ti
if /usr/bin/passthru scan --root "$sample" >"$T/scan" 2>"$T/scan.err"; then
    n=$(grep -c 'RTX 2080 Ti' "$T/scan" || true)
    ((n >= 4)) || fail "scan of the installed sample host shows $n RTX 2080 Ti lines"
else
    cat "$T/scan.err" >&2
    fail "passthru scan --root $sample failed"
fi
verify=$(dpkg --verify passthru 2>&1 || true)
[[ -z $verify ]] || fail "the installed files changed (scan wrote into the sample?): $verify"

# A real journal: the installed passthru applies the plan to a copy of the
# sample host; that journal then stands for this machine's.
cp -a "$sample" "$T/host"
if /usr/bin/passthru --root "$T/host" apply --vm 101 --gpus 0,1,2,3 --yes >"$T/apply.log" 2>&1 &&
   [[ -d $T/host/var/lib/passthru/generations ]]; then
    created_state=yes
    cp -a "$T/host/var/lib/passthru" /var/lib/passthru
else
    cat "$T/apply.log" >&2
    fail "passthru apply on a copy of the sample host failed; cannot check the purge warning"
fi

# Remove: the binary and docs go, the journal stays, prerm names what stays applied.
apt-get -o DPkg::Lock::Timeout=300 remove -y -q passthru >"$T/remove.log" 2>&1 || { cat "$T/remove.log" >&2; fail "apt-get remove failed"; }
while read -r path; do
    [[ -f $T/x$path || -L $T/x$path ]] || continue # only the package's files, not shared directories
    [[ $path == "$hook" ]] && continue             # the conffile stays until the purge
    [[ -e $path || -L $path ]] && fail "$path is left after remove"
done <"$T/contents"
# the kernel hook left by remove does nothing, and never fails a kernel's installation
[[ -x $hook ]] || fail "remove deleted the conffile $hook"
[[ -z $("$hook" 6.1.0-99-amd64 /boot/vmlinuz-6.1.0-99-amd64 2>&1) ]] || fail "$hook says something after remove"
if [[ $created_state == yes ]]; then
    [[ -d /var/lib/passthru/generations ]] || fail "remove deleted /var/lib/passthru"
    grep -q 'stay on the host' "$T/remove.log" || fail "prerm did not say which changes stay applied"
    grep -q 'generation 0*1, applied' "$T/remove.log" || fail "prerm did not name generation 1"
fi
dpkg-query -W -f='${Status}' passthru 2>/dev/null | grep -q config-files || fail "after remove passthru is not in config-files state"

# Purge: warns about the applied generation, then the journal goes too.
dpkg --purge passthru >"$T/purge.log" 2>&1 || { cat "$T/purge.log" >&2; fail "dpkg --purge failed"; }
installed_by_us=no
if [[ $created_state == yes ]]; then
    grep -q 'still applied' "$T/purge.log" || fail "purge did not warn about the applied generation"
    grep -q 'generation 0*1, applied:.*/etc/modprobe.d/passthru-vfio.conf' "$T/purge.log" ||
        fail "the purge warning does not list generation 1 and its files"
fi
for dir in /usr/share/passthru /usr/share/doc/passthru /var/lib/passthru /etc/passthru "$hook"; do
    [[ -e $dir ]] && fail "$dir is left after purge"
done
dpkg-query -W -f='${Status}' passthru 2>/dev/null | grep -q 'installed\|config-files' && fail "passthru is still known to dpkg after purge"
created_state=no
cat "$T/remove.log" "$T/purge.log"

finish "install, scan, man, remove and purge"
