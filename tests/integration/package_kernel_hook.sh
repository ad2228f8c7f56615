#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The kernel hook with real kernel packages (docs/facts.md: kernel-hooks):
#
#   package_kernel_hook.sh [bookworm|trixie]     (default bookworm)
#
# In the reboot hosts' Debian root of the release (<build>/reboot-cache/root-RELEASE, made
# by scripts/debian-root.sh from Debian's packages with tests/reboot/root-packages and the
# package's Depends, so the reboot test and this one share it), seen through an overlay so
# it stays clean, and chrooted natively (scripts/in-root.sh; no emulation):
#  - apt installs passthru's package, which ships /etc/kernel/postinst.d/passthru;
#  - passthru's vfio files (from `apply` on a copy of the package's sample host) go into
#    the root's /etc, after the root's kernel (K1) had its initramfs built: kernel check
#    flags K1 (exit 11: its initramfs lacks passthru-vfio.conf);
#  - Debian's dkms builds a module of a few lines (written here) for K1 only, with K1's
#    headers;
#  - apt installs a second real kernel package (K2: the newest linux-image-*-amd64 of the
#    release's archive other than K1); the kernel package's own postinst runs the real
#    /etc/kernel/postinst.d chain (dkms, initramfs-tools, passthru, zz-update-grub) and
#    the hook's verdict is in apt's output: K2 breaks passthrough, because the DKMS module
#    is not built for it; K2's initramfs, made after passthru's files, holds them;
#  - after `update-initramfs -u -k K1`, K1 is ok.
# passthru reads the running kernel from /proc/sys/kernel/osrelease and the PCI devices from
# /sys; inside the root the first says K1 and the second is the sample host's (bind mounts in
# the root's own mount namespace): the host the root stands for.
# The .debs (the kernel, dkms and the headers with their compiler) and the package lists are
# cached in <build>/reboot-cache/kernel-hook/RELEASE; the lists are fetched again only when
# the root changes. Needs root, mmdebstrap and Debian's archive for the first run.
source "$(dirname "$0")/lib.inc"
: "${PASSTHRU_BUILD_DIR:?}"
need mmdebstrap unshare chroot dpkg-deb flock sha256sum
[[ $(id -u) == 0 ]] || skip "building and using Debian roots needs root"

RELEASE=${1:-bookworm}
case $RELEASE in
bookworm | trixie) ;;
*) fatal "unknown release '$RELEASE' (bookworm, trixie)" ;;
esac
BUILD=$PASSTHRU_BUILD_DIR
CACHE=${PASSTHRU_REBOOT_CACHE:-$BUILD/reboot-cache}
ROOT=$CACHE/root-$RELEASE
KCACHE=$CACHE/kernel-hook/$RELEASE
HOOK=/etc/kernel/postinst.d/passthru
start=$SECONDS
log() { echo "[kernel-hook $RELEASE $((SECONDS - start))s] $*"; }

# --- the package: this machine's release builds natively, another one in its own root
mkdir -p "$T/pkg" "$T/out"
machine=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
if [[ $machine == "$RELEASE" ]]; then
    deb=$("$SRC/packaging/build-deb.sh" "$BUILD/package-build" "$T/pkg" 2>"$T/build.log")
else
    deb=$("$SRC/packaging/build-deb.sh" --release "$RELEASE" "$BUILD/package-$RELEASE" "$T/pkg" 2>"$T/build.log")
fi || { tail -n 40 "$T/build.log" >&3; fatal "packaging/build-deb.sh failed for $RELEASE"; }
dpkg-deb -c "$deb" >"$T/listing"
grep -q -- "^-rwxr-xr-x .* \.$HOOK\$" "$T/listing" || fail "the package does not ship $HOOK (0755)"
log "package $(basename "$deb")"

# --- the reboot hosts' root, with the same packages (tests/reboot/run.sh, make_root)
mapfile -t packages < <(grep -v '^#' "$SRC/tests/reboot/root-packages")
mapfile -t -O "${#packages[@]}" packages < <(dpkg-deb -f "$deb" Depends | tr ',' '\n' |
    sed 's/|.*//; s/(.*)//; s/[[:space:]]//g' | grep -v '^$' | sort -u)
"$SRC/scripts/debian-root.sh" --variant apt "$RELEASE" "$ROOT" "${packages[@]}" >/dev/null 2>"$T/root.log" ||
    { tail -n 30 "$T/root.log" >&3; fatal "scripts/debian-root.sh failed"; }
