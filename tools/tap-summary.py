#!/usr/bin/env python3
"""Summarise vrnic test output: TAP sections framed by selftests/run_suite.sh
('# selftest: NAME' ... '# selftest-exit: NAME RC') or whole files of TAP.

Counts every top-level TAP result: 'ok' = passed, 'ok ... # SKIP' = skipped
(never passed), 'not ok' = failed. A section with fewer results than its
plan, a bail-out, no results at all, or a non-zero exit with no failing
result counts as one more failure, so a crash is never silent.
Prints a line per section and ends with 'N passed, N failed, N skipped'.
With --why, each failure is followed by the diagnostic comment lines ('# ...')
that came just before it (the tools' output a pair test prints), so a CI log
that keeps only the end still shows why.
usage: tap-summary.py [-v] [--why] FILE...   (exit status 1 if anything failed)
"""
import collections
import re
import sys

WHY_LINES = 30      # comment lines kept before each failure
WHY_FAILURES = 4    # failures shown with their comment lines

RESULT = re.compile(r"^(not ok|ok)\b(?:\s+\d+)?\s*(.*)$")
PLAN = re.compile(r"^1\.\.(\d+)(.*)$")


class Section:
    def __init__(self, name):
        self.name = name
        self.passed = self.failed = self.skipped = 0
        self.plan = None
        self.results = 0
        self.notes = []
        self.why = []
        self.recent = collections.deque(maxlen=WHY_LINES)
        self.exit = None

    def feed(self, line):
        if line.startswith("#"):
            self.recent.append(line)
            return
        m = PLAN.match(line)
        if m:
            self.plan = (self.plan or 0) + int(m.group(1))
            if int(m.group(1)) == 0 and "SKIP" in m.group(2).upper():
                self.skipped += 1
                self.notes.append("skipped: " + m.group(2).strip(" #"))
            return
        if line.startswith("Bail out!"):
            self.failed += 1
            self.notes.append(line)
            return
        m = RESULT.match(line)
        if not m:
            return
        self.results += 1
        desc = m.group(2)
        if m.group(1) == "not ok":
            self.failed += 1
            self.notes.append("FAILED: " + desc)
            self.why.append(("FAILED: " + desc, list(self.recent)))
            self.recent.clear()
            return
        self.recent.clear()
        if re.search(r"#\s*SKIP", desc, re.I):
            self.skipped += 1
            self.notes.append("skipped: " + desc)
        else:
            self.passed += 1

    def close(self):
        if self.plan is not None and self.results < self.plan and self.plan > 0:
            missing = self.plan - self.results
            self.failed += missing
            self.notes.append(f"FAILED: {missing} planned result(s) missing")
        if self.results == 0 and self.plan is None:
            self.failed += 1
            self.notes.append("FAILED: no TAP output")
        if self.exit not in (None, 0) and self.failed == 0:
            self.failed += 1
            self.notes.append(f"FAILED: exited with status {self.exit}")


def parse(path):
    sections, cur = [], None
    with open(path, errors="replace") as f:
        for raw in f:
            line = raw.rstrip("\n")
            if line.startswith("# selftest: "):
                if cur:
                    cur.close()
                    sections.append(cur)
                cur = Section(line[len("# selftest: "):].strip())
                continue
            if line.startswith("# selftest-exit: ") and cur:
                cur.exit = int(line.split()[-1])
                cur.close()
                sections.append(cur)
                cur = None
                continue
            if cur is None:
                cur = Section(path.rsplit("/", 1)[-1].rsplit(".", 1)[0])
            cur.feed(line)
    if cur:
        cur.close()
        sections.append(cur)
    return sections


def main(paths, verbose, why):
    total = [0, 0, 0]
    failures = []
    for p in paths:
        for s in parse(p):
            failures += [(s.name, w) for w in s.why]
            total[0] += s.passed
            total[1] += s.failed
            total[2] += s.skipped
            state = "FAIL" if s.failed else "ok  "
            print(f"  {state} {s.name}: {s.passed} passed, {s.failed} failed, "
                  f"{s.skipped} skipped")
            for n in s.notes:
                if n.startswith("FAILED") or verbose:
                    print(f"         {n}")
    if why:
        for name, (what, lines) in failures[:WHY_FAILURES]:
            print(f"--- {name}: {what}; the lines before it:")
            for line in lines:
                print(f"  {line}")
    print(f"{total[0]} passed, {total[1]} failed, {total[2]} skipped")
    return 1 if total[1] else 0


if __name__ == "__main__":
    args = sys.argv[1:]
    sys.exit(main([a for a in args if a not in ("-v", "--why")],
                  "-v" in args, "--why" in args))
