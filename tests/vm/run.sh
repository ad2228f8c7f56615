#!/usr/bin/env bash
# Real-kernel test harness: boots Debian 12's (or, with --debian 13, Debian 13's) own
# kernel under QEMU (TCG, q35) with an emulated Intel VT-d IOMMU, an emulated AMD-Vi IOMMU,
# or none, with real emulated PCI devices, runs the real `passthru` binary inside a busybox
# initramfs, and checks the results on the host (tests/vm/check.py). See tests/vm/README.md.
#
# Usage: tests/vm/run.sh [--debian 12|13] [--variant intel|amd|none]... [--capture] [--smoke]
#                        [--keep DIR] [--timeout SECONDS]
#   PASSTHRU=<binary>   the passthru binary to run in the guest (required unless --smoke)
#   PASSTHRU_VM_CACHE   download/unpack cache (default <repo>/.cache/vm for Debian 12,
#                       <build>/vm-cache/trixie for Debian 13, <build> being
#                       PASSTHRU_BUILD_DIR or <repo>/build)
#   PASSTHRU_VM_ACCEL   qemu accelerator (default tcg; kvm where the host CPU allows it)
#   PASSTHRU_VM_TIMEOUT seconds per boot before qemu is killed (default 200: a boot under a
#                       loaded machine's TCG took 150 s to its last step, the planted capture)
#   PASSTHRU_QEMU_LOCK  the lock every QEMU run holds (default /work/.qemu.lock when /work
#                       exists, else /tmp/passthru-qemu.lock)
#
# Nothing is installed into this machine except qemu-system-x86 (with apt, when missing).
# The kernel, busybox, kmod, dash and pci.ids packages are fetched with `apt-get download`
# and unpacked with `dpkg -x` into the cache: Debian 12's through this machine's apt,
# Debian 13's through an apt configuration of the cache's own (trixie, trixie-updates,
# trixie-security from Debian's archive, checked with debian-archive-keyring), which
# never touches this machine's apt state.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
DEBIAN=12
ACCEL=${PASSTHRU_VM_ACCEL:-tcg}
FIXTURES=$REPO/tests/fixtures/hosts
TIMEOUT=${PASSTHRU_VM_TIMEOUT:-200}
if [ -n "${PASSTHRU_QEMU_LOCK:-}" ]; then
    LOCK=$PASSTHRU_QEMU_LOCK
elif [ -d /work ]; then
    LOCK=/work/.qemu.lock
else
    LOCK=${TMPDIR:-/tmp}/passthru-qemu.lock
fi
CAPTURE=0
SMOKE=0
KEEP=
VARIANTS=()

die() {
    echo "tests/vm/run.sh: error: $*" >&2
    exit 1
}
log() { echo "[vm] $*"; }

usage() {
    sed -n '7,18p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

while [ $# -gt 0 ]; do
    case $1 in
    --variant)
        [ $# -ge 2 ] || die "--variant needs intel, amd or none"
        case $2 in intel | amd | none) VARIANTS+=("$2") ;; *) die "unknown variant '$2' (intel, amd, none)" ;; esac
        shift 2
        ;;
    --debian)
        [ $# -ge 2 ] || die "--debian needs 12 or 13"
        case $2 in 12 | bookworm) DEBIAN=12 ;; 13 | trixie) DEBIAN=13 ;; *) die "unknown Debian release '$2' (12 or 13)" ;; esac
        shift 2
        ;;
    --capture) CAPTURE=1; shift ;;
    --smoke) SMOKE=1; shift ;;
    --keep)
        [ $# -ge 2 ] || die "--keep needs a directory"
        KEEP=$2
        shift 2
        ;;
    --timeout)
        [ $# -ge 2 ] || die "--timeout needs seconds"
        TIMEOUT=$2
        shift 2
        ;;
    -h | --help) usage; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
    esac
