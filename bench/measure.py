#!/usr/bin/env python3
# One timed run for bench/run.sh: runs the command with its output discarded and
# prints "WALL_NS CPU_NS MAXRSS_KB": wall time from fork to exit, user + system CPU
# time from wait4 (the command's, plus well under a millisecond of /usr/bin/time's),
# peak RSS as GNU time reports it (wait4's own figure would count the Python process
# this one forks from). Exit status 1 (with the command's stderr) when it fails.
import os
import sys
import tempfile
import time


def main():
    rss_file = tempfile.NamedTemporaryFile(prefix="passthru-bench-rss.")
    argv = ["/usr/bin/time", "-f", "%M", "-o", rss_file.name] + sys.argv[1:]
    err = tempfile.TemporaryFile()
    devnull = os.open(os.devnull, os.O_WRONLY)
    t0 = time.perf_counter_ns()
    pid = os.fork()
    if pid == 0:
        try:
            os.dup2(devnull, 1)
            os.dup2(err.fileno(), 2)
            os.execvp(argv[0], argv)
        finally:
            os._exit(127)
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter_ns() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        err.seek(0)
        sys.stderr.write("bench: error: command failed: %s\n%s" % (" ".join(sys.argv[1:]), err.read().decode(errors="replace")))
        return 1
    cpu = round((usage.ru_utime + usage.ru_stime) * 1e9)
    with open(rss_file.name) as f:
        rss = int(f.read().split()[-1])
    print(wall, cpu, rss)
    return 0


if __name__ == "__main__":
    sys.exit(main())
