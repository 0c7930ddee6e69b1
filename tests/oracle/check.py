#!/usr/bin/env python3
"""Check .tsr golden scripts against the oracle.

usage: check.py [--write] DIR|FILE ...

For every NAME.tsr whose first line is `# oracle: python` (plain CPython is the oracle) or
`# oracle: numpy` (CPython plus the NumPy shim `op`), run it with run.py and compare its stdout
with NAME.stdout (and its exit status with NAME.code when that file exists, else 0).
Mismatches are shown as unified diffs; the last line is `N passed, N failed`; exit status 1 on
any mismatch. --write writes the .stdout files instead. Files without an oracle line are
skipped (they are blessed from the real interpreter and reviewed by hand).
"""

import difflib
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RUN = os.path.join(HERE, "run.py")
ORACLES = ("# oracle: python", "# oracle: numpy")


def collect(paths):
    files = []
    for p in paths:
        if os.path.isdir(p):
            for root, _dirs, names in os.walk(p):
                files += [os.path.join(root, n) for n in names if n.endswith(".tsr")]
        elif p.endswith(".tsr"):
            files.append(p)
        else:
            print(f"check.py: not a directory or .tsr file: {p}", file=sys.stderr)
            sys.exit(2)
    return sorted(files)


def main(argv):
    write = "--write" in argv
    # --strict: warn about printed values near a 4-decimal rounding boundary (for authors of
    # new scripts; deliberate exact ties make it noisy on the committed corpus).
    strict = "--strict" in argv
    paths = [a for a in argv if a not in ("--write", "--strict")]
    if not paths:
        print(__doc__, file=sys.stderr)
        return 2
    passed = failed = skipped = written = 0
    for tsr in collect(paths):
        with open(tsr, encoding="utf-8") as f:
            first = f.readline().rstrip("\r\n").strip()
        if first not in ORACLES:
            skipped += 1
            continue
        base = tsr[:-4]
        env = dict(os.environ, PYTHONIOENCODING="utf-8", PYTHONHASHSEED="0",
                   TESSERA_ORACLE_STRICT="1" if strict else "0")
        proc = subprocess.run([sys.executable, RUN, tsr], capture_output=True, text=True,
                              env=env, timeout=300)
        for line in proc.stderr.splitlines():
            if line.startswith("ORACLE-UNSTABLE"):
                print(f"warning: {tsr}: {line}")
        want_code = 0
        if os.path.exists(base + ".code"):
            with open(base + ".code") as f:
                want_code = int(f.read().strip())
        if write:
            if proc.returncode != want_code:
                print(f"FAIL {tsr}: exit status {proc.returncode}, expected {want_code}")
                sys.stdout.write(proc.stderr)
                failed += 1
                continue
            with open(base + ".stdout", "w", encoding="utf-8") as f:
                f.write(proc.stdout)
            written += 1
            passed += 1
            continue
        problems = []
        if proc.returncode != want_code:
            problems.append(f"exit status {proc.returncode}, expected {want_code}\n"
                            + proc.stderr)
        if not os.path.exists(base + ".stdout"):
            problems.append(f"missing {base}.stdout (run with --write)\n")
        else:
            with open(base + ".stdout", encoding="utf-8") as f:
                want = f.read()
            if want != proc.stdout:
                diff = difflib.unified_diff(want.splitlines(True), proc.stdout.splitlines(True),
                                            base + ".stdout", "oracle", n=2)
                problems.append("".join(diff))
        if problems:
            failed += 1
            print(f"FAIL {tsr}")
            for p in problems:
                sys.stdout.write(p if p.endswith("\n") else p + "\n")
        else:
            passed += 1
    if write:
        print(f"wrote {written} .stdout files")
    print(f"skipped {skipped} files without an oracle line")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