done
[ ${#VARIANTS[@]} -gt 0 ] || VARIANTS=(intel amd none)
if [ "$DEBIAN" = 12 ]; then
    CACHE=${PASSTHRU_VM_CACHE:-$REPO/.cache/vm}
else
    CACHE=${PASSTHRU_VM_CACHE:-${PASSTHRU_BUILD_DIR:-$REPO/build}/vm-cache/trixie}
    # The committed captures are of Debian 12's kernel; 6.12's sysfs has other attributes.
    [ "$CAPTURE" = 0 ] || die "--capture rewrites the Debian 12 fixtures: use it without --debian 13"
fi
mkdir -p "$CACHE"
CACHE=$(cd "$CACHE" && pwd)

if [ "$SMOKE" = 0 ]; then
    [ -n "${PASSTHRU:-}" ] || die "PASSTHRU is not set: give the passthru binary to test (or --smoke)"
    [ -x "$PASSTHRU" ] || die "PASSTHRU=$PASSTHRU is not an executable file"
    PASSTHRU=$(readlink -f "$PASSTHRU")
fi

# --- host tools --------------------------------------------------------------------------
apt_install() {
    [ "$(id -u)" = 0 ] || die "$* missing and not root: install it with apt-get install $*"
    command -v apt-get >/dev/null || die "$* missing and no apt-get: this harness needs Debian 12"
    log "installing $* with apt-get"
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        -o DPkg::Lock::Timeout=120 "$@" >"$WORK/apt-install.log" 2>&1; then
        # A fresh machine may have no package lists yet.
        apt-get update -q -o DPkg::Lock::Timeout=120 >>"$WORK/apt-install.log" 2>&1 || true
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
            -o DPkg::Lock::Timeout=120 "$@" >>"$WORK/apt-install.log" 2>&1 ||
            { tail -n 20 "$WORK/apt-install.log" >&2; die "apt-get install $* failed"; }
    fi
}

if [ -n "$KEEP" ]; then
    mkdir -p "$KEEP"
    WORK=$(cd "$KEEP" && pwd)
else
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/passthru-vm.XXXXXX")
    trap 'rm -rf "$WORK"' EXIT
fi

command -v qemu-system-x86_64 >/dev/null || apt_install qemu-system-x86
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 still missing after installing qemu-system-x86"
command -v python3 >/dev/null || apt_install python3
command -v dpkg >/dev/null || die "dpkg missing: this harness needs Debian 12"
command -v timeout >/dev/null || die "timeout (coreutils) missing"

# --- packages into the cache -------------------------------------------------------------
mkdir -p "$CACHE/debs"

# apt for the release under test. Debian 12 is this machine's own release: its apt. Debian 13
# gets a configuration of its own under the cache: its sources (checked with Debian's archive
# keyring), lists, package cache and an empty dpkg status; nothing of this machine's apt
# state is read or written but the keyring.
APTC=()
if [ "$DEBIAN" = 13 ]; then
    A=$CACHE/apt
    mkdir -p "$A/state/lists/partial" "$A/cache/archives/partial" "$A/etc/apt.conf.d" \
        "$A/etc/preferences.d" "$A/etc/sources.list.d"
    [ -e "$A/status" ] || : >"$A/status"
    KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
    [ -r "$KEYRING" ] || die "$KEYRING missing (package debian-archive-keyring)"
    mirror=${PASSTHRU_DEBIAN_MIRROR:-http://deb.debian.org/debian}
    security=${PASSTHRU_DEBIAN_SECURITY:-http://deb.debian.org/debian-security}
    cat >"$A/sources.list" <<EOF
deb [signed-by=$KEYRING] $mirror trixie main
deb [signed-by=$KEYRING] $mirror trixie-updates main
deb [signed-by=$KEYRING] $security trixie-security main
EOF
    cat >"$A/apt.conf" <<EOF
Dir::State "$A/state";
Dir::State::status "$A/status";
Dir::Cache "$A/cache";
Dir::Etc::SourceList "$A/sources.list";
Dir::Etc::SourceParts "$A/etc/sources.list.d";
Dir::Etc::Parts "$A/etc/apt.conf.d";
Dir::Etc::PreferencesParts "$A/etc/preferences.d";
APT::Architecture "amd64";
APT::Architectures { "amd64"; };
Acquire::Languages "none";
EOF
    APTC=(env "APT_CONFIG=$A/apt.conf")
fi

# The versioned kernel package linux-image-amd64 currently depends on. awk reads all of
# its input (no early exit) so pipefail never sees a SIGPIPE.
resolve_kernel_pkg() {
    "${APTC[@]}" apt-cache depends linux-image-amd64 2>/dev/null |
        awk '!found && $1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; found = 1 }'
}
KPKG=$(resolve_kernel_pkg || true)
if [ -z "$KPKG" ]; then
    log "apt has no linux-image-amd64 (Debian $DEBIAN) yet: running apt-get update"
    "${APTC[@]}" apt-get update -q -o DPkg::Lock::Timeout=120 >"$WORK/apt-update.log" 2>&1 ||
        { tail -n 20 "$WORK/apt-update.log" >&2; die "apt-get update failed"; }
    KPKG=$(resolve_kernel_pkg || true)
fi
[ -n "$KPKG" ] || die "cannot resolve linux-image-amd64 to a versioned kernel package (is Debian $DEBIAN's archive reachable?)"

deb_of() { # deb_of PKG: the cached .deb of PKG, if any
    local f
    for f in "$CACHE/debs/$1"_*.deb; do
        [ -e "$f" ] && { echo "$f"; return 0; }
    done
    return 1
}
PKGS=("$KPKG" busybox-static kmod dash pci.ids)
# Debian 12's lxc for the container check of the first Intel boot (guest-init.sh: ct_check):
# lxc-start, liblxc and the rootfs mount point; the libraries liblxc links (libcap2,
# libseccomp2, libapparmor1, libselinux1, libpcre2-8-0) are this machine's own.
LXCPKGS=(lxc liblxc1 liblxc-common)
[ "$DEBIAN" = 12 ] && PKGS+=("${LXCPKGS[@]}")
# Debian 13's kmod and dash run in the guest on Debian 13's own libraries: those the
# binaries link (libc, libcrypto, zlib, zstd) and liblzma, which kmod 34 loads with
# dlopen to read the kernel's .ko.xz modules.
LIBPKGS=(libc6 libssl3t64 zlib1g libzstd1 liblzma5)
[ "$DEBIAN" = 12 ] || PKGS+=("${LIBPKGS[@]}")
missing=()
for p in "${PKGS[@]}"; do deb_of "$p" >/dev/null || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
    log "downloading ${missing[*]} (Debian $DEBIAN)"
    (cd "$CACHE/debs" && "${APTC[@]}" apt-get download -q -o APT::Sandbox::User=root "${missing[@]}") \
        >"$WORK/apt-download.log" 2>&1 ||
        { tail -n 20 "$WORK/apt-download.log" >&2; die "apt-get download ${missing[*]} failed"; }
    for p in "${missing[@]}"; do deb_of "$p" >/dev/null || die "apt-get download did not produce $p"; done
fi

unpack() { # unpack PKG DIR: dpkg -x once
    local dir=$CACHE/unpacked/$2
    if [ ! -e "$dir/.done" ]; then
        rm -rf "$dir"
        mkdir -p "$dir"
        dpkg -x "$(deb_of "$1")" "$dir"
        touch "$dir/.done"
    fi
}
unpack "$KPKG" "$KPKG"
unpack busybox-static busybox
unpack kmod kmod
unpack dash dash
unpack pci.ids pci.ids
KROOT=$CACHE/unpacked/$KPKG
# Debian 13's packages ship under /usr only (merged /usr): busybox, kmod and dash in
# usr/bin, the modules in usr/lib/modules. kmod looks in /lib/modules, which the merged-/usr
# symlink gives it on an installed system; the unpacked kernel gets the same link.
pick() { # pick FILE...: the first that exists (else the first)
    local f
    for f in "$@"; do [ -e "$f" ] && { echo "$f"; return 0; }; done
    echo "$1"
}
[ -e "$KROOT/lib" ] || [ ! -d "$KROOT/usr/lib/modules" ] || ln -s usr/lib "$KROOT/lib"
BUSYBOX=$(pick "$CACHE/unpacked/busybox/bin/busybox" "$CACHE/unpacked/busybox/usr/bin/busybox")
KMOD=$(pick "$CACHE/unpacked/kmod/bin/kmod" "$CACHE/unpacked/kmod/usr/bin/kmod")
DASH=$(pick "$CACHE/unpacked/dash/bin/dash" "$CACHE/unpacked/dash/usr/bin/dash")
PCIIDS=$CACHE/unpacked/pci.ids/usr/share/misc/pci.ids
[ -x "$BUSYBOX" ] || die "busybox-static did not contain busybox"
[ -x "$KMOD" ] || die "kmod did not contain kmod"
[ -x "$DASH" ] || die "dash did not contain dash"
[ -f "$PCIIDS" ] || die "pci.ids did not contain usr/share/misc/pci.ids"

KVER=
for d in "$KROOT"/lib/modules/*/; do
    [ -d "$d/kernel" ] && KVER=$(basename "$d")
done
[ -n "$KVER" ] || die "$KPKG has no lib/modules/<version>/kernel"
VMLINUZ=$KROOT/boot/vmlinuz-$KVER
[ -f "$VMLINUZ" ] || die "$KPKG has no boot/vmlinuz-$KVER"

# kmod is a multi-call binary that picks its tool from argv[0]; the package's own links
# are absolute (/bin/kmod), so make our own. Debian 13's kmod needs Debian 13's libc: on
# this machine it runs through that release's dynamic loader and libraries (unpacked into
# LIBROOT), the loader setting argv[0].
KBIN=$CACHE/unpacked/kbin
mkdir -p "$KBIN"
LIBROOT=
if [ "$DEBIAN" = 12 ]; then
    for t in depmod modprobe; do ln -sfn "$KMOD" "$KBIN/$t"; done
else
    LIBROOT=$CACHE/unpacked/libs
    if [ ! -e "$LIBROOT/.done" ]; then
        rm -rf "$LIBROOT"
        mkdir -p "$LIBROOT"
        for p in "${LIBPKGS[@]}"; do dpkg -x "$(deb_of "$p")" "$LIBROOT"; done
        touch "$LIBROOT/.done"
    fi
    LIBDIR=$LIBROOT/usr/lib/x86_64-linux-gnu
    LDSO=$LIBDIR/ld-linux-x86-64.so.2
    [ -x "$LDSO" ] || die "libc6 did not contain usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"
    for t in depmod modprobe; do
        printf '#!/bin/sh\nexec %q --library-path %q --argv0 %s %q "$@"\n' "$LDSO" "$LIBDIR" "$t" "$KMOD" >"$KBIN/$t"
        chmod 755 "$KBIN/$t"
    done
    "$KBIN/modprobe" --version >"$WORK/kmod-version" 2>&1 ||
        { cat "$WORK/kmod-version" >&2; die "Debian 13's kmod does not run here"; }
fi
# Debian's kernel package has no modules.dep (depmod runs at install time): generate it.
if [ ! -s "$KROOT/lib/modules/$KVER/modules.dep.bin" ]; then
    log "depmod for $KVER"
    "$KBIN/depmod" -b "$KROOT" "$KVER" || die "depmod -b $KROOT $KVER failed"
fi

# --- initramfs ---------------------------------------------------------------------------
STAGE=$WORK/initrd
rm -rf "$STAGE"
mkdir -p "$STAGE"/{bin,sbin,usr/bin,usr/sbin,lib,lib64,etc,dev,proc,sys,tmp,run,root,var/log}

# /bin/sh is dash, as on Debian. busybox's own shell runs its applets in preference to
# PATH, so with it `modprobe` in a script (or in a modprobe.d install command, which kmod
# runs with /bin/sh) would be busybox's modprobe, not kmod's. Under dash every command
# is looked up in PATH: kmod's tools for the module commands, busybox links for the rest.
KMOD_TOOLS=" modprobe insmod rmmod lsmod depmod modinfo "
install -m 755 "$BUSYBOX" "$STAGE/bin/busybox"
install -m 755 "$DASH" "$STAGE/bin/dash"
ln -sfn dash "$STAGE/bin/sh"
while read -r applet; do
    name=${applet##*/}
    case $KMOD_TOOLS in *" $name "*) continue ;; esac
    [ "$applet" = bin/sh ] && continue
    [ "$applet" = bin/busybox ] && continue
    mkdir -p "$STAGE/$(dirname "$applet")"
    ln -sfn /bin/busybox "$STAGE/$applet"
done < <("$BUSYBOX" --list-full)
install -m 755 "$KMOD" "$STAGE/bin/kmod"
for t in $KMOD_TOOLS; do ln -sfn /bin/kmod "$STAGE/sbin/$t"; done

# copy_libs BINARY: the shared libraries ldd finds for it and the dynamic loader, each at
# the path ldd prints.
copy_libs() {
    local out line lib
    out=$(ldd "$1" 2>&1) || {
        case $out in *"not a dynamic executable"*) return 0 ;; esac
        die "ldd $1 failed: $out"
    }
    case $out in *"not found"*) die "ldd $1: a shared library is missing on this host: $out" ;; esac
    while read -r line; do
        case $line in
        *"=> /"*) lib=${line#*=> }; lib=${lib%% (*} ;;
        /*) lib=${line%% (*} ;;
        *) continue ;;
        esac
        [ -e "$STAGE$lib" ] && continue
        mkdir -p "$STAGE$(dirname "$lib")"
        cp -L "$lib" "$STAGE$lib"
    done <<<"$out"
}
if [ "$DEBIAN" = 12 ]; then
    copy_libs "$STAGE/bin/kmod"
    copy_libs "$STAGE/bin/dash"
else
    # Debian 13's loader and libraries, at the paths this machine's ldd prints for its own
    # (/lib64/ld-linux-x86-64.so.2, /lib/x86_64-linux-gnu/), so copy_libs below keeps them
    # and passthru (built here, against Debian 12) runs on them too, as on an upgraded host.
    mkdir -p "$STAGE/lib/x86_64-linux-gnu"
    install -m 755 "$LDSO" "$STAGE/lib64/ld-linux-x86-64.so.2"
    for bin in "$KMOD" "$DASH"; do
        out=$("$LDSO" --library-path "$LIBDIR" --list "$bin") || die "Debian 13's loader cannot list $bin: $out"
        case $out in *"not found"*) die "$bin: a Debian 13 library is missing: $out" ;; esac
        while read -r _ arrow lib _; do
            [ "$arrow" = "=>" ] && [ "${lib#"$LIBDIR"/}" != "$lib" ] || continue
            [ "${lib##*/}" = ld-linux-x86-64.so.2 ] && continue
            cp -L "$lib" "$STAGE/lib/x86_64-linux-gnu/"
        done <<<"$out"
    done
    cp -L "$LIBDIR/liblzma.so.5" "$STAGE/lib/x86_64-linux-gnu/"
    # kmod and depmod in the guest find the modules through the merged-/usr path as well.
    mkdir -p "$STAGE/usr/lib"
    ln -sfn ../../lib/modules "$STAGE/usr/lib/modules"
