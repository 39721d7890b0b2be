#!/usr/bin/env python3
"""Run rdma-core's pyverbs test suite against a device and report in TAP.

usage: pyverbs_tap.py [--hugepages N] [--add FILE]... --dev IBDEV
                      [run_tests.py options] [module ...]
--add FILE puts one more test module into the suite, as if rdma-core
shipped it (libvrnic's drivers/providers/vrnic/tests/test_vrnic.py).

--hugepages N sets the default-size (2 MiB on x86-64) huge page pool,
/proc/sys/vm/nr_hugepages, to N while the tests run (root only; meant for
throwaway guests), reports in a TAP comment how many the kernel actually
gave, and puts the old size back at the end; tests decorated with
requires_huge_pages (test_parent_domain, test_odp) skip without any. 0,
the default, leaves the pool alone.

Debian ships the suite under /usr/share/doc/rdma-core/tests with most files
gzipped; it is copied to a temporary directory and unpacked first. Each test
case becomes one TAP result: skips are reported as skips (never as passes),
failures and errors as 'not ok' with the traceback as comments.
"""
import argparse
import gzip
import os
import shutil
import sys
import tempfile
import unittest

SRC = "/usr/share/doc/rdma-core/tests"
NR_HUGEPAGES = "/proc/sys/vm/nr_hugepages"
# What tests.utils.huge_pages_supported() reads.
NR_HUGEPAGES_2M = "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"


def read_int(path):
    with open(path) as f:
        return int(f.read())


def write_int(path, n):
    with open(path, "w") as f:
        f.write(f"{n}\n")


def set_hugepages(n):
    """Ask for n default-size huge pages.

    Returns (the pool size to restore or None, a line saying what we got).
    The kernel grants fewer than asked when memory is short or fragmented,
    so the count is read back rather than assumed.
    """
    try:
        old = read_int(NR_HUGEPAGES)
        write_int(NR_HUGEPAGES, n)
    except (OSError, ValueError) as e:
        return None, f"hugepages: cannot set {NR_HUGEPAGES} to {n}: {e}"
    try:
        got = read_int(NR_HUGEPAGES_2M)
    except (OSError, ValueError) as e:
        return old, f"hugepages: asked for {n}, cannot read {NR_HUGEPAGES_2M}: {e}"
    return old, f"hugepages: asked for {n} of 2048 kB, got {got}"


def restore_hugepages(old):
    """Give the pool back, so that later tests in the guest get the memory."""
    try:
        write_int(NR_HUGEPAGES, old)
    except OSError as e:
        print(f"# hugepages: cannot restore {NR_HUGEPAGES} to {old}: {e}")


def unpack_suite():
    top = tempfile.mkdtemp(prefix="pyverbs-")
    dst = os.path.join(top, "tests")
    shutil.copytree(SRC, dst)
    for fn in os.listdir(dst):
        if fn.endswith(".gz"):
            path = os.path.join(dst, fn)
            with gzip.open(path) as i, open(path[:-3], "wb") as o:
                shutil.copyfileobj(i, o)
            os.unlink(path)
    return top, dst


class TapResult(unittest.TestResult):
    def __init__(self):
        super().__init__()
        self.n = 0
        self.counts = {"pass": 0, "fail": 0, "skip": 0}

    def _emit(self, ok, test, directive="", detail=""):
        self.n += 1
        line = f"{'ok' if ok else 'not ok'} {self.n} {test.id()}"
        if directive:
            line += f" # {directive}"
        print(line, flush=True)
        for d in detail.splitlines():
            print(f"# {d}")

    def addSuccess(self, test):
        self.counts["pass"] += 1
        self._emit(True, test)

    def addSkip(self, test, reason):
        self.counts["skip"] += 1
        self._emit(True, test, "SKIP " + " ".join(str(reason).split()))

    def addFailure(self, test, err):
        self.counts["fail"] += 1
        self._emit(False, test, detail=self._exc_info_to_string(err, test))

    def addError(self, test, err):
        self.counts["fail"] += 1
        self._emit(False, test, detail=self._exc_info_to_string(err, test))

    def addExpectedFailure(self, test, err):
        self.counts["pass"] += 1
        self._emit(True, test, "expected failure")

    def addUnexpectedSuccess(self, test):
        self.counts["fail"] += 1
        self._emit(False, test, detail="unexpected success")


def main():
    # Our own options first; the rest goes to the suite's parser.
    own = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    own.add_argument("--hugepages", type=int, default=0, metavar="N")
    own.add_argument("--add", action="append", default=[], metavar="FILE")
    opts, rest = own.parse_known_args()
    if opts.hugepages < 0:
        own.error("--hugepages must be >= 0")
    old_pool, hugepages = None, None
    if opts.hugepages:
        old_pool, hugepages = set_hugepages(opts.hugepages)
    try:
        return run(rest, hugepages, opts.add)
    finally:
        if old_pool is not None:
            restore_hugepages(old_pool)


def run(rest, hugepages, added):
    top, tests_dir = unpack_suite()
    for path in added:
        shutil.copy(path, tests_dir)
    sys.path[:0] = [tests_dir, top]
    from args_parser import parser  # noqa: E402  (the suite's own parser)

    sys.argv = [sys.argv[0]] + rest
    parser.parse_args()             # consumes --dev/--gid/..., leaves names
    names = sys.argv[1:] or ["tests"]
    import tests                    # noqa: E402  (loads every test_*.py)

    loader = unittest.defaultTestLoader
    suite = unittest.TestSuite()
    for name in names:
        if name == "tests":
            suite.addTests(loader.loadTestsFromModule(tests))
        else:
            suite.addTests(loader.loadTestsFromName(name, tests))
    print("TAP version 13")
    print(f"1..{suite.countTestCases()}", flush=True)
    if hugepages:
        print(f"# {hugepages}", flush=True)
    result = TapResult()
    suite.run(result)
    c = result.counts
    print(f"# Totals: pass:{c['pass']} fail:{c['fail']} xfail:0 xpass:0 "
          f"skip:{c['skip']} error:0")
    shutil.rmtree(top, ignore_errors=True)
    return 1 if c["fail"] else 0


if __name__ == "__main__":
    sys.exit(main())
