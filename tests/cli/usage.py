#!/usr/bin/env python3
"""usage.py ATOMX: the command line's conventions, as a user meets them.

Every usage error of every subcommand exits 2 with one line on stderr that
starts with "atomx: " (Valgrind and most Unix tools: 2 for a bad command
line, 1 for a failure of the work); every subcommand's --help prints its
help on stdout and exits 0.  Prints a line per check and exits 1 if any
failed (tests/cli/CMakeLists.txt also runs it on a stand-in atomx that
exits 1 for everything, which it must fail).
"""
import os
import subprocess
import sys
import tempfile

atomx = sys.argv[1]
tmp = tempfile.mkdtemp()
missing = os.path.join(tmp, "no-such-trace")
with open(os.path.join(tmp, "bad.cache"), "w") as f:
    f.write("I1 size=4K assoc=4 line=64 colour=red\n")

# (arguments, the exit status, text stdout (help) or stderr (error) must have)
CHECKS = [
    (["--help"], 0, "atomx analyze TRACE"),
    (["trace", "--help"], 0, "atomx trace [-q]"),
    (["regen", "--help"], 0, "-j N"),
    (["analyze", "--help"], 0, "procs"),
    (["melt", "--help"], 0, "--method"),
    (["cachesim", "--help"], 0, "--sweep FILE"),
    (["end", "--help"], 0, "atomx end"),
    (["ease-report", "--help"], 0, "atomx ease-report"),
    (["trace", "--bogus"], 2, "unknown option --bogus"),
    (["trace", "-o", missing], 2, "needs a program"),
    (["regen"], 2, "needs a trace directory"),
    (["regen", missing, "--bogus"], 2, "unknown option --bogus"),
    (["regen", missing, "-j", "0"], 2, "-j needs a number of jobs"),
    (["regen", missing, "--blocks", "--counts"], 2, "do not combine"),
    (["analyze", missing], 2, "needs --tool"),
    (["analyze", missing, "--tool", "nosuch"], 2, "unknown analyser 'nosuch'"),
    (["analyze", missing, "--tool", "text,blocks"], 2, "write as they go"),
    (["analyze", missing, "--tool", "procs,procs"], 2, "named twice"),
    (["melt"], 2, "needs a trace directory"),
    (["cachesim"], 2, "cachesim needs a trace directory"),
    (["cachesim", missing], 2, "needs --config FILE or --sweep FILE"),
    (["cachesim", missing, "--config", "a", "--sweep", "b"], 2, "one of --config and --sweep"),
    (["cachesim", missing, "--config", "a", "-j", "0"], 2, "-j needs a number of jobs"),
    (["cachesim", missing, "--config", "a", "--bogus"], 2, "unknown option --bogus"),
    (["melt", missing, "--top", "0"], 2, "--top"),
    (["end", "--bogus"], 2, "unknown option --bogus"),
    (["end", "-j", "0"], 2, "-j needs a number"),
    (["ease-report"], 2, "no ease.json given"),
    (["ease-report", "--diff", "a.json"], 2, "--diff compares two ease.json files, A and B, not 1"),
    (["ease-report", "--bogus"], 2, "unknown option"),
    (["ease-report", "--top", "x", "a.json"], 2, "--top needs a number"),
    (["run"], 2, "run needs a tool"),
    (["run", "-T", "dyninst", "--counters", "sometimes", "--", "true"], 2, "--counters needs"),
    (["dump"], 2, "dump needs a program"),
    # Not usage errors: the work fails (exit 1).
    (["regen", missing], 1, "atomx: "),
    (["analyze", missing, "--tool", "procs"], 1, "atomx: "),
    (["cachesim", missing, "--config", "bad.cache"], 1, "atomx: bad.cache:1: unknown key 'colour'"),
    (["cachesim", missing, "--config", "no-such.cache"], 1, "atomx: no-such.cache: cannot read the cache configuration file"),
    (["dump", atomx, "--proc", "nosuchproc"], 1, "has no procedure named 'nosuchproc'"),
]

failed = 0
for args, status, text in CHECKS:
    r = subprocess.run([atomx] + args, capture_output=True, text=True, cwd=tmp)
    where = r.stdout if status == 0 else r.stderr
    problems = []
    if r.returncode != status:
        problems.append(f"exit status {r.returncode}, not {status}")
    if text not in where:
        problems.append(f"{'stdout' if status == 0 else 'stderr'} lacks {text!r}")
    if status != 0 and not r.stderr.startswith("atomx: "):
        problems.append("stderr does not start with 'atomx: '")
    if status != 0 and r.stderr.count("\n") != 1:
        problems.append(f"stderr has {r.stderr.count(chr(10))} lines, not one")
    line = " ".join(["atomx"] + args)
    if problems:
        failed += 1
        print(f"FAIL {line}: {'; '.join(problems)}\n    stdout: {r.stdout[:200]!r}\n    stderr: {r.stderr[:300]!r}")
    else:
        print(f"ok   {line}: exit {status}")
print(f"usage: {len(CHECKS) - failed} passed, {failed} failed")
sys.exit(1 if failed else 0)
