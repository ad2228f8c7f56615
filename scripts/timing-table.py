#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Where a run of scripts/test.sh spent its time: the table it prints at its end.

    scripts/timing-table.py TIMING_DIR

TIMING_DIR (<build>/timing) holds what the run recorded: phases.tsv (scripts/test.sh's
phase(): name, start and end as seconds since the epoch, CPU seconds of its processes,
exit status), the ctest logs ctest-*.log and qemu-*.log (each test's "Test #N: NAME ...
Passed 12.34 sec" line), and in the QEMU logs the reboot test's lines "timing: RELEASE
LOADER boot N: ..." (tests/reboot/boot-timing.py) and its steps' lines ("building the
passthru package", "Debian root ready in N s", "root with passthru installed and its
image made in N s"). Phases that ran at the same time (the two lanes) overlap: the wall
column says when each began and ended, counted from the run's first phase.
"""
import glob
import os
import re
import sys

TEST_LINE = re.compile(r"Test +#\d+: (\S+) \.+\**\s*(\w[\w ]*?)\s+([0-9.]+) sec")
BOOT_LINE = re.compile(r"timing: (.*)$")
STEP_LINES = [
    (re.compile(r"package (\S+) built in (\d+) s"), "package build"),
    (re.compile(r"Debian root ready in (\d+) s"), "Debian root"),
    (re.compile(r"(\S+): root with passthru installed and its image made in (\d+) s"), "staging"),
]


def phases(timing):
    rows = []
    path = os.path.join(timing, "phases.tsv")
    if not os.path.exists(path):
        return rows
    with open(path, encoding="utf-8") as f:
        for line in f:
            name, t0, t1, cpu, rc = line.rstrip("\n").split("\t")
            rows.append((name, float(t0), float(t1), float(cpu), rc))
    return rows


def tests(timing):
    rows = []
    for log in sorted(glob.glob(os.path.join(timing, "ctest-*.log")) + glob.glob(os.path.join(timing, "qemu-*.log"))):
        with open(log, encoding="utf-8", errors="replace") as f:
            for line in f:
                m = TEST_LINE.search(line)
                if m:
                    rows.append((m.group(1), m.group(2).strip(), float(m.group(3))))
    return rows


def boots(timing):
    rows = []
    for log in sorted(glob.glob(os.path.join(timing, "qemu-*.log"))):
        test = os.path.basename(log)[len("qemu-"):-len(".log")]
        with open(log, encoding="utf-8", errors="replace") as f:
            for line in f:
                m = BOOT_LINE.search(line)
                if m:
                    rows.append((test, m.group(1)))
                    continue
                for pattern, what in STEP_LINES:
                    s = pattern.search(line)
                    if s:
                        rows.append((test, "%s: %s s" % (what, s.groups()[-1])))
    return rows


def main():
    timing = sys.argv[1]
    ph = phases(timing)
    if ph:
        first = min(t0 for _, t0, _, _, _ in ph)
        last = max(t1 for _, _, t1, _, _ in ph)
        print("== where the time went (wall: from the start of the run; cpu: the phase's processes)")
        print("%-58s %7s %7s %7s %7s  %s" % ("phase", "from", "to", "wall", "cpu", "exit"))
        for name, t0, t1, cpu, rc in ph:
            print("%-58s %6.0fs %6.0fs %6.0fs %6.0fs  %s" % (name[:58], t0 - first, t1 - first, t1 - t0, cpu, rc))
        print("%-58s %6s  %6.0fs %6.0fs" % ("whole run", "", last - first, sum(c for *_, c, _ in ph)))
    ts = tests(timing)
    if ts:
        print("\n== each ctest test (seconds, longest first)")
        for name, status, secs in sorted(ts, key=lambda r: -r[2]):
            print("%8.1f  %-8s %s" % (secs, status, name))
    bs = boots(timing)
    if bs:
        print("\n== the QEMU tests' steps and boots")
        for test, what in bs:
            print("%s: %s" % (test, what))


if __name__ == "__main__":
    main()
