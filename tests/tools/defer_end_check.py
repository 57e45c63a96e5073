#!/usr/bin/env python3
"""A tool's deferred end (atomx --defer-end, `atomx end`) against its end in the process.

    defer_end_check.py --atomx ATOMX --tool NAME [--errors] [--dump-dir | --via-run] PROG [ARGS...]

Instruments PROG with `atomx -T NAME` twice: as usual (in a/) and with
--defer-end (in b/), each as ./prog in its own directory, and runs both
with ARGS.  Then:
  - the deferred program's stdout, stderr and exit status equal the other's;
  - b/ holds no output of the tool, only atomx-end.PID dumps, one for each
    process that wrote outputs in a/;
  - `atomx end b` exits 0 and removes the dumps, and b/ then holds the same
    files as a/, byte for byte: the processes' pids (each process's rank
    among the run's pids) are the only difference allowed, in the file
    names (NAME.PID) and on callgrind files' "pid:" line.
With --dump-dir, b/'s processes run with ATOMX_END_DIR naming another
directory: the dumps must go there (b/ stays empty), and `atomx end` of that
directory must write the outputs in b/, where the processes ended.  With
--via-run, the sides are `atomx run -T NAME --end-in-process -- PROG ARGS`
in a/ and `atomx run -T NAME -- PROG ARGS` (deferred: the default) in b/:
no dump may be left anywhere, and the files must agree.
With --errors, also: a dump whose program file was changed since (its
mtime) is refused by `atomx end` (status 1, one line saying so, the dump
kept), and a file that is not a dump likewise.
Exit status 0 when everything holds.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

failures = []


def check(ok, message):
    if not ok:
        failures.append(message)


def run(cmd, cwd, env=None):
    return subprocess.run(cmd, cwd=cwd, capture_output=True, timeout=300, env=env)


def listing(d):
    return sorted(f for f in os.listdir(d) if f != "prog")


def process_count(d):
    """Processes whose outputs d holds: NAME for the first, NAME.PID for each other."""
    return 1 + len({m.group(1) for f in listing(d) for m in [re.search(r"\.(\d+)$", f)] if m})


def normalized(d):
    """{name with each pid replaced by its rank: content, likewise}."""
    pids = sorted({int(m.group(1)) for f in listing(d) for m in [re.search(r"\.(\d+)$", f)] if m})
    rank = {str(p): "#%d" % k for k, p in enumerate(pids)}
    files = {}
    for f in listing(d):
        m = re.search(r"\.(\d+)$", f)
        name = f[:m.start()] + "." + rank[m.group(1)] if m else f
        data = open(os.path.join(d, f), "rb").read()
        data = re.sub(rb"^pid: \d+$", b"pid: #", data, flags=re.M)
        files[name] = data
    return files


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--atomx", required=True)
    ap.add_argument("--tool", required=True)
    ap.add_argument("--errors", action="store_true")
    ap.add_argument("--dump-dir", action="store_true")
    ap.add_argument("--via-run", action="store_true")
    ap.add_argument("--own-tool", action="store_true",
                    help="--via-run with tests/tools/defer/own_*: a tool of the user's own is not deferred by "
                         "default, and is with --defer-end")
    ap.add_argument("prog")
    ap.add_argument("args", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="atomx-defer-")
    env = dict(os.environ, LC_ALL="C")
    runs = {}
    A, B, D = os.path.join(tmp, "a"), os.path.join(tmp, "b"), os.path.join(tmp, "dumps")
    os.mkdir(D)
    if a.own_tool:
        return own_tool(a, tmp, env)
    if a.via_run:
        return via_run(a, tmp, env)
    for d, extra in (("a", []), ("b", ["--defer-end"])):
        os.mkdir(os.path.join(tmp, d))
        r = run([a.atomx, a.prog, "-T", a.tool, "-o", "prog", "-q"] + extra, os.path.join(tmp, d))
        if r.returncode != 0:
            print("FAIL: atomx -T %s %s: %s" % (a.tool, " ".join(extra), r.stderr.decode(errors="replace")))
            return 1
        runs[d] = run(["./prog"] + a.args, os.path.join(tmp, d),
                      dict(env, ATOMX_END_DIR=D) if d == "b" and a.dump_dir else env)
    for what in ("returncode", "stdout", "stderr"):
        x, y = getattr(runs["a"], what), getattr(runs["b"], what)
        check(x == y, "the deferred program's %s differs: %r, in-process %r" % (what, str(y)[:200], str(x)[:200]))
    where = D if a.dump_dir else B
    dumps = [f for f in listing(where) if f.startswith("atomx-end.")]
    outputs = set(listing(A))
    check(len(dumps) > 0 and set(listing(where)) == set(dumps),
          "before atomx end, %s should hold only atomx-end.PID dumps: %s" % (where, listing(where)))
    if a.dump_dir:
        check(listing(B) == [], "with ATOMX_END_DIR, b/ should stay empty until atomx end: %s" % listing(B))
    processes = process_count(A)
    check(len(dumps) == processes, "%d dumps for %d processes with outputs (%s)" % (len(dumps), processes, sorted(outputs)))

    e = run([a.atomx, "end", where], tmp)
    check(e.returncode == 0, "atomx end exited %d: %s" % (e.returncode, e.stderr.decode(errors="replace")))
    check(not any(f.startswith("atomx-end.") for f in listing(where)), "atomx end left dumps: %s" % listing(where))
    files = compare(A, B)
    if a.errors:
        errors(a, tmp, B, env)
    return finish(a, tmp, processes, files)


def compare(A, B):
    """A's files against B's, pids by rank; the number of files."""
    na, nb = normalized(A), normalized(B)
    check(sorted(na) == sorted(nb), "files in-process %s, deferred %s" % (sorted(na), sorted(nb)))
    for f in sorted(set(na) & set(nb)):
        if na[f] != nb[f]:
            la, lb = na[f].splitlines(), nb[f].splitlines()
            k = next((i for i, (x, y) in enumerate(zip(la, lb)) if x != y), min(len(la), len(lb)))
            check(False, "%s differs at line %d: in-process %r, deferred %r" %
                  (f, k + 1, la[k][:120] if k < len(la) else b"(end)", lb[k][:120] if k < len(lb) else b"(end)"))
    return len(na)


def errors(a, tmp, B, env):
    for f in listing(B):
        os.remove(os.path.join(B, f))
    run(["./prog"] + a.args, B, env)
    dumps = [f for f in listing(B) if f.startswith("atomx-end.")]
    os.utime(os.path.join(B, "prog"), (0, 0))
    e = run([a.atomx, "end", B], tmp)
    err = e.stderr.decode(errors="replace")
    check(e.returncode == 1 and "was written by another program, or this file was changed since" in err,
          "atomx end of a dump whose program changed: status %d, %r" % (e.returncode, err))
    check(sorted(f for f in listing(B) if f.startswith("atomx-end.")) == sorted(dumps),
          "atomx end of a dump it refused removed it")
    open(os.path.join(B, "atomx-end.1"), "w").write("not a dump\n")
    e = run([a.atomx, "end", os.path.join(B, "atomx-end.1")], tmp)
    err = e.stderr.decode(errors="replace")
    check(e.returncode == 1 and "not a deferred end's dump" in err and err.count("\n") <= 2,
          "atomx end of a file that is not a dump: status %d, %r" % (e.returncode, err))


def via_run(a, tmp, env):
    """atomx run, ending in the process and deferred, each in its directory."""
    runs = {}
    # c: b again, not quiet, for atomx's line saying how many ends it ran.
    for d, extra in (("a", ["-q", "--end-in-process"]), ("b", ["-q"]), ("c", [])):  # b, c: deferred by default
        os.mkdir(os.path.join(tmp, d))
        runs[d] = run([a.atomx, "run", "--cache-dir", os.path.join(tmp, "cache"), "-T", a.tool] + extra +
                      ["--", a.prog] + a.args, os.path.join(tmp, d), dict(env, TMPDIR=os.path.join(tmp, "dumps")))
    A, B = os.path.join(tmp, "a"), os.path.join(tmp, "b")
    processes = process_count(A)
    for what in ("returncode", "stdout", "stderr"):
        x, y = getattr(runs["a"], what), getattr(runs["b"], what)
        check(x == y, "atomx run, deferred: %s differs: %r, in-process %r" % (what, str(y)[:200], str(x)[:200]))
    said = runs["c"].stderr.decode(errors="replace")
    check("atomx: end deferred: %d process(es) ended\n" % processes in said,
          "atomx run did not say it ended %d processes later: %r" % (processes, said[-300:]))
    check(listing(os.path.join(tmp, "dumps")) == [],
          "atomx run left %s in its dump directory" % listing(os.path.join(tmp, "dumps")))
    return finish(a, tmp, processes, compare(A, B))


def own_tool(a, tmp, env):
    """atomx run with a tool of one's own: ended in each process unless --defer-end."""
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "defer")
    tool = [os.path.join(here, "own_inst.cpp"), os.path.join(here, "own_anal.c")]
    runs = {}
    for d, extra in (("a", []), ("b", ["--defer-end"])):
        os.mkdir(os.path.join(tmp, d))
        runs[d] = run([a.atomx, "run", "--cache-dir", os.path.join(tmp, "cache")] + tool + extra + ["--", a.prog] + a.args,
                      os.path.join(tmp, d), dict(env, TMPDIR=os.path.join(tmp, "dumps")))
    said = {d: r.stderr.decode(errors="replace") for d, r in runs.items()}
    check("end deferred" not in said["a"], "a tool of one's own was deferred without --defer-end: %r" % said["a"][-300:])
    check("atomx: end deferred: " in said["b"], "--defer-end did not defer a tool of one's own: %r" % said["b"][-300:])
    for what in ("returncode", "stdout"):
        x, y = getattr(runs["a"], what), getattr(runs["b"], what)
        check(x == y, "atomx run --defer-end: %s differs: %r, in-process %r" % (what, str(y)[:200], str(x)[:200]))
    check(listing(os.path.join(tmp, "dumps")) == [], "dumps left: %s" % listing(os.path.join(tmp, "dumps")))
    files = compare(os.path.join(tmp, "a"), os.path.join(tmp, "b"))
    check(files > 0, "the tool wrote nothing")
    processes = process_count(os.path.join(tmp, "a"))
    return finish(a, tmp, processes, files)


def finish(a, tmp, processes, files):
    for f in failures:
        print("FAIL:", f)
    print("%s: -T %s --defer-end%s: %d process(es), %d file(s) %s" %
          (os.path.basename(a.prog), a.tool,
           " (own tool, atomx run)" if a.own_tool else " (atomx run)" if a.via_run else " (ATOMX_END_DIR)" if a.dump_dir else "",
           processes, files, "as in-process" if not failures else "DIFFER"))
    if not failures:
        subprocess.run(["rm", "-rf", tmp])
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