fi

# lxc-start and liblxc (Debian 12 only), the libraries they link from this machine.
if [ "$DEBIAN" = 12 ]; then
    for p in "${LXCPKGS[@]}"; do unpack "$p" "$p"; done
    LXCLIB=$CACHE/unpacked/liblxc1/usr/lib/x86_64-linux-gnu
    install -m 755 "$CACHE/unpacked/lxc/usr/bin/lxc-start" "$STAGE/usr/bin/lxc-start"
    mkdir -p "$STAGE/usr/lib/x86_64-linux-gnu/lxc/rootfs"
    mkdir -p "$STAGE/lib/x86_64-linux-gnu"
    cp -L "$LXCLIB/liblxc.so.1" "$STAGE/lib/x86_64-linux-gnu/liblxc.so.1"
    out=$(LD_LIBRARY_PATH=$LXCLIB ldd "$STAGE/usr/bin/lxc-start" 2>&1) || die "ldd lxc-start failed: $out"
    case $out in *"not found"*) die "lxc-start: a shared library is missing on this host: $out" ;; esac
    while read -r _ arrow lib _; do
        [ "$arrow" = "=>" ] && [ "${lib#/}" != "$lib" ] && [ "${lib#"$LXCLIB"}" = "$lib" ] || continue
        [ -e "$STAGE$lib" ] && continue
        mkdir -p "$STAGE$(dirname "$lib")"
        cp -L "$lib" "$STAGE$lib"
    done <<<"$out"
