#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Builds a Debian root directory from Debian's own packages with mmdebstrap:
#
#   scripts/debian-root.sh [OPTIONS] RELEASE OUTDIR [PACKAGE...]
#
# RELEASE is a codename (bookworm, trixie) or a version (12, 13). PACKAGEs are
# installed on top of the variant's set, with their dependencies, as apt
# resolves them from the archive. OUTDIR is the root; it is a cache: OUTDIR/.debian-root
# records what it was built from (release, variant, sorted packages, sources,
# options), and a later call with the same inputs reuses it at once. Any
# other OUTDIR is replaced (built next to it, then renamed, so a failed build
# never leaves a half root). Concurrent calls for one OUTDIR wait on a lock.
#
# Downloaded .debs are kept in one apt archive cache per release, shared by every
# root built with it (default: OUTDIR's parent/apt-archives/RELEASE), so each
# .deb is downloaded once. Nothing is fetched but Debian's archive, with the
# sources apt would use on a default install of RELEASE (main, RELEASE-updates,
# RELEASE-security).
#
# Options:
#   --variant V      mmdebstrap variant (default minbase; apt, important, standard…)
#   --cache DIR      the apt archive cache (also PASSTHRU_APT_ARCHIVES)
#   --keep-lists     keep the package lists in the root, so apt inside it can
#                    install without a first `apt-get update`
#   --arg ARG        one more mmdebstrap argument (repeatable; part of the cache key),
#                    e.g. --arg=--customize-hook='echo host >"$1/etc/hostname"'
#   --force          rebuild even when OUTDIR matches
# Environment: PASSTHRU_DEBIAN_MIRROR (default http://deb.debian.org/debian),
# PASSTHRU_DEBIAN_SECURITY (default http://deb.debian.org/debian-security).
#
# Needs mmdebstrap (Debian package mmdebstrap) and root (or a working unshare
# setup; mmdebstrap --mode=auto decides). Prints OUTDIR on stdout; progress goes
# to stderr. Exit 2 on bad arguments, 1 when the build fails.
#
# Example, a bootable Debian 12 root:
#   scripts/debian-root.sh --variant important bookworm build/roots/boot12 \
#       linux-image-amd64 systemd-sysv grub-pc initramfs-tools
set -euo pipefail

usage() {
    echo "usage: $0 [--variant V] [--cache DIR] [--keep-lists] [--arg ARG]... [--force] RELEASE OUTDIR [PACKAGE...]" >&2
    exit 2
}

variant=minbase
cache=${PASSTHRU_APT_ARCHIVES:-}
keep_lists=no
force=no
extra=()
while (($#)); do
    case $1 in
        --variant) (($# >= 2)) || usage; variant=$2; shift 2 ;;
        --variant=*) variant=${1#*=}; shift ;;
        --cache) (($# >= 2)) || usage; cache=$2; shift 2 ;;
        --cache=*) cache=${1#*=}; shift ;;
        --keep-lists) keep_lists=yes; shift ;;
        --arg) (($# >= 2)) || usage; extra+=("$2"); shift 2 ;;
        --arg=*) extra+=("${1#*=}"); shift ;;
        --force) force=yes; shift ;;
        --) shift; break ;;
        -*) echo "debian-root: unknown option $1" >&2; usage ;;
        *) break ;;
    esac
done
(($# >= 2)) || usage
release=$1
out=$2
shift 2

case $release in
    12 | bookworm) release=bookworm ;;
    13 | trixie) release=trixie ;;
    *) echo "debian-root: unknown release '$release' (bookworm/12 or trixie/13)" >&2; exit 2 ;;
esac
case $variant in
    extract | custom | essential | apt | required | minbase | buildd | important | debootstrap | standard) ;;
    *) echo "debian-root: unknown mmdebstrap variant '$variant'" >&2; exit 2 ;;
esac
for p in "$@"; do
    [[ $p =~ ^[a-z0-9][a-z0-9+.-]+(:[a-z0-9]+)?$ ]] || { echo "debian-root: '$p' is not a Debian package name" >&2; exit 2; }
