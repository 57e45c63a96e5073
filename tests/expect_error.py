#!/usr/bin/env python3
"""expect_error.py [--skippable] [--anywhere] TEXT -- COMMAND [ARG...]

Passes when COMMAND fails the way a refused input must: a non-zero exit
status that is not a crash (no signal, not 128+), and TEXT in its standard
error (--anywhere: in its standard output or error; the oracles' self-tests
look for the FAIL line a checker prints).  ctest's PASS_REGULAR_EXPRESSION
alone ignores the exit status, so an atomx that printed the message and went
on with status 0 would pass it, and WILL_FAIL passes on any failure, a
checker's own crash included.  --skippable: COMMAND's exit status 77 (a
test that cannot run here, ctest's SKIP_RETURN_CODE) is passed on.
"""
import subprocess
import sys


def main():
    argv = sys.argv[1:]
    skippable = bool(argv) and argv[0] == "--skippable"
    argv = argv[1:] if skippable else argv
    anywhere = bool(argv) and argv[0] == "--anywhere"
    argv = argv[1:] if anywhere else argv
    if len(argv) < 3 or argv[1] != "--":
        print(__doc__.split("\n\n")[0], file=sys.stderr)
        return 2
    text, cmd = argv[0], argv[2:]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if skippable and r.returncode == 77:
        print(f"SKIP {' '.join(cmd)}:\n{r.stdout}{r.stderr}")
        return 77
    seen = r.stderr + (r.stdout if anywhere else "")
    problems = []
    if r.returncode == 0:
        problems.append("exit status 0")
    elif r.returncode < 0 or r.returncode >= 128:
        problems.append(f"exit status {r.returncode} (a crash, not an error)")
    if text not in seen:
        problems.append(f"{'output' if anywhere else 'stderr'} lacks {text!r}")
    if problems:
        print(f"FAIL {' '.join(cmd)}: {'; '.join(problems)}\n--- stdout:\n{r.stdout}\n--- stderr:\n{r.stderr}",
              file=sys.stderr)
        return 1
    print(f"PASS exit status {r.returncode}, {'output' if anywhere else 'stderr'} has {text!r}")
    if anywhere:
        print("--- its output:\n" + "\n".join((r.stdout + r.stderr).splitlines()[-12:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