fi

# Kernel modules, with everything they depend on, in the /lib/modules/<kver> layout, and
# a modules.dep(.bin) generated for exactly this set, so real modprobe works in the guest.
MODULES=(e1000e e1000 virtio_pci virtio_net nvme ahci xhci_pci i2c_i801 lpc_ich
    snd_hda_intel snd_hda_codec_generic bochs vfio vfio_iommu_type1 vfio_pci)
MDIR=lib/modules/$KVER
mkdir -p "$STAGE/$MDIR"
for m in "${MODULES[@]}"; do
    deps=$("$KBIN/modprobe" -d "$KROOT" -S "$KVER" --show-depends "$m") ||
        die "module $m not found in $KPKG"
    while read -r kind path _; do
        [ "$kind" = insmod ] || continue
        rel=${path#"$KROOT"/}
        rel=${rel#/}
        [ -e "$STAGE/$rel" ] && continue
        mkdir -p "$STAGE/$(dirname "$rel")"
        cp "$path" "$STAGE/$rel"
    done <<<"$deps"
done
for f in modules.order modules.builtin modules.builtin.modinfo; do
    cp "$KROOT/$MDIR/$f" "$STAGE/$MDIR/"
done
"$KBIN/depmod" -b "$STAGE" "$KVER" || die "depmod for the initramfs failed"
nmods=$(find "$STAGE/$MDIR" -name '*.ko*' | wc -l)

mkdir -p "$STAGE/usr/share/misc"
cp "$PCIIDS" "$STAGE/usr/share/misc/pci.ids"
# The kernel's build config, where its installed package puts it: scan reads
# CONFIG_INTEL_IOMMU_DEFAULT_ON there (Debian's kernels leave it unset).
mkdir -p "$STAGE/boot"
cp "$KROOT/boot/config-$KVER" "$STAGE/boot/"

if [ "$SMOKE" = 0 ]; then
    # Debug info is not needed in the guest (a Debug build is ~35 MB); the code is unchanged.
    if command -v strip >/dev/null; then
        strip --strip-debug -o "$STAGE/usr/sbin/passthru" "$PASSTHRU"
        chmod 755 "$STAGE/usr/sbin/passthru"
    else
        install -m 755 "$PASSTHRU" "$STAGE/usr/sbin/passthru"
    fi
    copy_libs "$STAGE/usr/sbin/passthru"
    # passthru's shipped data (templates, profiles), where an installed passthru has it
    for d in usr/share/passthru usr/local/share/passthru; do
        mkdir -p "$STAGE/$d"
        for k in templates profiles; do
            [ -d "$REPO/$k" ] && cp -a "$REPO/$k" "$STAGE/$d/"
        done
    done
fi

# Stubs for the after-steps passthru runs on a live host. The guest has no real initramfs
# to rebuild, no boot loader to update and no Proxmox: each stub records its argv in
# /var/log/passthru-stub.log (checked by the host) and succeeds.
for s in update-initramfs update-grub qm; do
    cat >"$STAGE/usr/sbin/$s" <<EOF
#!/bin/sh
# test stub (tests/vm/run.sh): the guest has nothing for $s to act on
echo "$s \$*" >>/var/log/passthru-stub.log
exit 0
EOF
    chmod 755 "$STAGE/usr/sbin/$s"
done
# proxmox-boot-tool: `status` answers as the real tool does on a plain GRUB host (no
# /etc/kernel/proxmox-boot-uuids: message on stderr, exit 2); everything else is recorded.
cat >"$STAGE/usr/sbin/proxmox-boot-tool" <<'EOF'
#!/bin/sh
# test stub (tests/vm/run.sh): the guest boots no ESP
echo "proxmox-boot-tool $*" >>/var/log/passthru-stub.log
if [ "$1" = status ] && [ ! -e /etc/kernel/proxmox-boot-uuids ]; then
    echo "E: /etc/kernel/proxmox-boot-uuids does not exist." >&2
    exit 2
fi
exit 0
EOF
chmod 755 "$STAGE/usr/sbin/proxmox-boot-tool"

# A minimal root as a Proxmox VE 8 host on plain GRUB has it: stock /etc, the VM 101 config,
# and dpkg's record of the Proxmox packages (the packages' programs themselves are absent;
# qm and proxmox-boot-tool are the stubs above).
cp -a "$HERE/guest-root/." "$STAGE/"
mkdir -p "$STAGE/etc/modprobe.d" "$STAGE/etc/modules-load.d" "$STAGE/etc/kernel"
ln -sfn ../modules "$STAGE/etc/modules-load.d/modules.conf"
install -m 755 "$HERE/guest-init.sh" "$STAGE/init"

# Uncompressed: gunzip under TCG costs the guest more than copying the bytes (libvirt's
# dependencies, libicudata alone is 30 MB, make it large).
INITRD=$WORK/initrd.cpio
(cd "$STAGE" && find . -mindepth 1 | LC_ALL=C sort | "$BUSYBOX" cpio -o -H newc 2>/dev/null) >"$INITRD"
log "Debian $DEBIAN: kernel $KVER ($KPKG), $("$KBIN/modprobe" --version | head -n 1); initramfs $(du -k "$INITRD" | cut -f1) KiB (uncompressed) with $nmods modules$([ "$SMOKE" = 1 ] && echo ", no passthru (smoke)")"

# --- boot --------------------------------------------------------------------------------
# qemu_args VARIANT: the machine. Every device has an explicit address; the IOMMU comes
# before the PCI devices (QEMU gives a device its DMA address space when it is created).
qemu_args() {
    # no_timer_check: under TCG on a busy machine the kernel's early check that the timer
    # interrupt arrives through the (remapped) IO-APIC can miss its window and panic
    # ("timer doesn't work through Interrupt-remapped IO-APIC"); the check is about the
    # emulator's timing, not about anything passthru does.
    local v=$1 vga=0x1 append="console=ttyS0 iommu=pt panic=-1 no_timer_check"
    # TCG's default CPU (qemu64) is an AuthenticAMD with svm. The Intel and no-IOMMU runs
    # get an Intel CPU instead (TCG cannot emulate vmx, so it has no virtualization flag),
    # so that scan's advice for an Intel host (intel_iommu=on) is exercised too.
    local cpu=qemu64
    [ "$v" = amd ] || cpu=qemu64,vendor=GenuineIntel,-svm
    # The container check (guest-init.sh: ct_check) runs in one boot only: Debian 12's Intel one.
    [ "$v" != intel ] || [ "$DEBIAN" != 12 ] || append="$append passthru.ct=1"
    Q=(-accel "$ACCEL" -M q35 -cpu "$cpu" -m 1024 -smp 2 -nodefaults -display none -serial stdio
        -no-reboot -audiodev none,id=snd0)
    case $v in
    intel)
        Q+=(-device intel-iommu,intremap=on,caching-mode=on)
        append="$append intel_iommu=on"
        ;;
    amd)
        # amd-iommu puts its own PCI function on the first free root-bus slot (00:01.0),
        # so the boot VGA moves to 00:08.0. AMD-Vi is on by default: no amd_iommu=on.
        Q+=(-device amd-iommu)
        vga=0x8
        ;;
    esac
    Q+=(
        -device "VGA,bus=pcie.0,addr=$vga"
        -device pcie-root-port,id=rp1,bus=pcie.0,addr=0x2,chassis=1,port=1
        -device e1000e,bus=rp1,addr=0x0
        -device pcie-root-port,id=rp2,bus=pcie.0,addr=0x3,chassis=2,port=2
        -device virtio-net-pci,bus=rp2,addr=0x0,disable-legacy=on
        -device pcie-root-port,id=rp3,bus=pcie.0,addr=0x4,chassis=3,port=3
        -blockdev driver=null-co,node-name=nvme0,read-zeroes=on,size=1073741824
        -device nvme,bus=rp3,addr=0x0,drive=nvme0,serial=passthru0
        # the stand-in for a GPU card: display function 0 + HDA audio function 1
        -device pcie-root-port,id=rp4,bus=pcie.0,addr=0x5,chassis=4,port=4
        -device secondary-vga,bus=rp4,addr=0x0.0,multifunction=on
        -device ich9-intel-hda,id=cardhda,bus=rp4,addr=0x0.1
        -device hda-duplex,bus=cardhda.0,audiodev=snd0
        -device pcie-root-port,id=rp5,bus=pcie.0,addr=0x6,chassis=5,port=5
        -device pcie-pci-bridge,id=pcibr,bus=rp5,addr=0x0
        -device e1000,bus=pcibr,addr=0x1
        -device virtio-net-pci,bus=pcibr,addr=0x2
        -device qemu-xhci,bus=pcie.0,addr=0x7
        # the host's own HDA controller: same 8086:293e as the card's audio
        -device ich9-intel-hda,id=hosthda,bus=pcie.0,addr=0x1b
        -device hda-duplex,bus=hosthda.0,audiodev=snd0
        -kernel "$VMLINUZ" -initrd "$INITRD" -append "$append"
    )
}