log "root $ROOT ($(tail -n 1 "$T/root.log"))"
# The overlay reads the root while the session runs: a shared hold of the lock that
# scripts/debian-root.sh takes before it replaces a root, so none is replaced under it.
exec 7>>"$ROOT.lock"
flock -s 7

# --- K2, by the rule the reboot test's kernel trial takes it (tests/reboot/second-kernel.sh:
# it fetches the package lists into the cache when the root changed, and downloads K2)
"$SRC/tests/reboot/second-kernel.sh" "$RELEASE" "$ROOT" "$CACHE" "$T/k2-debs" >"$T/second-kernel.txt" 2>"$T/second-kernel.err" ||
    { cat "$T/second-kernel.err" >&3; fatal "tests/reboot/second-kernel.sh found no second kernel for $RELEASE"; }
K2=$(sed -n 's/^K2 //p' "$T/second-kernel.txt")

# --- the cache of .debs and package lists, one run at a time
mkdir -p "$KCACHE/debs/partial" "$KCACHE/lists/partial"
exec 9>"$KCACHE.lock"
flock 9
key=$(sha256sum <"$ROOT/.debian-root" | cut -d' ' -f1)
refresh=0
[[ $(cat "$KCACHE/root-key" 2>/dev/null) == "$key" ]] || refresh=1
debs_before=$(du -sk "$KCACHE/debs" | cut -f1)

# The session inside the root. Each step's output goes to /out/STEP.log; the lines on
# stdout say what happened, for the checks below.
# shellcheck disable=SC2016
session='
set -u
export DEBIAN_FRONTEND=noninteractive
refresh=$1 deb=$2 k2=$3
step() { name=$1; shift; t=$(date +%s); "$@" >/out/$name.log 2>&1; rc=$?; echo "step $name rc=$rc $(( $(date +%s) - t ))s"; return 0; }
k1=$(ls /boot | sed -n "s/^vmlinuz-//p" | sort -V | tail -n 1)
echo "k1 $k1"
echo "$k1" >/tmp/osrelease
mount --bind /tmp/osrelease /proc/sys/kernel/osrelease || { echo "cannot bind /proc/sys/kernel/osrelease"; exit 1; }
[ "$refresh" = 0 ] || step update apt-get -q update
echo "k2 $k2 $(apt-cache policy linux-image-$k2 | sed -n "s/^ *Candidate: //p")"
# initramfs-tools with MODULES=list: the image gets the modules of /etc/initramfs-tools/modules
# (where passthru puts vfio) and the modprobe.d files, not the default "most" (about a
# thousand modules, most of each update-initramfs); BUSYBOX=n and zstd level 1, as the reboot
# hosts have them. Neither changes what kernel check reads.
sed -i -e "s/^MODULES=.*/MODULES=list/" -e "s/^BUSYBOX=.*/BUSYBOX=n/" /etc/initramfs-tools/initramfs.conf
echo "COMPRESSLEVEL=1" >>/etc/initramfs-tools/initramfs.conf
echo "initramfs.conf $(grep -E "^(MODULES|BUSYBOX|COMPRESSLEVEL)=" /etc/initramfs-tools/initramfs.conf | tr "\n" " ")"
step install-passthru apt-get install -y -q --no-install-recommends "$deb"
echo "hook $(stat -c %A "'"$HOOK"'" 2>/dev/null) $(dpkg -S "'"$HOOK"'" 2>/dev/null)"
echo "conffile $(dpkg-query -W -f="\${Conffiles}" passthru | awk "{print \$1}")"
# passthru writes its files on a copy of the sample host; the root gets them as apply would
cp -a /usr/share/passthru/samples/epyc-4x2080ti /tmp/host
step apply passthru --root /tmp/host apply --vm 101 --gpus 0,1,2,3 --yes
# passthru as the host itself reads the sysfs of the machine (the chroot has none): the one
# of the sample host, whose cards that configuration passes, stands for it
mount --bind /tmp/host/sys /sys || { echo "cannot bind the sysfs of the sample host at /sys"; exit 1; }
cp /tmp/host/etc/modprobe.d/passthru-vfio.conf /etc/modprobe.d/
grep "^vfio" /tmp/host/etc/initramfs-tools/modules >>/etc/initramfs-tools/modules
echo "modules $(grep "^vfio" /etc/initramfs-tools/modules | tr "\n" " ")"
step check-k1-before passthru --color never kernel check "$k1"
# a module of a few lines, built by Debian dkms for K1 only
step install-dkms apt-get install -y -q --no-install-recommends dkms "linux-headers-$k1"
mkdir -p /usr/src/pthello-1.0
printf "%s\n" "#include <linux/module.h>" "MODULE_LICENSE(\"GPL\");" \
    "static int __init pthello_init(void) { return 0; }" "static void __exit pthello_exit(void) { }" \
    "module_init(pthello_init);" "module_exit(pthello_exit);" >/usr/src/pthello-1.0/pthello.c
