#!/usr/bin/env python3
"""The syscall or io tool against strace on a corpus workload.

    workload_vs_strace.py --atomx ATOMX --tool syscall|io --workload SCRIPT
                          [--ignore NAME,...] BINARY

A workload script (corpus/workloads/NAME.sh) runs BINARY many times in one
scratch directory.  It is run three times, each in a fresh directory: with
BINARY itself; with BINARY instrumented with the tool, through a wrapper
that moves each run's TOOL.json* aside; and with BINARY instrumented with
the marker tool (marker_inst.cpp) under `strace -f`, one log per run.
Checks that the workload's stdout, stderr, exit statuses and files are the
same with the tool as without, then compares the tool's data, summed over
every run, with strace's calls between the markers (strace_window.py):
per system call (syscall) or per descriptor and file (io; the scratch
directory's path is blanked, as are pipe inodes and what --normalize
matches)."""
import argparse
import collections
import difflib
import filecmp
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, '..', 'io'))
sys.path.insert(0, os.path.join(HERE, '..'))
import io_vs_strace  # noqa: E402
import out_check  # noqa: E402
import strace_window  # noqa: E402

WRAPPER = '''#!/usr/bin/env bash
# one run of the workload: keep argv[0]'s name, and move the outputs aside
n=$(ls "{collect}" | wc -l)
mkdir "{collect}/$n"
{prefix} bash -c 'exec -a "$0" "{binary}" "$@"' "$0" "$@"
rc=$?
for f in {tool}.json {tool}.json.* {tool}.out {tool}.out.*; do [ -e "$f" ] && mv "$f" "{collect}/$n/"; done
exit $rc
'''


def run_workload(workload, binary, d, timeout):
    os.makedirs(d)
    r = subprocess.run(['bash', workload, binary], cwd=d, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=timeout)
    return r


