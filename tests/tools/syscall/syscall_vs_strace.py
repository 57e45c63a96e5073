#!/usr/bin/env python3
"""The syscall tool against strace, per system call, exactly.

    syscall_vs_strace.py --atomx ATOMX [--ignore NAME,...] PROGRAM [ARGS...]

Instruments PROGRAM twice: with the syscall tool, and with the test-only
marker tool (marker_inst.cpp: a unique faccessat at ProgramBefore and at
ProgramAfter).  Runs the first plainly and the second under `strace -f`;
the calls strace shows between the markers of each process (strace_window.py)
are exactly what the tool must count (atomx's own runtime calls in that
window included, for both).  Compares calls and errors per system call,
summed over the processes (syscall.json and the forked children's
syscall.json.PID, as strace -c -f sums them), and checks that the program's
output and exit status are those of the original.  --ignore: calls whose
number depends on timing (futex in threaded programs)."""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, '..'))
import out_check  # noqa: E402
import strace_window  # noqa: E402


def run(cmd, cwd, **kw):
    return subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600, **kw)


def instrument(atomx, prog, out, tool_args):
    r = subprocess.run([atomx, prog] + tool_args + ['-o', out], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=600)
    if r.returncode != 0:
        sys.exit('atomx failed:\n' + r.stdout.decode(errors='replace'))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--atomx', required=True)
    ap.add_argument('--ignore', default='')
    ap.add_argument('--first-process-only', action='store_true',
                    help='compare the process that started the program only (its children exec instrumented '
                    'programs that write syscall.json too)')
    ap.add_argument('--stdin', help='file given to the program as standard input')
    ap.add_argument('prog')
    ap.add_argument('args', nargs='*')
    o = ap.parse_args()
    ignore = set(filter(None, o.ignore.split(',')))
    prog = os.path.abspath(o.prog)
    with tempfile.TemporaryDirectory(prefix='atomx-syscall-') as tmp:
        for d in ('orig', 'tool', 'mark'):
            os.mkdir(os.path.join(tmp, d))
        tool, mark = os.path.join(tmp, 'prog.syscall'), os.path.join(tmp, 'prog.mark')
        instrument(o.atomx, prog, tool, ['-T', 'syscall'])
        instrument(o.atomx, prog, mark, [os.path.join(HERE, 'marker_inst.cpp'), os.path.join(HERE, 'marker_anal.c')])

        def go(binary, d, prefix=()):
            stdin = open(o.stdin, 'rb') if o.stdin else subprocess.DEVNULL
            return run(list(prefix) + [binary] + o.args, os.path.join(tmp, d), stdin=stdin)

        orig = go(prog, 'orig')
        mine = go(tool, 'tool')
        log = os.path.join(tmp, 'strace.log')
        go(mark, 'mark', ['strace', '-f', '-qq', '-o', log])
        failures = []
        if (mine.returncode, mine.stdout) != (orig.returncode, orig.stdout):
            failures.append('output or exit status differ from the original (%d vs %d)' % (mine.returncode, orig.returncode))

        ours = {}
        files = sorted(glob.glob(os.path.join(tmp, 'tool', 'syscall.json' + ('' if o.first_process_only else '*'))))
        if not files:
            sys.exit('no syscall.json written; stderr:\n' + mine.stderr.decode(errors='replace'))
        for f in files:
            data = json.load(open(f))
            if not data['intercepted']:
                sys.exit('%s: not intercepted (no Syscall User Dispatch?)' % f)
            for s in data['syscalls']:
                e = ours.setdefault(s['name'], [0, 0])
                e[0] += s['calls']
                e[1] += s['errors']
        failures += [p for f in files for p in out_check.check('syscall', f)]  # each syscall.out says what its JSON says
        theirs = strace_window.counts(log, first_process_only=o.first_process_only)
        print('%-20s %9s %9s %9s %9s' % ('syscall', 'strace', 'atomx', 'errors', 'atomx'))
        for name in sorted(set(ours) | set(theirs), key=lambda n: -theirs.get(n, ours.get(n))[0]):
            t, m = theirs.get(name, [0, 0]), ours.get(name, [0, 0])
            flag = '' if t == m else ('  (ignored)' if name in ignore else '  <-- differs')
            print('%-20s %9d %9d %9d %9d%s' % (name, t[0], m[0], t[1], m[1], flag))
            if t != m and name not in ignore:
                failures.append('%s: strace %s, atomx %s (calls, errors)' % (name, t, m))
        print('processes: %d output file(s); total calls: strace %d, atomx %d' %
              (len(files), sum(v[0] for v in theirs.values()), sum(v[0] for v in ours.values())))
        if failures:
            print('FAIL:\n  ' + '\n  '.join(failures))
            return 1
        print('OK')
        return 0


if __name__ == '__main__':
    sys.exit(main())