echo "obj-m := pthello.o" >/usr/src/pthello-1.0/Makefile
printf "%s\n" "PACKAGE_NAME=\"pthello\"" "PACKAGE_VERSION=\"1.0\"" "BUILT_MODULE_NAME[0]=\"pthello\"" \
    "DEST_MODULE_LOCATION[0]=\"/updates/dkms\"" "AUTOINSTALL=\"yes\"" >/usr/src/pthello-1.0/dkms.conf
step dkms-add dkms add pthello/1.0
step dkms-build dkms build pthello/1.0 -k "$k1"
step dkms-install dkms install pthello/1.0 -k "$k1"
echo "dkms-tree $(cd /var/lib/dkms/pthello/1.0 && find . -mindepth 1 -maxdepth 4 | sort | tr "\n" " ")"
echo "dkms-ko $(ls /lib/modules/$k1/updates/dkms/ 2>/dev/null | tr "\n" " ")"
echo "order $(run-parts --test /etc/kernel/postinst.d | tr "\n" " ")"
step install-k2 apt-get install -y --no-install-recommends "linux-image-$k2"
echo "k2-initrd $(test -f /boot/initrd.img-$k2 && echo yes || echo no)"
echo "k2-vfio $(lsinitramfs /boot/initrd.img-$k2 | grep "/drivers/vfio/" | sed "s|.*/||" | sort | tr "\n" " ")"
step check-k2 passthru --color never kernel check "$k2" --json
step rebuild-k1 update-initramfs -u -k "$k1"
step check-k1-after passthru --color never kernel check "$k1"
'
log "session in the root (lists: $([[ $refresh == 1 ]] && echo fetched || echo cached))"
t_session=$SECONDS
"$SRC/scripts/in-root.sh" --net --overlay "$T/overlay" --ro "$T/pkg:/pkg" --rw "$T/out:/out" \
    --rw "$KCACHE/debs:/var/cache/apt/archives" --rw "$KCACHE/lists:/var/lib/apt/lists" \
    "$ROOT" bash -c "$session" session "$refresh" "/pkg/$(basename "$deb")" "$K2" >"$T/session.log" 2>&1 ||
    { cat "$T/session.log" >&3; fatal "the session in the root failed"; }
t_session=$((SECONDS - t_session))
cat "$T/session.log"
debs_after=$(du -sk "$KCACHE/debs" | cut -f1)
printf '%s\n' "$key" >"$KCACHE/root-key"

line() { sed -n "s/^$1 //p" "$T/session.log" | head -n 1; }
rc_of() { sed -n "s/^step $1 rc=\([0-9]*\) .*/\1/p" "$T/session.log"; }
show() { echo "---- $1" >&3; tail -n 40 "$T/out/$1.log" >&3; }
K1=$(line k1) K2=$(line k2 | cut -d' ' -f1)
[[ -n $K1 && -n $K2 ]] || fatal "no kernels: k1 '$K1', k2 '$K2'"
for s in install-passthru apply install-dkms dkms-add dkms-build dkms-install install-k2 rebuild-k1; do
    [[ $(rc_of $s) == 0 ]] || { show $s; fatal "$s failed in the root"; }
done

# the hook is the package's conffile, executable
[[ $(line hook) == "-rwxr-xr-x passthru: $HOOK" ]] || fail "$HOOK: $(line hook)"
[[ $(line conffile) == "$HOOK" ]] || fail "the package's conffiles: $(line conffile)"
ok "$RELEASE: apt installs passthru with $HOOK, a conffile"

