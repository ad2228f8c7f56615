#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Where one boot of the reboot test spent its time, from its serial console.

    boot-timing.py SERIAL_LOG TOTAL_SECONDS KERNEL_AFTER_SECONDS LABEL

The guest's step script (guest/step) prints "@@PT: [UPTIME] boot N: ..." lines, UPTIME
being the guest kernel's /proc/uptime: when the step script started (the kernel's and
systemd's part), each step's start and exit, and "done". TOTAL_SECONDS is how long QEMU
ran and KERNEL_AFTER_SECONDS when its kernel printed "Linux version" (run.sh polls every
5 s, so firmware and boot loader are known to within 5 s). Prints one line:

    timing: LABEL: firmware+loader 12s, kernel to step 48s, record 6s, scan 4s, ...,
    apply (update-initramfs 120s, update-grub 20s) 150s, ..., power-off 9s (total 231s)

which scripts/timing-table.py collects. Steps that ran more than once are summed.
"""
import re
import sys

LINE = re.compile(r"@@PT: \[([0-9.]+)\] boot [0-9]+: (.*)")
# "step apply: after-step took 92.4 s: update-initramfs -u -k all" (guest/step passes on
# what passthru printed for each after-step it ran)
AFTER_STEP = re.compile(r"after-step took ([0-9.]+) s: (.*)")


def main():
    serial, total, kernel_after, label = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
    events = []
    with open(serial, "rb") as f:
        for raw in f.read().decode("utf-8", "replace").replace("\r", "").splitlines():
            m = LINE.search(raw)
            if m:
                events.append((float(m.group(1)), m.group(2)))
    parts = [("firmware+loader", kernel_after)]
    started = next((t for t, what in events if what.startswith("step script started")), None)
    done = next((t for t, what in events if what == "done"), None)
    if started is not None:
        parts.append(("kernel to step", started))
    open_step = {}
    spent = {}
    inner = {}
    order = []
    record_at = None
    for t, what in events:
        m = re.match(r"step ([^:]+): (.*)", what)
        if what == "recording the state":
            record_at = t
            continue
        if record_at is not None:
            spent["record"] = spent.get("record", 0.0) + t - record_at
            if "record" not in order:
                order.append("record")
            record_at = None
        if not m:
            continue
        name, rest = m.group(1), m.group(2)
        took = AFTER_STEP.match(rest)
        if took:
            # passthru's own figure for one of the step's after-steps, by program name
            program = took.group(2).split()[0] if took.group(2).split() else "?"
            inner.setdefault(name, {})
            inner[name][program] = inner[name].get(program, 0.0) + float(took.group(1))
            continue
        if rest.startswith("exit "):
            if name in open_step:
                spent[name] = spent.get(name, 0.0) + t - open_step.pop(name)
                if name not in order:
                    order.append(name)
        elif not rest.startswith("running"):
            open_step[name] = t
    parts += [(name, spent[name]) for name in order]
    labels = {name: "%s (%s)" % (name, ", ".join("%s %.0fs" % kv for kv in inner[name].items())) for name in inner}
    if done is not None:
        accounted = sum(v for _, v in parts[2:]) + (started or 0.0)
        parts.append(("other", max(0.0, done - accounted)))
        parts.append(("power-off", max(0.0, total - kernel_after - done)))
    print("timing: %s: %s (total %.0fs)" % (label, ", ".join("%s %.0fs" % (labels.get(n, n), v) for n, v in parts), total))


if __name__ == "__main__":
    main()
