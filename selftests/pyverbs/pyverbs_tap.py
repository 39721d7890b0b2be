#!/usr/bin/env python3
"""Run rdma-core's pyverbs test suite against a device and report in TAP.

usage: pyverbs_tap.py --dev IBDEV [run_tests.py options] [module ...]

Debian ships the suite under /usr/share/doc/rdma-core/tests with most files
gzipped; it is copied to a temporary directory and unpacked first. Each test
case becomes one TAP result: skips are reported as skips (never as passes),
failures and errors as 'not ok' with the traceback as comments.
"""
import gzip
import os
import shutil
import sys
import tempfile
import unittest

SRC = "/usr/share/doc/rdma-core/tests"


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
    top, tests_dir = unpack_suite()
    sys.path[:0] = [tests_dir, top]
    from args_parser import parser  # noqa: E402  (the suite's own parser)

    sys.argv = [sys.argv[0]] + sys.argv[1:]
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
    result = TapResult()
    suite.run(result)
    c = result.counts
    print(f"# Totals: pass:{c['pass']} fail:{c['fail']} xfail:0 xpass:0 "
          f"skip:{c['skip']} error:0")
    shutil.rmtree(top, ignore_errors=True)
    return 1 if c["fail"] else 0


if __name__ == "__main__":
    sys.exit(main())
