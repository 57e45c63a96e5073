"""Parses `strace -f -qq -o LOG` of a program instrumented with the marker
tool (marker_inst.cpp): the system calls each process made between its
ProgramBefore and ProgramAfter markers, as the syscall and io tools must see
them.  A forked child starts inside its parent's window; a successful
execve starts a new image, outside until its own marker.  Shared by
tests/tools/syscall and tests/tools/io."""
import collections
import re

LINE = re.compile(r'^(\d+)\s+(?:<\.\.\. (\w+) resumed>|(\w+)\()(.*)$')
RESULT = re.compile(r'\)\s+=\s+(-?\d+|\?|0x[0-9a-f]+)(?:\s+(E[A-Z0-9]+))?')


def calls(log_path):
    """Returns [(process, pid, name, text, result, errno)] for every complete
    call in the windows, in log order; an interrupted call's two halves are
    joined.  `process` is the pid whose analysis tables count the call: a
    thread's or a CLONE_VM child's (vfork, posix_spawn) creator's until it
    execs, as they share memory; a forked child's own."""
    inside, group = {}, {}   # pid -> in a window; pid -> process
    pending = {}             # pid -> first half of an unfinished call
    orphans = {}             # pid -> its events, until its creator's clone returns
    out = []

    def event(pid, name, text, result, err):
        if name in ('clone', 'clone3', 'fork', 'vfork') and result.isdigit():
            child = int(result)
            shares = name == 'vfork' or 'CLONE_VM' in text
            inside[child] = inside[pid]
            group[child] = group[pid] if shares else child
            for e in orphans.pop(child, []):
                event(*e)
        if name == 'faccessat' and '/atomx-window-begin' in text:
            inside[pid] = True
        elif name == 'faccessat' and '/atomx-window-end' in text:
            inside[pid] = False
        elif name == 'execve' and result == '0':
            inside[pid], group[pid] = False, pid
        elif inside[pid]:
            out.append((group[pid], pid, name, text, result, err))

    for raw in open(log_path, errors='replace'):
        m = LINE.match(raw.rstrip('\n'))
        if not m:
            continue  # signals (--- SIGUSR1 ---), exits (+++ exited +++)
        pid = int(m.group(1))
        if not inside:
            inside[pid], group[pid] = False, pid  # the program
        if m.group(2):  # "<... name resumed> rest"
            name = m.group(2)
            text = pending.pop(pid, name + '(') + m.group(4)
        else:
            name, text = m.group(3), m.group(3) + '(' + m.group(4)
            if text.endswith('<unfinished ...>'):
                pending[pid] = text[:-len('<unfinished ...>')]
                continue
        r = RESULT.search(text)
        e = (pid, name, text, r.group(1) if r else '?', r.group(2) if r else None)
        if pid in inside:
            event(*e)
        else:  # created by a clone whose result is not in the log yet
            orphans.setdefault(pid, []).append(e)
    return out


def counts(log_path, ignore=(), first_process_only=False):
    """{name: [calls, errors]} over every process's window (or the first
    process's only: the one that started the program)."""
    table = collections.defaultdict(lambda: [0, 0])
    items = calls(log_path)
    first = items[0][0] if items else None
    for process, _pid, name, _text, _result, err in items:
        if name in ignore or (first_process_only and process != first):
            continue
        table[name][0] += 1
        table[name][1] += err is not None
    return dict(table)
