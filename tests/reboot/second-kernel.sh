#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A second real kernel package for a Debian root made by scripts/debian-root.sh:
#
#   tests/reboot/second-kernel.sh RELEASE ROOT CACHE OUT
#
# K2 is the newest linux-image-*-amd64 of the release's archive (main, -updates,
# -security: the root's own sources) that is not the root's kernel and not a cloud or rt
# flavour, the rule integration.package_kernel_hook installs by. apt inside ROOT, seen
# through an overlay so ROOT stays clean (scripts/in-root.sh --net), fetches the package
# lists when ROOT changed and downloads K2's package with whatever it needs that ROOT
# lacks into CACHE/kernel-hook/RELEASE (shared with package_kernel_hook and under its
# lock). The .debs are copied into OUT; the last line on stdout is "K2 VERSION", the
# lines before it "deb FILE" for each package, K2's last.
set -euo pipefail
[[ $# == 4 ]] || { echo "usage: second-kernel.sh RELEASE ROOT CACHE OUT" >&2; exit 2; }
RELEASE=$1
ROOT=$(readlink -f "$2") CACHE=$(readlink -f "$3") OUT=$(readlink -m "$4")
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
KCACHE=$CACHE/kernel-hook/$RELEASE
mkdir -p "$KCACHE/debs/partial" "$KCACHE/lists/partial" "$OUT"
exec 9>"$KCACHE.lock"
flock 9
key=$(sha256sum <"$ROOT/.debian-root" | cut -d' ' -f1)
refresh=0
[[ $(cat "$KCACHE/root-key" 2>/dev/null) == "$key" ]] || refresh=1
tmp=$(mktemp -d)
trap 'rm -rf --one-file-system "$tmp"' EXIT
# shellcheck disable=SC2016
session='
set -eu
export DEBIAN_FRONTEND=noninteractive
[ "$1" = 0 ] || apt-get -q update >/dev/null
k1=$(ls /boot | sed -n "s/^vmlinuz-//p" | sort -V | tail -n 1)
k2=$(apt-cache pkgnames linux-image- | sed -n "s/^linux-image-\([0-9][0-9a-z.+~-]*-amd64\)$/\1/p" |
    grep -Ev -- "-(cloud|rt)-amd64$" | grep -vxF "$k1" | sort -V | tail -n 1)
[ -n "$k2" ] || { echo "no second kernel in the package lists" >&2; exit 1; }
apt-get install -y -q --download-only --no-install-recommends "linux-image-$k2" >/dev/null
apt-get install -s --no-install-recommends "linux-image-$k2" | sed -n "s/^Inst \([^ ]*\) .*/\1/p" | while read -r p; do
    v=$(apt-cache policy "$p" | sed -n "s/^ *Candidate: //p" | sed "s/:/%3a/")
    f=$(ls /var/cache/apt/archives/"${p}_${v}"_*.deb)
    echo "deb ${f##*/}"
done
echo "K2 $k2"
'
"$REPO/scripts/in-root.sh" --net --overlay "$tmp/overlay" --rw "$KCACHE/debs:/var/cache/apt/archives" \
    --rw "$KCACHE/lists:/var/lib/apt/lists" "$ROOT" bash -c "$session" session "$refresh" >"$tmp/out" ||
    { echo "second-kernel.sh: apt in the root found no second kernel" >&2; exit 1; }
printf '%s\n' "$key" >"$KCACHE/root-key"
# K2's own package last, so that the caller's install names it last
grep '^deb linux-image-' "$tmp/out" >"$tmp/k2" || true
{ grep '^deb ' "$tmp/out" | grep -v '^deb linux-image-' || true; cat "$tmp/k2"; } | while read -r _ f; do
    cp "$KCACHE/debs/$f" "$OUT/"
    echo "deb $f"
done
grep '^K2 ' "$tmp/out"
