#!/usr/bin/env python3
"""The io tool against strace, per file descriptor and file, exactly.

    io_vs_strace.py --atomx ATOMX [--normalize REGEX ...] PROGRAM [ARGS...]

Instruments PROGRAM with the io tool and with the test-only marker tool
(tests/tools/syscall/marker_inst.cpp), runs the first plainly and the second
under `strace -f -y` (every descriptor argument printed with its file), and
sums strace's per-call lines between the markers (strace_window.py) per
descriptor and path: reads, bytes read, writes, bytes written, errors.
Compares them with io.json (and io.json.PID of forked children, summed), and
checks that the program's output and exit status are unchanged.  Paths that
differ between runs (pipe and socket inodes, mkstemp names: --normalize)
are compared with those parts blanked."""
import argparse
import collections
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
MARKER = os.path.join(HERE, '..', 'syscall')
sys.path.insert(0, MARKER)
sys.path.insert(0, os.path.join(HERE, '..'))
import out_check  # noqa: E402
import strace_window  # noqa: E402

READS = {'read', 'pread64', 'readv', 'preadv', 'preadv2', 'recvfrom', 'recvmsg', 'recvmmsg'}
WRITES = {'write', 'pwrite64', 'writev', 'pwritev', 'pwritev2', 'sendto', 'sendmsg', 'sendmmsg', 'vmsplice'}
# two descriptors: which of the printed descriptor arguments is read, which written
TRANSFERS = {'sendfile': (1, 0), 'tee': (0, 1), 'splice': (0, 1), 'copy_file_range': (0, 1)}
QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"(?:\.\.\.)?')
# strace -y prints a descriptor whose file was unlinked as 3</tmp/f>(deleted),
# the kernel's link (the tool's path) is "/tmp/f (deleted)".
FD = re.compile(r'(?:\(|, )(-?\d+)(?:<([^>]*)>(\(deleted\))?)?(?=[,)])')


def normalizer(patterns):
    pats = [re.compile(p) for p in [r'(?<=pipe:\[)\d+', r'(?<=socket:\[)\d+', r'(?<=anon_inode:\[)[^\]]*'] + patterns]

    def norm(path):
        for p in pats:
            path = p.sub('*', path)
        return path
    return norm


def strace_table(log, norm):
    table = collections.defaultdict(lambda: [0, 0, 0, 0, 0])  # reads, bytes, writes, bytes, errors
    for _proc, _pid, name, text, result, err in strace_window.calls(log):
        if name not in READS and name not in WRITES and name not in TRANSFERS:
            continue
        fds = FD.findall(QUOTED.sub('""', text))
        nbytes = int(result) if err is None and result.lstrip('-').isdigit() and name not in ('recvmmsg', 'sendmmsg') else 0
        sides = []
        if name in TRANSFERS:
            r, w = TRANSFERS[name]
            sides = [(fds[r], False), (fds[w], True)]
        else:
            sides = [(fds[0], name in WRITES)]
        for (fd, path, deleted), write in sides:
            path += ' ' + deleted if deleted else ''
            row = table[(int(fd), norm(path) if int(fd) >= 0 else '')]
            row[2 if write else 0] += 1
            row[3 if write else 1] += max(nbytes, 0)
            row[4] += err is not None
    return table


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--atomx', required=True)
    ap.add_argument('--normalize', action='append', default=[])
    ap.add_argument('--stdin')
    ap.add_argument('prog')
    ap.add_argument('args', nargs='*')
    o = ap.parse_args()
    norm = normalizer(o.normalize)
    prog = os.path.abspath(o.prog)
    with tempfile.TemporaryDirectory(prefix='atomx-io-') as tmp:
        for d in ('orig', 'tool', 'mark'):
            os.mkdir(os.path.join(tmp, d))
        tool, mark = os.path.join(tmp, 'prog.io'), os.path.join(tmp, 'prog.mark')
        for out, extra in ((tool, ['-T', 'io']),
                           (mark, [os.path.join(MARKER, 'marker_inst.cpp'), os.path.join(MARKER, 'marker_anal.c')])):
            r = subprocess.run([o.atomx, prog] + extra + ['-o', out], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            if r.returncode:
                sys.exit('atomx failed:\n' + r.stdout.decode(errors='replace'))

        def go(binary, d, prefix=()):
            stdin = open(o.stdin, 'rb') if o.stdin else subprocess.DEVNULL
            return subprocess.run(list(prefix) + [binary] + o.args, cwd=os.path.join(tmp, d), stdin=stdin,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
        orig, mine = go(prog, 'orig'), go(tool, 'tool')
        log = os.path.join(tmp, 'strace.log')
        go(mark, 'mark', ['strace', '-f', '-qq', '-y', '-o', log])
        failures = []
        if (mine.returncode, mine.stdout) != (orig.returncode, orig.stdout):
            failures.append('output or exit status differ from the original')
        ours = collections.defaultdict(lambda: [0, 0, 0, 0, 0])
        files = sorted(glob.glob(os.path.join(tmp, 'tool', 'io.json*')))
        if not files:
            sys.exit('no io.json written; stderr:\n' + mine.stderr.decode(errors='replace'))
        for f in files:
            data = json.load(open(f))
            if not data['intercepted']:
                sys.exit('%s: not intercepted (no Syscall User Dispatch?)' % f)
            for r in data['files']:
                row = ours[(r['fd'], norm(r['path']) if r['fd'] >= 0 else '')]
                for k, key in enumerate(('reads', 'bytesRead', 'writes', 'bytesWritten', 'errors')):
                    row[k] += r[key]
        failures += [p for f in files for p in out_check.check('io', f)]
        theirs = strace_table(log, norm)
        print('%4s %-40s %s' % ('fd', 'file', 'strace / atomx: reads, bytes read, writes, bytes written, errors'))
        for key in sorted(set(ours) | set(theirs)):
            t, m = theirs.get(key, [0] * 5), ours.get(key, [0] * 5)
            print('%4d %-40s %s / %s%s' % (key[0], key[1][-40:], t, m, '' if t == m else '  <-- differs'))
            if t != m:
                failures.append('fd %d %s: strace %s, atomx %s' % (key[0], key[1], t, m))
        if failures:
            print('FAIL:\n  ' + '\n  '.join(failures))
            return 1
        print('OK (%d output file(s))' % len(files))
        return 0


if __name__ == '__main__':
    sys.exit(main())
