#!/usr/bin/env python3
"""huge_pages.py ATOMX PROG: atomx's huge-page heap (tools/atomx/HugePages.h).

- Where the kernel leaves transparent huge pages to madvise, a rewrite of
  PROG starts atomx a second time with glibc.malloc.hugetlb in
  GLIBC_TUNABLES (strace -f of the execve calls); elsewhere, or with
  ATOMX_HUGE_PAGES=0, or when GLIBC_TUNABLES already names hugetlb, it starts
  once.  Both outputs are byte-identical.
- The programs atomx starts see the environment atomx was given: under
  `atomx run -T dyninst -- PROG`, every execve that is not atomx's own
  (the program, and any compiler) carries no GLIBC_TUNABLES when there was
  none, the caller's value when there was one, and never atomx's own
  variable.
"""
import os
import subprocess
import sys
import tempfile


def execs(atomx, prog, out, env):
    """The execve calls of `atomx PROG -o OUT` that start atomx itself, with their environments."""
    with tempfile.NamedTemporaryFile("r", suffix=".strace") as log:
        r = subprocess.run(["strace", "-f", "-qq", "-v", "-s", "400", "-e", "trace=execve", "-o", log.name,
                            atomx, prog, "-o", out, "-q"], env=env, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit("FAIL: atomx exited %d: %s" % (r.returncode, r.stderr.strip()))
        return [line for line in log.read().splitlines()
                if "execve(" in line and "= 0" in line and ("/proc/self/exe" in line or atomx in line)]


def main():
    atomx, prog = os.path.abspath(sys.argv[1]), sys.argv[2]
    errors = []
    try:
        madvise = "[madvise]" in open("/sys/kernel/mm/transparent_hugepage/enabled").read()
    except OSError:
        madvise = False
    base = {k: v for k, v in os.environ.items() if k not in ("GLIBC_TUNABLES", "ATOMX_HUGE_PAGES")}
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out")
        cases = [("default", base, 2 if madvise else 1),
                 ("ATOMX_HUGE_PAGES=0", dict(base, ATOMX_HUGE_PAGES="0"), 1),
                 ("hugetlb already set", dict(base, GLIBC_TUNABLES="glibc.malloc.hugetlb=0"), 1)]
        outputs = []
        for name, env, want in cases:
            got = execs(atomx, prog, out, env)
            if len(got) != want:
                errors.append("%s: atomx started %d times, expected %d:\n  %s" % (name, len(got), want,
                                                                                "\n  ".join(got)))
            elif want == 2 and "glibc.malloc.hugetlb=1" not in got[1]:
                errors.append("%s: the second start has no glibc.malloc.hugetlb=1: %s" % (name, got[1]))
            outputs.append(open(out, "rb").read())
            os.unlink(out)
        if len(set(outputs)) != 1:
            errors.append("the outputs differ with and without the huge-page heap")
        print("PASS" if not errors else "FAIL", "starts: kernel %s" % ("madvise" if madvise else "not madvise"))

        # The environment of everything atomx starts (the compilers, the program).
        native = subprocess.run([os.path.abspath(prog)], capture_output=True, cwd=tmp).returncode
        for given in (None, "glibc.malloc.check=0"):
            env = dict(base)
            if given is not None:
                env["GLIBC_TUNABLES"] = given
            log = os.path.join(tmp, "run.strace")
            r = subprocess.run(["strace", "-f", "-qq", "-v", "-s", "400", "-e", "trace=execve", "-o", log,
                                atomx, "run", "-T", "dyninst", "-q", "--", os.path.abspath(prog)],
                               env=env, capture_output=True, text=True, cwd=tmp)
            if r.returncode != native:
                errors.append("atomx run exited %d, the program natively %d: %s" % (r.returncode, native,
                                                                                  r.stderr.strip()[-300:]))
                continue
            children = [line for line in open(log).read().splitlines()
                        if "execve(" in line and "= 0" in line and "/proc/self/exe" not in line
                        and not line.split("execve(", 1)[1].startswith('"%s"' % atomx)]
            want = '"GLIBC_TUNABLES=%s"' % given if given else None
            bad = [c for c in children if "ATOMX_SAVED" in c or (want and want not in c) or
                   (not want and "GLIBC_TUNABLES" in c)]
            if not children:
                errors.append("atomx run started nothing under strace")
            elif bad:
                errors.append("GLIBC_TUNABLES %r given; a program atomx started saw otherwise: %s" % (given, bad[0][:400]))
            else:
                print("PASS the %d programs atomx run started saw GLIBC_TUNABLES %r" % (len(children), given))
    for e in errors:
        print("FAIL " + e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
