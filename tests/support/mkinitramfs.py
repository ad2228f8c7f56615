#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Writes an initramfs image as initramfs-tools lays one out: optional uncompressed cpio
archives (early microcode), then one compressed cpio archive ("newc", as mkinitramfs
writes with cpio -H newc).

Usage: mkinitramfs.py OUT --compress gzip|zstd|xz|none [--early DEST=SRC]... [DEST=SRC]...
DEST is the member's path in the archive; SRC a file to copy, or "-" for an empty file.
Directories on the way are added as members, as mkinitramfs does.
"""
import gzip
import lzma
import os
import subprocess
import sys


def newc(members):
    out = bytearray()
    ino = 1
    seen = set()

    def add(name, mode, data):
        nonlocal ino
        namez = name.encode() + b"\0"
        fields = [ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(namez), 0]
        out.extend(b"070701" + b"".join(b"%08X" % f for f in fields))
        out.extend(namez)
        out.extend(b"\0" * (-len(out) % 4))
        out.extend(data)
        out.extend(b"\0" * (-len(out) % 4))
        ino += 1

    for dest, src in members:
        parts = dest.split("/")
        for i in range(1, len(parts)):
            d = "/".join(parts[:i])
            if d not in seen:
                seen.add(d)
                add(d, 0o040755, b"")
        data = b"" if src == "-" else open(src, "rb").read()
        add(dest, 0o100644, data)
    add("TRAILER!!!", 0, b"")
    out.extend(b"\0" * (-len(out) % 512))  # cpio pads its output to 512-byte blocks
    return bytes(out)


def main(argv):
    out, compress = argv[0], None
    early, main_members = [], []
    i = 1
    while i < len(argv):
        if argv[i] == "--compress":
            compress = argv[i + 1]
            i += 2
            continue
        target = main_members
        if argv[i] == "--early":
            target = early
            i += 1
        dest, _, src = argv[i].partition("=")
        target.append((dest, src))
        i += 1
    body = newc(main_members)
    if compress == "gzip":
        body = gzip.compress(body)
    elif compress == "xz":
        body = lzma.compress(body, format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC32)
    elif compress == "zstd":
        body = subprocess.run(["zstd", "-q", "-1", "-c"], input=body, stdout=subprocess.PIPE, check=True).stdout
    elif compress != "none":
        sys.exit("mkinitramfs.py: --compress gzip|zstd|xz|none")
    with open(out + ".tmp", "wb") as f:
        if early:
            f.write(newc(early))
        f.write(body)
    os.replace(out + ".tmp", out)


if __name__ == "__main__":
    main(sys.argv[1:])
