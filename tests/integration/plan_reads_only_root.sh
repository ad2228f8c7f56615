#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# plan reads nothing live: everything it decides from is under --root (read
# through HostFs) or in passthru's read-only data (templates, profiles,
# pci.ids). Run under strace, every absolute path plan opens, stats or reads
# must be one of those, or one of the runtime's own files (shared libraries,
# ld.so's cache, the time zone, OpenSSL's configuration, glibc's CPU count,
# what libkmod reads of the running kernel: /proc/cmdline, and with kmod 34
# /sys/module/compression); and plan runs no program. Then the same
# plan under another host name, home, time zone and working directory, and
# under another kernel command line, prints byte for byte the same JSON.
FAIL_FAST=1
source "$(dirname "$0")/lib.inc"
need_binary
command -v strace >/dev/null || fatal "strace is missing (scripts/deps.sh installs it)"

allowed() { # PATH ROOT: 0 when plan may read PATH
    local path=$1 root=$2
    case $path in
    "$root" | "$root"/*) return 0 ;;
    "$SRC"/templates/* | "$SRC"/profiles/* | /usr/share/passthru/* | /usr/local/share/passthru/*) return 0 ;;
    /usr/share/misc/pci.ids | /usr/share/misc/pci.ids.gz | /usr/share/hwdata/pci.ids | /usr/share/hwdata/pci.ids.gz) return 0 ;;
    /etc/ld.so.cache | /etc/ld.so.preload | /lib/x86_64-linux-gnu/* | /usr/lib/x86_64-linux-gnu/*) return 0 ;;
    /etc/localtime | /usr/lib/ssl/openssl.cnf | /sys/devices/system/cpu/online) return 0 ;;
    # libkmod adds this machine's command line (modprobe.blacklist=, module.param=) to
    # every configuration it reads; plan takes those entries out again (checked below).
    /proc/cmdline) return 0 ;;
    # libkmod parses the text of each modprobe.d file, read through HostFs, from
    # an anonymous memory file of plan's own, which it opens by this name.
    /proc/self/fd/*) return 0 ;;
    # Where the binary itself lives (readlink, answered by its own path): only
    # a binary in its build tree reads the repository's templates and profiles.
    /proc/self/exe | "$P" | "$(readlink -f "$P")") return 0 ;;
    # kmod 34 (Debian 13) reads the running kernel's module compression when it opens a
    # context; it only matters for loading a module, which plan never does.
    /sys/module/compression) return 0 ;;
    # glibc's CPU count reads /proc/stat when /sys/devices/system/cpu/online cannot
    # be read: so in the Debian 13 test root, which has no /sys (scripts/in-root.sh).
    /proc/stat) [[ ! -e /sys/devices/system/cpu/online ]] && return 0 ;;
    esac
    # The components of the root's own path, resolved when it is opened.
    [[ $root == "$path"/* || $path == / ]] && return 0
    return 1
}

# Another host name and another /proc/cmdline need namespaces (a user namespace too when
# not root); where this machine refuses them (a plain chroot), those checks are skipped.
userns=(); [[ $(id -u) == 0 ]] || userns=(-U -r)
uts=1
unshare "${userns[@]}" --uts true 2> /dev/null || { uts=0; echo "skip: another host name needs a UTS namespace (unshare ${userns[*]} --uts), which this machine refuses"; }
mnt=1
unshare "${userns[@]}" -m sh -c 'mount --bind /dev/null /proc/cmdline' 2> /dev/null ||
    { mnt=0; echo "skip: another kernel command line needs a mount namespace (unshare ${userns[*]} -m), which this machine refuses"; }

for host in epyc-4x2080ti epyc-4x2080ti-zfs t180-4xv100 qemu-intel-vfio; do
    R=$T/$host
    copy_host "$host" "$R"
    req=(--vm 101 --gpus all)
    [[ $host == qemu-* ]] && req=(--vm 101 --gpus 0000:04:00)
    rc=0
    strace -f -qq -s 65536 -e trace=%file,%process -o "$T/trace" "$P" --root "$R" plan "${req[@]}" --json > "$T/a.json" 2> /dev/null || rc=$?
    [[ $rc == 0 ]] || fail "$host: plan exited $rc"
    execs=$(grep -c 'execve(' "$T/trace")
    [[ $execs == 1 ]] || fail "$host: plan ran a program: $(grep 'execve(' "$T/trace" | tail -n +2 | head -3)"
    bad=0
    while IFS= read -r path; do
        if ! allowed "$path" "$R"; then
            echo "outside the root: $path" >&2
            bad=1
        fi
    done < <(grep -v 'execve(' "$T/trace" | grep -oE '\("/[^"]*"|, "/[^"]*"' | sed -E 's/^(\(|, )"//; s/"$//' | sort -u)
    [[ $bad == 0 ]] || fail "$host: plan read paths outside the root and its data"
    [[ $(grep -c "$R" "$T/trace") -gt 0 ]] || fail "$host: the trace shows no read of the root at all (strace filter broken?)"

    # Another machine, as far as plan could tell: host name, home, time zone, cwd.
    other=(env); [[ $uts == 0 ]] || other=(unshare "${userns[@]}" --uts sh -c 'hostname not-this-host && exec "$@"' sh)
    (cd / && HOME=/nonexistent TZ=Pacific/Kiritimati LC_ALL=C "${other[@]}" \
        "$P" --root "$R" plan "${req[@]}" --json > "$T/b.json" 2> /dev/null) || fail "$host: plan failed on the other 'machine'"
    cmp -s "$T/a.json" "$T/b.json" || fail "$host: plan's answer depends on the machine: $(diff "$T/a.json" "$T/b.json" | head -5)"

    # Another kernel command line under this machine, as libkmod reads it: blacklists and
    # module options that would change the plan if they leaked into the root's configuration.
    printf '%s\n' "BOOT_IMAGE=/vmlinuz modprobe.blacklist=nouveau,nvidia,snd_hda_intel vfio_pci.ids=dead:beef kvm.ignore_msrs=0 nouveau.modeset=0" > "$T/cmdline"
    if [[ $mnt == 0 ]]; then
        ok "$host: plan read only the root and its data, ran nothing, and answered the same on another machine"
        continue
    fi
    unshare "${userns[@]}" -m sh -c 'mount --bind "$1" /proc/cmdline && shift && exec "$@"' sh "$T/cmdline" \
        "$P" --root "$R" plan "${req[@]}" --json > "$T/c.json" 2> /dev/null || fail "$host: plan failed under another kernel command line"
    cmp -s "$T/a.json" "$T/c.json" || fail "$host: plan's answer depends on this machine's /proc/cmdline: $(diff "$T/a.json" "$T/c.json" | head -5)"
    ok "$host: plan read only the root and its data, ran nothing, and answered the same elsewhere"
done
