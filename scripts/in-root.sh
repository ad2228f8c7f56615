#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Runs a command inside a Debian root (scripts/debian-root.sh) without letting it
# touch this machine:
#
#   scripts/in-root.sh [--ro HOSTDIR:DIR]... [--rw HOSTDIR:DIR]... [--net] [--overlay DIR] ROOT CMD [ARG...]
#
# The command runs chrooted in ROOT, in new mount, PID, IPC and UTS namespaces
# (and a new network namespace with only loopback unless --net is given), with:
#   /proc     a fresh procfs of the new PID namespace
#   /dev      ROOT's own device nodes (null, zero, random, tty…), devpts on /dev/pts
#   /tmp      a tmpfs
#   /sys      nothing: this machine's sysfs is never visible
# --ro binds HOSTDIR read-only at DIR inside the root, --rw read-write.
# --overlay DIR keeps ROOT itself unchanged: the command sees ROOT through an
# overlayfs whose writes go to DIR (made if missing; DIR/upper, DIR/work,
# DIR/merged), so one clean root serves many throwaway installs. Every
# mount is private to the namespace and goes away with it; ROOT itself is not
# mounted anywhere on this machine. The environment is reset to PATH, HOME,
# LANG=C.UTF-8 and TERM; pass more as arguments (`env NAME=VALUE CMD`).
# Needs root (unshare, mount, chroot). Exits with the command's status.
set -euo pipefail

usage() {
    echo "usage: $0 [--ro HOSTDIR:DIR]... [--rw HOSTDIR:DIR]... [--net] [--overlay DIR] ROOT CMD [ARG...]" >&2
    exit 2
}

binds=()
net=(--net)
overlay=""
while (($#)); do
    case $1 in
        --ro | --rw) (($# >= 2)) || usage; binds+=("${1#--}:$2"); shift 2 ;;
        --net) net=(); shift ;;
        --overlay) (($# >= 2)) || usage; overlay=$2; shift 2 ;;
        --) shift; break ;;
        -*) echo "in-root: unknown option $1" >&2; usage ;;
        *) break ;;
    esac
done
(($# >= 2)) || usage
root=$(cd "$1" && pwd)
shift
[[ -x $root/bin/sh && -e $root/dev/null ]] || { echo "in-root: $root is not a Debian root (no /bin/sh or /dev/null)" >&2; exit 2; }
[[ $root != / ]] || { echo "in-root: refusing ROOT /" >&2; exit 2; }
[[ $(id -u) == 0 ]] || { echo "in-root: needs root (unshare, mount, chroot)" >&2; exit 1; }
if [[ -n $overlay ]]; then
    mkdir -p "$overlay/upper" "$overlay/work" "$overlay/merged"
    overlay=$(cd "$overlay" && pwd)
fi
for b in "${binds[@]+"${binds[@]}"}"; do
    IFS=: read -r _ host dir <<<"$b"
    [[ -d $host && $dir == /* && $dir != / ]] || { echo "in-root: bad bind '$b' (HOSTDIR:ABSOLUTE-DIR)" >&2; exit 2; }
done

env_keep=(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "TERM=${TERM:-dumb}")

# The inner script runs in the new namespaces, before chroot.
# shellcheck disable=SC2016
inner='
set -eu
root=$1; overlay=$2; shift 2
mount --make-rprivate /
if [ -n "$overlay" ]; then
    mount -t overlay -o "lowerdir=$root,upperdir=$overlay/upper,workdir=$overlay/work" overlay "$overlay/merged"
    root=$overlay/merged
else
    # The root is a mount point of its own, so a command inside can make its own
    # private mount namespace (unshare -m) as on a real machine.
    mount --bind "$root" "$root"
fi
mount -t proc -o nosuid,nodev,noexec proc "$root/proc"
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$root/tmp"
mkdir -p "$root/dev/pts"
mount -t devpts -o newinstance,ptmxmode=0666,mode=620 devpts "$root/dev/pts"
while [ "$1" != -- ]; do
    mode=${1%%:*}; rest=${1#*:}; host=${rest%%:*}; dir=${rest#*:}; shift
    mkdir -p "$root$dir"
    mount --bind "$host" "$root$dir"
    if [ "$mode" = ro ]; then mount -o remount,bind,ro "$root$dir"; fi
done
shift
ip link set lo up 2>/dev/null || true
exec chroot "$root" "$@"
'
exec unshare --mount --pid --fork --ipc --uts "${net[@]}" --propagation private \
    sh -c "$inner" in-root "$root" "$overlay" "${binds[@]+"${binds[@]}"}" -- env -i "${env_keep[@]}" "$@"