def same_files(a, b):
    """Names of files that differ between directories a and b (recursively)."""
    diff = []
    cmp = filecmp.dircmp(a, b)
    diff += cmp.left_only + cmp.right_only + cmp.funny_files
    diff += [f for f in cmp.common_files if not filecmp.cmp(os.path.join(a, f), os.path.join(b, f), shallow=False)]
    for sub in cmp.common_dirs:
        diff += [os.path.join(sub, f) for f in same_files(os.path.join(a, sub), os.path.join(b, sub))]
    return diff


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--atomx', required=True)
    ap.add_argument('--tool', choices=('syscall', 'io'), required=True)
    ap.add_argument('--workload', required=True)
    ap.add_argument('--ignore', default='')
    ap.add_argument('--leave-out-thread-ends', action='store_true',
                    help='leave out the runs (both sides) whose process a thread other than the initial one '
                         'ended (strace shows which): what the other threads did last depends on the schedule')
    ap.add_argument('--any-descriptor', action='append', default=[], metavar='PATH',
                    help='io: compare the rows of PATH summed over descriptors (which number it gets depends on the '
                         'schedule)')
    ap.add_argument('--normalize', action='append', default=[],
                    help='io: a REGEX for the part of paths that differs between runs (a random name), blanked')
    ap.add_argument('--timeout', type=int, default=900)
    ap.add_argument('binary')
    o = ap.parse_args()
    ignore = set(filter(None, o.ignore.split(',')))
    binary = os.path.abspath(o.binary)
    name = os.path.basename(binary)
    workload = os.path.abspath(o.workload)
    with tempfile.TemporaryDirectory(prefix='atomx-%s-corpus-' % o.tool) as tmp:
        tool_bin, mark_bin = os.path.join(tmp, name + '.tool'), os.path.join(tmp, name + '.mark')
        for out, extra in ((tool_bin, ['-T', o.tool]),
                           (mark_bin, [os.path.join(HERE, 'marker_inst.cpp'), os.path.join(HERE, 'marker_anal.c')])):
            r = subprocess.run([o.atomx, binary] + extra + ['-o', out], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            if r.returncode:
                sys.exit('atomx failed:\n' + r.stdout.decode(errors='replace'))
        wrappers = {}
        for kind, b, prefix in (('tool', tool_bin, ''), ('mark', mark_bin, 'strace -f -qq %s -o "{collect}/$n/strace.log"'
                                                           % ('-y' if o.tool == 'io' else ''))):
            collect = os.path.join(tmp, 'collect-' + kind)
            os.makedirs(collect)
            os.makedirs(os.path.join(tmp, 'wrap-' + kind))
            w = os.path.join(tmp, 'wrap-' + kind, name)
            with open(w, 'w') as f:
                f.write(WRAPPER.format(collect=collect, binary=b, tool=o.tool, prefix=prefix.format(collect=collect)))
            os.chmod(w, 0o755)
            wrappers[kind] = (w, collect)
        runs = {}
        for kind, b in (('orig', binary), ('tool', wrappers['tool'][0]), ('mark', wrappers['mark'][0])):
            runs[kind] = run_workload(workload, b, os.path.join(tmp, 'run-' + kind), o.timeout)
        failures = []
        # getopt names the program by its full argv[0], the wrapper's path.
        for kind, path in (('orig', binary), ('tool', wrappers['tool'][0])):
            r = runs[kind]
            r.stdout, r.stderr = r.stdout.replace(path.encode(), name.encode()), r.stderr.replace(path.encode(), name.encode())
        o_, t_ = runs['orig'], runs['tool']
        if o_.stdout != t_.stdout:
            failures.append('workload stdout differs (exit statuses are in it)')
        if o_.stderr != t_.stderr:
            failures.append('workload stderr differs')
        for what in ('stdout', 'stderr'):
            a, b = getattr(o_, what).decode(errors='replace'), getattr(t_, what).decode(errors='replace')
            if a != b:
                diff = list(difflib.unified_diff(a.splitlines(), b.splitlines(), 'original', 'with the tool', lineterm=''))
                print('\n'.join('  ' + line for line in diff[:12]))
        d = same_files(os.path.join(tmp, 'run-orig'), os.path.join(tmp, 'run-tool'))
        if d:
            failures.append('files differ: ' + ' '.join(d[:5]))
        logs = sorted(glob.glob(os.path.join(wrappers['mark'][1], '*', 'strace.log')))
        jsons = sorted(glob.glob(os.path.join(wrappers['tool'][1], '*', o.tool + '.json*')))
        nruns = len(os.listdir(wrappers['tool'][1]))
        all_jsons, left_out = jsons, ''
        if o.leave_out_thread_ends:
            # Run N of the tool and run N under strace are the same command
            # of the workload (each wrapper numbers its runs in order).
            out = {os.path.basename(os.path.dirname(f)) for f in logs if strace_window.ended_by_a_thread(f)}
            logs = [f for f in logs if os.path.basename(os.path.dirname(f)) not in out]
            jsons = [f for f in jsons if os.path.basename(os.path.dirname(f)) not in out]
            left_out = ' (%d ended by a thread left out: %s)' % (len(out), ' '.join(sorted(out, key=int)))
        if not jsons:
            sys.exit('no %s.json written' % o.tool)
        for f in all_jsons:
            if not json.load(open(f))['intercepted']:
                sys.exit('%s: not intercepted' % f)
        failures += [p for f in all_jsons for p in out_check.check(o.tool, f)]  # each TOOL.out says what its JSON says
        if o.tool == 'syscall':
            ours, theirs = collections.defaultdict(lambda: [0, 0]), collections.defaultdict(lambda: [0, 0])
            for f in jsons:
                for s in json.load(open(f))['syscalls']:
                    ours[s['name']][0] += s['calls']
                    ours[s['name']][1] += s['errors']
            for log in logs:
                for k, v in strace_window.counts(log).items():
                    theirs[k][0] += v[0]
                    theirs[k][1] += v[1]
            keys = sorted(set(ours) | set(theirs), key=lambda k: -max(ours.get(k, [0])[0], theirs.get(k, [0])[0]))
            label = lambda k: k  # noqa: E731
        else:
            dirs = [re.escape(os.path.join(tmp, 'run-' + k)) for k in ('tool', 'mark')]
            norm = io_vs_strace.normalizer(['^(?:%s)' % '|'.join(dirs)] + o.normalize)
            ANY = -2  # the descriptor of a --any-descriptor row

            def key(fd, path):
                return (ANY if path in o.any_descriptor else fd, path)
            ours = collections.defaultdict(lambda: [0] * 5)
            for f in jsons:
                for r in json.load(open(f))['files']:
                    row = ours[key(r['fd'], norm(r['path']) if r['fd'] >= 0 else '')]
                    for k, field in enumerate(('reads', 'bytesRead', 'writes', 'bytesWritten', 'errors')):
                        row[k] += r[field]
            theirs = collections.defaultdict(lambda: [0] * 5)
            for log in logs:
                for (fd, path), v in io_vs_strace.strace_table(log, norm).items():
                    theirs[key(fd, path)] = [a + b for a, b in zip(theirs[key(fd, path)], v)]
            keys = sorted(set(ours) | set(theirs))
            label = lambda k: '%s %s' % ('*' if k[0] == ANY else k[0], k[1])  # noqa: E731
        bad = 0
        for k in keys:
            t, m = theirs.get(k), ours.get(k)
            t = t if t is not None else [0] * len(m)
            m = m if m is not None else [0] * len(t)
            if t != m and (o.tool != 'syscall' or k not in ignore):
                bad += 1
                if bad <= 15:
                    print('  %-40s strace %s, atomx %s' % (label(k)[-40:], t, m))
        if bad:
            failures.append('%d %s differ from strace' % (bad, 'system calls' if o.tool == 'syscall' else 'descriptors'))
        if o.tool == 'syscall':
            total = (sum(v[0] for v in theirs.values()), sum(v[0] for v in ours.values()))
            summary = '%d runs%s, %d system calls (strace %d), %d kinds' % (nruns, left_out, total[1], total[0], len(keys))
        else:
            rb = sum(v[1] for v in ours.values()); wb = sum(v[3] for v in ours.values())
            summary = '%d runs%s, %d descriptor/file rows, %d bytes read, %d bytes written' % (nruns, left_out, len(keys), rb, wb)
        print('%s %s: %s: %s' % ('FAIL' if failures else 'PASS', name, summary, '; '.join(failures) or 'exact'))
        return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