done
command -v mmdebstrap >/dev/null || { echo "debian-root: mmdebstrap is not installed (apt-get install mmdebstrap)" >&2; exit 1; }

[[ $out == /* ]] || out=$PWD/$out
out=${out%/}
[[ -n $out && $out != / ]] || { echo "debian-root: refusing OUTDIR '/'" >&2; exit 2; }
parent=$(dirname "$out")
mkdir -p "$parent"
[[ -n $cache ]] || cache=$parent/apt-archives/$release
[[ $cache == /* ]] || cache=$PWD/$cache
mkdir -p "$cache"

mirror=${PASSTHRU_DEBIAN_MIRROR:-http://deb.debian.org/debian}
security=${PASSTHRU_DEBIAN_SECURITY:-http://deb.debian.org/debian-security}
sources="deb $mirror $release main
deb $mirror $release-updates main
deb $security $release-security main"

# The key: everything the root is made of, packages sorted and unique.
packages=$(printf '%s\n' "$@" | sort -u | grep -v '^$' || true)
key=$(printf 'debian-root/1\nrelease %s\nvariant %s\nkeep-lists %s\narch %s\n--sources\n%s\n--packages\n%s\n--args\n%s\n' \
    "$release" "$variant" "$keep_lists" "$(dpkg --print-architecture)" "$sources" "$packages" \
    "$(printf '%s\n' "${extra[@]+"${extra[@]}"}")")

exec 9>"$out.lock"
flock 9
if [[ $force == no && -f $out/.debian-root ]] && [[ $(cat "$out/.debian-root") == "$key" ]]; then
    echo "debian-root: $out is up to date ($release, $variant${packages:+, $(wc -l <<<"$packages") packages})" >&2
    echo "$out"
    exit 0
fi

new=$out.new
rm -rf "$new"
include=()
[[ -z $packages ]] || include=("--include=$(paste -sd, <<<"$packages")")
skips=(--skip=download/empty --skip=essential/unlink)
[[ $keep_lists == no ]] || skips+=(--skip=cleanup/apt/lists)

echo "debian-root: building $release ($variant${packages:+ + $(paste -sd' ' <<<"$packages")}) in $out" >&2
start=$SECONDS
# Roots of one release built at once (scripts/test.sh runs the QEMU tests beside the
# rest) take turns on their shared apt archive cache, so no sync-out writes a .deb
# while another root's sync-in or sync-out reads or writes it. mmdebstrap does not get
# this descriptor (8>&- below): its hooks reach it through a socket on the lowest free
# descriptor, which dash, running the hooks, can name only while it is a single digit.
exec 8>"$cache.lock"
flock 8
# sync-in/sync-out share the .debs with every other root of this release. The
# extract variant runs no customize hooks, so it syncs out after extracting.
out_hook=--customize-hook
[[ $variant != extract ]] || out_hook=--extract-hook
if ! mmdebstrap --mode=auto --variant="$variant" --format=directory "${include[@]}" "${skips[@]}" \
        --setup-hook='mkdir -p "$1"/var/cache/apt/archives/' \
        --setup-hook="sync-in '$cache' /var/cache/apt/archives/" \
        "$out_hook=sync-out /var/cache/apt/archives '$cache'" \
        "${extra[@]+"${extra[@]}"}" \
        "$release" "$new" - <<<"$sources" >&2 8>&-; then
    rm -rf "$new"
    echo "debian-root: mmdebstrap failed for $release" >&2
    exit 1
fi
# mmdebstrap leaves the .debs in the root's apt cache; they are in $cache now.
find "$new/var/cache/apt/archives" -maxdepth 1 -name '*.deb' -delete
printf '%s\n' "$key" >"$new/.debian-root"
rm -rf "$out"
mv "$new" "$out"
echo "debian-root: $out built in $((SECONDS - start)) s ($(du -sh "$out" | cut -f1))" >&2
echo "$out"
