#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""What passthru capture replaces (MACs, IP addresses, node names, sha256 sums of contents
that held them, and the host names given) as one word each, so that an original's answers
and its capture's compare equal exactly when they differ only there. Used by
tests/integration/capture.sh and tests/vm/check.py.

    capture_norm.py FILE [HOSTNAME...]   prints FILE normalised
"""
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


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as f:
        sys.stdout.write(normalise_redacted(f.read(), sys.argv[2:]))
