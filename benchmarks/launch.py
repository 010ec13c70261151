"""Run one command and write its wall time and rusage as JSON: ``python launch.py OUT.json CMD ...``.

The benchmark starts every measured step through this small launcher rather
than directly. On Linux a child started with ``vfork``/``posix_spawn`` inherits
its parent's peak resident size as the starting value of its own ``ru_maxrss``,
so measured directly from the (large) benchmark process a small step would
report the benchmark's own peak. This launcher is a fresh interpreter of a few
MiB, so the peak it reports is the command's. Standard library only; run it
with ``python -I``.
"""

import json
import os
import sys
import time


def main() -> int:
    out, argv = sys.argv[1], sys.argv[2:]
    t0 = time.perf_counter()
    pid = os.posix_spawnp(argv[0], argv, os.environ)
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    result = {
        "code": code,
        "wall": wall,
        "cpu": usage.ru_utime + usage.ru_stime,
        "maxrss_kib": usage.ru_maxrss,  # KiB on Linux
    }
    with open(out, "w", encoding="utf-8") as fh:
        json.dump(result, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
