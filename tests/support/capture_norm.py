#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""What passthru capture replaces (MACs, IP addresses, node names, sha256 sums of contents
that held them, and the host names given) as one word each, so that an original's answers
and its capture's compare equal exactly when they differ only there. Used by
tests/integration/capture.sh and tests/vm/check.py.

    capture_norm.py FILE [HOSTNAME...]   prints FILE normalised
    capture_norm.py --same [--name HOSTNAME]... A B [A B]...
                    exit 0 when each A and its B are equal once normalised; else 1 and
                    the start of the diff of each pair that is not (one process for
                    all pairs: a Python start costs more than the comparison)
"""
import difflib
import ipaddress
import re
import sys


def normalise_redacted(t, hostnames=()):
    for name in hostnames:
        if name:
            t = re.sub(r'(?<![\w.-])' + re.escape(name) + r'(?![\w-])', 'HOST', t)
    t = re.sub(r'(?<![\w.-])node\d+(\.invalid)?(?![\w-])', 'HOST', t)
    t = re.sub(r'(?i)\b[0-9a-f]{2}(:[0-9a-f]{2}){5}\b', 'MAC', t)
    t = re.sub(r'\b[0-9a-f]{64}\b', 'SHA256', t)
    t = re.sub(r'\b\d{1,3}(\.\d{1,3}){3}\b', 'IPV4', t)

    def v6(m):
        try:
            ipaddress.IPv6Address(m.group(0))
            return 'IPV6'
        except ValueError:
            return m.group(0)
    return re.sub(r'(?i)(?<![\w:])[0-9a-f]{0,4}(:[0-9a-f]{0,4}){2,7}(?![\w:])', v6, t)


def read_normalised(path, hostnames):
    with open(path, encoding="utf-8") as f:
        return normalise_redacted(f.read(), hostnames)


def same(args):
    names = []
    while len(args) >= 2 and args[0] == "--name":
        names.append(args[1])
        args = args[2:]
    if not args or len(args) % 2:
        print("capture_norm.py --same: A B pairs expected", file=sys.stderr)
        return 2
    rc = 0
    for a, b in zip(args[::2], args[1::2]):
        ta, tb = read_normalised(a, names), read_normalised(b, names)
        if ta != tb:
            rc = 1
            diff = difflib.unified_diff(ta.splitlines(True), tb.splitlines(True), a, b)
            sys.stdout.writelines(list(diff)[:12])
    return rc


if __name__ == "__main__":
    if sys.argv[1:2] == ["--same"]:
        sys.exit(same(sys.argv[2:]))
    sys.stdout.write(read_normalised(sys.argv[1], sys.argv[2:]))