# K1's initramfs was built before passthru's files existed
[[ $(rc_of check-k1-before) == 11 ]] || { show check-k1-before; fail "kernel check $K1 before: exit $(rc_of check-k1-before), not 11"; }
if ! grep -qx "$K1 (running): breaks passthrough" "$T/out/check-k1-before.log" ||
    ! grep -q -- "- its initramfs lacks /etc/modprobe.d/passthru-vfio.conf" "$T/out/check-k1-before.log"; then
    show check-k1-before
    fail "$K1's initramfs without passthru's file is not flagged"
fi
ok "$RELEASE: $K1, its initramfs built before passthru's files, is flagged (exit 11)"

# DKMS built the module for K1 only, where dkms puts it
line dkms-tree | grep -q "\./$K1/x86_64/module/pthello.ko" || fail "dkms left no build for $K1: $(line dkms-tree)"
line dkms-ko | grep -q "pthello.ko" || fail "no pthello.ko in /lib/modules/$K1/updates/dkms: $(line dkms-ko)"
line dkms-tree | grep -q "\./$K2" && fail "dkms built pthello for $K2 too"

# the real chain ran from the kernel package's postinst, passthru's hook after initramfs-tools
order=$(line order)
case "$order" in
*"/postinst.d/dkms "*"/postinst.d/initramfs-tools "*"$HOOK "*) ;;
*) fail "run-parts' order: $order" ;;
esac
# apt runs dpkg on a pseudo-terminal: its lines end in CR LF
apt_log=$T/install-k2.txt
tr -d '\r' <"$T/out/install-k2.log" >"$apt_log"
grep -q "run-parts: executing /etc/kernel/postinst.d/initramfs-tools $K2" "$apt_log" ||
    grep -q "update-initramfs: Generating /boot/initrd.img-$K2" "$apt_log" || { show install-k2; fail "initramfs-tools' hook did not run for $K2"; }
[[ $(line k2-initrd) == yes ]] || fail "no /boot/initrd.img-$K2 after the install"
grep -qx "passthru: checking kernel $K2 for VFIO passthrough" "$apt_log" || { show install-k2; fail "no verdict of the hook in apt's output"; }
grep -qx "$K2: breaks passthrough" "$apt_log" || { show install-k2; fail "the hook's verdict on $K2 is not 'breaks passthrough'"; }
grep -q -- "- the DKMS module pthello 1.0 is not built for it" "$apt_log" || { show install-k2; fail "the missing DKMS module is not reported"; }
grep -q "passthru: kernel $K2 would break passthrough" "$apt_log" || fail "no advice after the verdict"
grep -n "passthru: checking kernel\|Generating /boot/initrd.img-$K2" "$apt_log" | head -n 3
ok "$RELEASE: apt install linux-image-$K2 prints the hook's verdict: the DKMS module built for $K1 only is missing"

[[ $(rc_of check-k2) == 11 ]] || fail "kernel check $K2: exit $(rc_of check-k2)"
# Debian 12's mkinitramfs (initramfs-tools 0.142) unpacks .ko.xz and .ko.zst modules into the
# image (vfio.ko for the tree's vfio.ko.xz): kernel check must find them under either name, so
# the only problem left is the DKMS module.
python3 - "$T/out/check-k2.log" "$K2" <<'PY' || fail "kernel check $K2 --json: not only the DKMS problem"
import json, sys
d = json.load(open(sys.argv[1]))
k = {x["release"]: x for x in d["kernels"]}[sys.argv[2]]
assert [p["check"] for p in k["problems"]] == ["dkms"], k["problems"]
PY
ok "$RELEASE: $K2's initramfs, made after passthru's files, holds them; only DKMS breaks it"

[[ $(rc_of check-k1-after) == 0 ]] || { show check-k1-after; fail "kernel check $K1 after update-initramfs: exit $(rc_of check-k1-after)"; }
grep -qx "$K1 (running): ok" "$T/out/check-k1-after.log" || fail "$K1 is not ok after update-initramfs"
ok "$RELEASE: $K1 is ok once update-initramfs rebuilt its image"

log "K1 $K1, K2 $(line k2); session ${t_session}s; .deb cache $((debs_before / 1024)) -> $((debs_after / 1024)) MB; steps: $(sed -n 's/^step \([a-z0-9-]*\) rc=[0-9]* \([0-9]*s\)$/\1 \2/p' "$T/session.log" | paste -sd, -)"
finish "$RELEASE: the kernel hook in apt's output with real kernel packages"
