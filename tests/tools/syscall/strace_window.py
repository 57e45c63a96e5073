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


def calls(log_path, enders=None):
    """Returns [(process, pid, name, text, result, errno)] for every complete
    call in the windows, in log order; an interrupted call's two halves are
    joined.  `process` is the pid whose analysis tables count the call: a
    thread's or a CLONE_VM child's (vfork, posix_spawn) creator's until it
    execs, as they share memory; a forked child's own.  `enders`, a list,
    receives (pid, whether it is not its process's initial thread) for each
    window's end."""
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
            if enders is not None:
                enders.append((pid, group[pid] != pid))
            # The tools stop counting at ProgramAfter, in every thread of the
            # process (a call another thread makes or returns from later is
            # not in their tables): the window closes for all of them.
            for t in inside:
                if group[t] == group[pid]:
                    inside[t] = False
            drop_thread_start(pid)
        elif name == 'execve' and result == '0':
            inside[pid], group[pid] = False, pid
        elif inside[pid]:
            out.append((group[pid], pid, name, text, result, err))

    def drop_thread_start(pid):
        """A thread other than the initial one that ends the process (a
        worker calling exit) may never have made an inserted call: ProgramAfter
        then sets up the analysis libc in it (atomx_analysis_thread_start,
        runtime/analysis/analysis.c: gettid, getpid, and its first calloc's
        calls, e.g. getrandom and mmap) before the marker.  Those are the
        analysis namespace's calls, which the tools do not count: drop them.
        They follow the stub's own calls (runtime/stub/after.c: kcmp, then
        gettid), so the signature is kcmp, gettid, gettid, getpid."""
        if group.get(pid) == pid:
            return
        mine = [k for k, c in enumerate(out) if c[1] == pid]
        names = [out[k][2] for k in mine]
        last = max((k for k, n in enumerate(names) if n == 'kcmp'), default=None)
        if last is not None and names[last + 1:last + 4] == ['gettid', 'gettid', 'getpid']:
            for k in reversed(mine[last + 2:]):
                del out[k]

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


def ended_by_a_thread(log_path):
    """Whether a thread other than a process's initial one ended it (its
    ProgramAfter marker): the other threads then stop wherever the schedule
    has them, so what they did last differs from run to run."""
    enders = []
    calls(log_path, enders)
    return any(by_thread for _pid, by_thread in enders)


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