failed=()
summary=()
for v in "${VARIANTS[@]}"; do
    out=$WORK/$v
    rm -rf "$out"
    mkdir -p "$out"
    qemu_args "$v"
    printf '%q ' qemu-system-x86_64 "${Q[@]}" >"$out/qemu-cmdline.txt"
    log "booting variant $v (timeout ${TIMEOUT}s; waiting for $LOCK)"
    # One QEMU at a time on the machine: a boot starved of CPU looks hung. The lock is
    # held for the boot only; the time below is the boot's, not the wait's.
    exec 9>>"$LOCK"
    flock 9
    t0=$(date +%s.%N)
    set +e
    timeout -k 10 "$TIMEOUT" qemu-system-x86_64 "${Q[@]}" </dev/null >"$out/serial.log" 2>"$out/qemu.err" 9>&-
    qrc=$?
    set -e
    t1=$(date +%s.%N)
    flock -u 9
    exec 9>&-
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
    log "variant $v: qemu exited $qrc after ${secs}s"
    args=(--variant "$v" --serial "$out/serial.log" --qemu-rc "$qrc" --qemu-stderr "$out/qemu.err"
        --out "$out" --fixtures "$FIXTURES" --timeout "$TIMEOUT" --debian "$DEBIAN"
        --kernel-config "$KROOT/boot/config-$KVER")
    [ "$SMOKE" = 1 ] && args+=(--smoke)
    [ "$CAPTURE" = 1 ] && args+=(--capture)
    if python3 "$HERE/check.py" "${args[@]}"; then
        summary+=("$v (Debian $DEBIAN, $KVER): PASS in ${secs}s")
    else
        summary+=("$v (Debian $DEBIAN, $KVER): FAIL in ${secs}s (serial log and results: $out)")
        failed+=("$v")
    fi
done

log "summary:"
for s in "${summary[@]}"; do log "  $s"; done
if [ ${#failed[@]} -gt 0 ]; then
    if [ -z "$KEEP" ]; then
        # keep the evidence of a failure
        trap - EXIT
        log "work directory kept: $WORK"
    fi
    die "real-kernel test failed for: ${failed[*]}"
fi
