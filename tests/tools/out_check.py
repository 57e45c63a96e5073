#!/usr/bin/env python3
"""A shipped tool's text summary (NAME.out) against the same run's NAME.json.

    out_check.py TOOL NAME.json[.PID]...
    out_check.py TOOL --run ATOMX PROG [ARGS...]   (PROG rewritten with -T TOOL
                                                   and run in a scratch directory)

Every tool writes NAME.out for people and NAME.json for programs, from the
same counts (include/atomx/report.hpp); the oracles check the JSON, so
what the .out prints must be what the JSON says: its totals, and each row
of its tables at the same rank as the record of the JSON it shows (rows
ranked as the tool documents it, recomputed here from the JSON where the
JSON keeps another order).  check(tool, json_path) returns the differences,
each naming the file, the row and the count; the checkers that run a tool
(vgharness.Run.out_problems, io_vs_strace.py, malloc_vs_preload.py,
syscall_vs_strace.py) add them to their failures.  Its must-fail twins
(tests/oracles, oracle.fails.out.TOOL) run a tool with ATOMX_TEST_MISCOUNT,
which makes one count of the JSON one too high and leaves the .out right."""
import collections
import json
import os
import re
import sys

NUM = r'([\d,]+)'


def _int(s):
    return int(s.replace(',', ''))


def out_path(json_path):
    """NAME.json -> NAME.out, NAME.json.PID -> NAME.out.PID."""
    d, base = os.path.split(json_path)
    return os.path.join(d, re.sub(r'\.json(?=$|\.)', '.out', base, count=1))


class _Report:
    def __init__(self, path, tool):
        self.path, self.tool, self.problems = path, tool, []

    def same(self, what, printed, recorded):
        if printed != recorded:
            self.problems.append(f'{os.path.basename(self.path)}: {what}: printed {printed}, '
                                 f'{self.tool}.json {recorded}')

    def close(self, what, printed, recorded, eps):
        if abs(printed - recorded) > eps:
            self.problems.append(f'{os.path.basename(self.path)}: {what}: printed {printed}, '
                                 f'{self.tool}.json {recorded:.6f}')

    def missing(self, what):
        self.problems.append(f'{os.path.basename(self.path)}: {what} not found')


def _section(lines, start, stop=None):
    """The lines after the first line matching `start`, up to a blank line
    (or a line matching `stop`)."""
    out, inside = [], False
    for line in lines:
        if inside:
            if not line.strip() or (stop and re.match(stop, line)):
                break
            out.append(line)
        elif re.match(start, line):
            inside = True
    return out


def _match(r, what, pattern, body, skip=None):
    """The matches of `pattern` on the lines of a table; a line that matches
    neither it nor `skip` (a line that is not a row) is a failure: a row the
    check cannot read is not a row it may pass over."""
    out = []
    for line in body:
        m = re.match(pattern, line)
        if m:
            out.append(m)
        elif not (skip and re.match(skip, line)):
            r.problems.append(f'{os.path.basename(r.path)}: {what}: cannot read the line {line!r}')
    return out


def _ranked(r, what, rows, records, fields):
    """Row k of the table against record k: `fields` [(label, row index,
    record key)]; a row beyond the records is a failure too, and so is a
    table without rows when the JSON has records."""
    if not rows and records:
        r.problems.append(f'{os.path.basename(r.path)}: no {what} row printed, {r.tool}.json has {len(records)}')
    for k, row in enumerate(rows):
        if k >= len(records):
            r.problems.append(f'{os.path.basename(r.path)}: {what} row {k + 1} ({row}) has no record in {r.tool}.json')
            continue
        for label, i, key in fields:
            r.same(f'{what} row {k + 1} {label}', row[i], key(records[k]) if callable(key) else records[k][key])


def dyninst(r, lines, j):
    text = '\n'.join(lines)
    for label, pattern, key in [('instructions executed', r'instructions executed\s+(\d+)', 'instructions'),
                                ('basic blocks executed', r'basic blocks executed\s+(\d+)', 'blocks_executed'),
                                ('counter increments', r'counter increments\s+(\d+)', 'counter_increments')]:
        m = re.search(pattern, text)
        r.same(label, int(m.group(1)), j[key]) if m else r.missing(label)
    m = re.search(r'\((\d+) of \d+ blocks ever ran\)', text)
    r.same('blocks ever ran', int(m.group(1)), len(j['blocks'])) if m else r.missing('blocks ever ran')
    for title, records in [('Procedures:', [(p['name'], p['instructions']) for p in j['procs']]),
                           ('Instruction classes:', list(j['classes'].items()))]:
        body = _section(lines[1:], re.escape(title))[1:]  # after the column heads
        rows = [(m.group(2), int(m.group(1))) for m in _match(r, title, r'^\s+(\d+)\s+[\d.]+%\s+[\d.]+%  (.*)$', body,
                                                               r'^\s+\d+\s+[\d.]+%\s+\(\d+ more\)')]
        _ranked(r, title.rstrip(':'), rows, records, [('name', 0, 0), ('instructions', 1, 1)])
        more = [re.match(r'^\s+(\d+)\s+[\d.]+%\s+\((\d+) more\)', line) for line in body]
        more = [m for m in more if m]
        if more:
            r.same(f'{title.rstrip(":")} rest', (int(more[0].group(1)), int(more[0].group(2))),
                   (sum(n for _, n in records[len(rows):]), len(records) - len(rows)))


def prof(r, lines, j):
    m = re.match(r'prof: ' + NUM + r' instructions executed in (\d+) procedures \(of \d+\), (\d+) source lines', lines[0])
    if not m:
        return r.missing('the headline')
    r.same('instructions executed', _int(m.group(1)), j['instructions'])
    r.same('procedures', int(m.group(2)), len(j['procedures']))
    r.same('source lines', int(m.group(3)), len(j['lines']))
    procs = _match(r, 'procedure table', r'^\s*' + NUM + r'\s+[\d.]+%\s+[\d.]+%  (.*)$', _section(lines[1:], r'\s+instructions\s+%\s+cum%'))
    _ranked(r, 'procedure', [(m.group(2), _int(m.group(1))) for m in procs if m], j['procedures'],
            [('name', 0, 'name'), ('instructions', 1, 'instructions')])
    if any(x.startswith('no source lines:') for x in lines):  # the JSON's lines are all in file ???
        r.same('files of the lines (none printed: no line table)', sorted({x['file'] for x in j['lines']}) or ['???'], ['???'])
        return
    rows = _match(r, 'line table', r'^\s*' + NUM + r'\s+[\d.]+%  (\S+:\d+)\s+(.*)$', _section(lines[1:], r'\s+instructions\s+%\s+line'))
    _ranked(r, 'line', [(m.group(2), m.group(3), _int(m.group(1))) for m in rows if m], j['lines'],
            [('file:line', 0, lambda x: f"{os.path.basename(x['file'])}:{x['line']}"), ('procedure', 1, 'procedure'),
             ('instructions', 2, 'instructions')])


def gprof(r, lines, j):
    m = re.match(r'gprof: ' + NUM + r' instructions in (\d+) procedures; ' + NUM + r' calls over (\d+) caller->callee arcs',
                 lines[0])
    if not m:
        return r.missing('the headline')
    r.same('instructions', _int(m.group(1)), j['instructions'])
    r.same('procedures', int(m.group(2)), len(j['procedures']))
    r.same('calls', _int(m.group(3)), j['calls'])
    r.same('arcs', int(m.group(4)), len(j['arcs']))
    flat = _match(r, 'flat profile', r'^\s*' + NUM + r'\s+[\d.]+%\s+[\d.]+%\s+([\d.]+)%\s+' + NUM + '  (.*)$',
                  _section(lines[1:], r'\s+self\s+%'))
    _ranked(r, 'flat profile', [(m.group(4), _int(m.group(1)), _int(m.group(3))) for m in flat], j['procedures'],
            [('procedure', 0, 'name'), ('self', 1, 'instructions'), ('called', 2, 'called')])
    for k, m in enumerate(flat[:len(j['procedures'])]):
        # incl%: printed to 0.1 of gprof's estimate, which the JSON rounds
        # to a whole instruction (half an instruction of the total apart)
        if j['instructions']:
            r.close(f'flat profile row {k + 1} incl%', float(m.group(2)),
                    100.0 * j['procedures'][k]['inclusive'] / j['instructions'],
                    0.0501 + 50.0 / j['instructions'])
    arcs = _match(r, 'arc table', r'^\s*' + NUM + r'  (.*) -> (.*?)(  \(tail call\))?$',
                  _section(lines[1:], r'\s+calls\s+caller -> callee'))
    _ranked(r, 'arc', [(m.group(2), m.group(3), _int(m.group(1)), 'tail' if m.group(4) else 'call') for m in arcs if m],
            j['arcs'], [('caller', 0, 'caller'), ('callee', 1, 'callee'), ('calls', 2, 'calls'), ('kind', 3, 'kind')])


def inline(r, lines, j):
    m = re.match(r'inline: ' + NUM + r' calls from (\d+) call sites executed', lines[0])
    if not m:
        return r.missing('the headline')
    r.same('calls', _int(m.group(1)), j['calls'])
    r.same('call sites executed', int(m.group(2)), len({s['pc'] for s in j['sites']}))
    rows = _match(r, 'site table', r'^\s*' + NUM + r'\s+[\d.]+%  0x([0-9a-f]+)\s+(.*?)\s*$', _section(lines[1:], r'\s+calls\s+%\s+site'))
    rows = [(int(m.group(2), 16), _int(m.group(1)), m.group(3)) for m in rows if m]
    _ranked(r, 'site', rows, j['sites'], [('pc', 0, lambda s: int(s['pc'], 16)), ('calls', 1, 'count')])
    for k, (_, _, rest) in enumerate(rows[:len(j['sites'])]):
        s = j['sites'][k]
        if not rest.startswith(s['caller'][:22]) or not rest.endswith(s['line']):
            r.problems.append(f'{os.path.basename(r.path)}: site row {k + 1}: printed "{rest}", {r.tool}.json caller '
                              f'{s["caller"]!r} line {s["line"]!r}')


def io(r, lines, j):
    m = re.match(r'io: reads and writes of .* \(process (\d+)\)$', lines[0])
    r.same('process', int(m.group(1)), j['pid']) if m else r.missing('the headline')
    text = '\n'.join(lines)
    for label, pattern, keys in [('read', r'\n  read:\s+(\d+) calls\s+(\d+) bytes', ('reads', 'bytesRead')),
                                 ('written', r'\n  written:\s+(\d+) calls\s+(\d+) bytes', ('writes', 'bytesWritten'))]:
        m = re.search(pattern, text)
        r.same(label, (int(m.group(1)), int(m.group(2))), (j[keys[0]], j[keys[1]])) if m else r.missing(label)
    m = re.search(r'\n  ([\d.]+) s inside calls, (\d+) errors, (\d+) descriptor/file pairs', text)
    if not m:
        return r.missing('the seconds line')
    r.close('seconds inside calls', float(m.group(1)), j['seconds'], 6e-7)
    r.same('errors', int(m.group(2)), j['errors'])
    r.same('descriptor/file pairs', int(m.group(3)), len(j['files']))
    rows = _match(r, 'file table', r'^\s*(-?\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+([\d.]+)\s+(\d+)  (.*)$',
                  _section(lines[1:], r'\s+fd\s+reads'), r'  \.\.\. \d+ more in io\.json')
    rows = [tuple(int(g) for g in m.groups()[:5]) + (float(m.group(6)), int(m.group(7)), m.group(8)) for m in rows if m]
    _ranked(r, 'file', rows, j['files'],
            [('fd', 0, 'fd'), ('reads', 1, 'reads'), ('bytes read', 2, 'bytesRead'), ('writes', 3, 'writes'),
             ('bytes written', 4, 'bytesWritten'), ('errors', 6, 'errors'), ('file', 7, lambda f: f['path'] or '?')])
    for k, row in enumerate(rows[:len(j['files'])]):
        r.close(f'file row {k + 1} seconds', row[5], j['files'][k]['seconds'], 6e-7)
    m = re.search(r'\n  \.\.\. (\d+) more in io\.json', text)
    r.same('files not shown', int(m.group(1)) if m else 0, len(j['files']) - len(rows))


def malloc(r, lines, j):
    text = '\n'.join(lines)
    m = re.search(r'\n(\d+) allocations, (\d+) bytes requested, (\d+) frees, (\d+) call sites instrumented; '
                  r'(\d+) calls through pointers at (\d+) return addresses', text)
    if not m:
        return r.missing('the totals line')
    pointers = j['pointer_calls']
    r.same('allocations, bytes requested, frees, call sites, calls through pointers, their return addresses',
           tuple(map(int, m.groups())), (j['allocations'], j['bytes_requested'], j['frees'], len(j['sites']),
                                         sum(p['calls'] for p in pointers), len(pointers)))
    if j['live_tracking'] and not j['not_taken_over']:
        m = re.search(r"\nnot freed by the program's own calls at exit (\d+) bytes in (\d+) blocks, peak (\d+) bytes "
                      r"\((\d+) frees", text)
        r.same('left at exit, blocks, peak, untracked frees', tuple(map(int, m.groups())) if m else None,
               (j['live_bytes_at_exit'], j['live_blocks_at_exit'], j['peak_live_bytes'], j['untracked_frees']))
    elif j['live_tracking']:
        m = re.search(r'\nlive bytes not known: the program defines (.*) itself', text)
        r.same('functions not taken over', m.group(1) if m else None, ', '.join(j['not_taken_over']))
    calls = re.search(r'\ncalls:(.*?)\nsize class', text, re.S)
    printed = re.findall(r'(\S+) (\d+)', calls.group(1)) if calls else []
    r.same('calls per function', [(n, int(c)) for n, c in printed], [(f['name'], f['calls']) for f in j['functions']])
    classes = _match(r, 'size class table', r'^  (\S+)\s+(\d+)\s+(\d+)$', _section(lines, r'size class\s+allocations', r'top sizes:'),
                     r'  \.\.\. \(larger classes in malloc\.json\)')
    # Every class from the smallest to the largest used is printed, empty
    # ones too; the JSON lists the used ones: by the class's bounds.
    recorded = {(str(c['min']) if c['min'] == c['max'] or c['min'] == 0 else f"{c['min']}-{c['max']}"):
                (c['allocations'], c['bytes']) for c in j['size_classes']}
    for m in classes:
        r.same(f'size class {m.group(1)} allocations, bytes', (int(m.group(2)), int(m.group(3))),
               recorded.pop(m.group(1), (0, 0)))
    if len(classes) < 16:
        for label, v in recorded.items():
            r.problems.append(f'{os.path.basename(r.path)}: size class {label} not printed, {r.tool}.json {v}')
    m = re.search(r'\ntop sizes:(.*)', text)
    common = sorted(j['sizes'], key=lambda s: -s['allocations'])  # stable: by size among equals
    shown = re.findall(r'(\d+)x(\d+)', m.group(1)) if m else []
    _ranked(r, 'top size', [(int(a), int(b)) for a, b in shown], common, [('size', 0, 'size'), ('allocations', 1, 'allocations')])
    # The instrumented sites, then the return addresses of calls through
    # pointers, in the JSON's order; ranked by calls (stable).
    sites = sorted((s for s in j['sites'] + [dict(p, pc=p['return_address']) for p in pointers] if s['calls']),
                   key=lambda s: -s['calls'])
    rows = _match(r, 'call site table', r'^  0x([0-9a-f]+)\s+(\d+)\s+(\d+)  (\S+)', _section(lines, r'top call sites', r'Not seen:'))
    _ranked(r, 'call site', [(int(m.group(1), 16), int(m.group(2)), int(m.group(3)), m.group(4)) for m in rows if m], sites,
            [('pc', 0, lambda s: int(s['pc'], 16)), ('calls', 1, 'calls'), ('bytes', 2, 'bytes'), ('function', 3, 'function')])


def pipe(r, lines, j):
    m = re.match(r'pipe: .*\(latencies: load (\d+), mul (\d+), div (\d+), fp (\d+), fp div (\d+)\)', lines[0])
    names = ('load', 'mul', 'div', 'fp', 'fpdiv')
    r.same('latencies', tuple(map(int, m.groups())) if m else None, tuple(j['model'][k] for k in names))
    m = re.match(r'instructions (\d+)  cycles (\d+)  stall cycles (\d+) \([\d.]+%\)  CPI ([\d.]+)', lines[1])
    if not m:
        return r.missing('the totals line')
    r.same('instructions, cycles, stall cycles', tuple(map(int, m.groups()[:3])), (j['instructions'], j['cycles'], j['stalls']))
    r.close('CPI', float(m.group(4)), j['cpi'], 0.0006)
    procs = sorted((p for p in j['procedures'] if p['stalls']), key=lambda p: -p['stalls'])
    rows = _match(r, 'procedure table', r'^  (.*?)\s+(\d+)\s+(\d+)\s+([\d.]+)$', _section(lines, r'top procedures by stall', r'top blocks'))
    _ranked(r, 'procedure', [(int(m.group(2)), int(m.group(3))) for m in rows if m], procs,
            [('instructions', 0, 'instructions'), ('stalls', 1, 'stalls')])
    blocks = sorted((b for b in j['blocks'] if b['stalls'] * b['count']), key=lambda b: -b['stalls'] * b['count'])
    body = _section(lines, r'top blocks by stall')[1:]
    rows = _match(r, 'block table', r'^  (0x[0-9a-f]+) +(.{14}) +(\d+) +(\d+)/(\d+) +(\d+)  (\d+) at (0x[0-9a-f]+|0)\b', body)
    _ranked(r, 'block', [(int(m.group(1), 16), int(m.group(3)), int(m.group(4)), int(m.group(5)), int(m.group(6)),
                          int(m.group(7)), int(m.group(8), 16)) for m in rows if m], blocks,
            [('pc', 0, lambda b: int(b['pc'], 16)), ('executions', 1, 'count'), ('stalls', 2, 'stalls'),
             ('instructions', 3, 'instructions'), ('stall cycles', 4, lambda b: b['stalls'] * b['count']),
             ('longest', 5, lambda b: b.get('worst_stall', 0)), ('longest at', 6, lambda b: int(b.get('worst_pc', '0'), 16))])


def cachesim(r, lines, j):
    m = re.match(r'cachesim: (\d+) configurations? from .* \((\d+) threads?,', lines[0])
    r.same('configurations, threads', tuple(map(int, m.groups())) if m else None, (len(j['configurations']), j['threads']))
    starts = [k for k, x in enumerate(lines) if x.startswith('configuration ')]
    for c, conf in enumerate(j['configurations']):
        if c >= len(starts):
            r.missing(f"configuration '{conf['name']}'")
            continue
        body = lines[starts[c]:starts[c + 1] if c + 1 < len(starts) else len(lines)]
        what = f"configuration '{conf['name']}'"
        r.same(f'{what} name', body[0], f"configuration '{conf['name']}':")
        levels = [lv['name'] for lv in conf['levels']]
        if 'context_switch' in conf:
            m = re.search(r'context switch every \d+ \S+: (\d+) switches', '\n'.join(body))
            r.same(f'{what} switches', int(m.group(1)) if m else None, conf['context_switch']['switches'])
        t = conf['total']
        for label, refs, kind in [('instructions', 'Ir', 'ir'), ('data reads', 'Dr', 'dr'), ('data writes', 'Dw', 'dw')]:
            rows = [re.match(r'^  ' + label + r'\s+(\d+)((?:\s+(?:-|\d+\s+[\d.]+%))*)\s*$', x) for x in body]
            rows = [m for m in rows if m]
            want = [t['misses'][lv].get(kind) for lv in levels]
            if not rows:
                if any(v is not None for v in want):
                    r.missing(f'{what} {label} row')
                continue
            got = [None if a == '-' else int(b) for a, b in re.findall(r'\s(-)(?=\s|$)|\s(\d+)\s+[\d.]+%', rows[0].group(2))]
            r.same(f'{what} {label} references', int(rows[0].group(1)), t[refs])
            r.same(f'{what} {label} misses per level {levels}', got, want)

        def first(p):
            ms = p['misses']
            i = next((ms[lv]['ir'] for lv in levels if 'ir' in ms[lv]), 0)
            d = next((ms[lv]['dr'] + ms[lv]['dw'] for lv in levels if 'dr' in ms[lv]), 0)
            return i + d
        procs = sorted((p for p in conf['procedures'] if first(p)), key=lambda p: -first(p))
        rows = _match(r, 'procedure table', r'^\s+(\d+) misses  \((.*?)\)  (.*)$', _section(body, r'  top procedures by first-level'))
        parsed = []
        for m in (m for m in rows if m):
            ev = {n: int(v) for n, v in re.findall(r'(\w+) (\d+)', m.group(2))}
            parsed.append((m.group(3), int(m.group(1)), ev.get('Ir', 0), ev.get('Dr', 0), ev.get('Dw', 0),
                           sum(v for n, v in ev.items() if n not in ('Ir', 'Dr', 'Dw'))))
        # Ranked by first-level misses with an unstable sort: the misses
        # rank by rank, and each row against the JSON's procedure of its name.
        r.same(f'{what} top procedures\' first-level misses', [row[1] for row in parsed],
               [first(p) for p in procs[:len(parsed)]])
        if not parsed and procs:
            r.problems.append(f'{os.path.basename(r.path)}: no {what} procedure row printed, {r.tool}.json has {len(procs)}')
        # Two procedures may have one name (local symbols of two translation
        # units: lzip has two `..._M_construct...isra.0`): a row is checked
        # against the JSON's procedure of its name whose counts it prints,
        # else the first of them not yet shown, and each is shown once.
        checks = [('first-level misses', 1, first), ('Ir', 2, lambda p: p['Ir']), ('Dr', 3, lambda p: p['Dr']),
                  ('Dw', 4, lambda p: p['Dw']),
                  ('misses at all levels', 5, lambda p: sum(sum(v.values()) for v in p['misses'].values()))]
        by_name = collections.defaultdict(list)
        for p in procs:
            by_name[p['name']].append(p)
        for row in parsed:
            same_name = by_name.get(row[0])
            if not same_name:
                r.problems.append(f'{os.path.basename(r.path)}: {what} procedure {row[0]}: printed, not in {r.tool}.json '
                                  'with first-level misses' + (' (or printed twice)' if row[0] in by_name else ''))
                continue
            p = next((q for q in same_name if all(row[i] == key(q) for _, i, key in checks)), same_name[0])
            same_name.remove(p)
            for label, i, key in checks:
                r.same(f'{what} procedure {row[0]} {label}', row[i], key(p))


def syscall(r, lines, j):
    m = re.match(r'syscall: system calls of .* \(process (\d+)\)$', lines[0])
    r.same('process', int(m.group(1)), j['pid']) if m else r.missing('the headline')
    text = '\n'.join(lines)
    m = re.search(r'\n  (\d+) calls, (\d+) errors, ([\d.]+) s inside calls \(summed over the threads\), (\d+) threads?', text)
    if not m:
        return r.missing('the totals line')
    r.same('calls, errors, threads', (int(m.group(1)), int(m.group(2)), int(m.group(4))), (j['calls'], j['errors'], j['threads']))
    r.close('seconds inside calls', float(m.group(3)), j['seconds'], 6e-7)
    # The table, as strace -c: by seconds, most first (the tool's order,
    # a stable sort of the JSON's by its exact seconds), then the total.
    body = [x for x in _section(lines, r'------ ') if not x.startswith('------') and not x.endswith(' total')]
    rows = _match(r, 'syscall table', r'^\s*[\d.]+\s+([\d.]+)\s+\d+\s+(\d+)\s+(\d*)\s+(\S+)$', body,
                  r'  \.\.\. \d+ more in syscall\.json')
    want = sorted((c for c in j['syscalls'] if c['calls']), key=lambda c: -c['seconds'])
    by_name = {c['name']: c for c in want}
    for m in rows:
        c = by_name.get(m.group(4))
        r.same(f"syscall {m.group(4)} calls, errors", (int(m.group(2)), int(m.group(3) or 0)),
               (c['calls'], c['errors']) if c else None)
        if c:
            r.close(f'syscall {m.group(4)} seconds', float(m.group(1)), c['seconds'], 6e-7)
    seconds = [float(m.group(1)) for m in rows]
    r.same('the table sorted by seconds, most first', seconds, sorted(seconds, reverse=True))
    m = re.search(r'\n100\.00\s+([\d.]+)\s+\d+\s+(\d+)\s+(\d+) total', text)
    r.same('total row calls, errors', (int(m.group(2)), int(m.group(3))) if m else None, (j['calls'], j['errors']))
    m = re.search(r'\n  \.\.\. (\d+) more in syscall\.json', text)
    r.same('syscalls not shown', int(m.group(1)) if m else 0, len(want) - len(rows))
    errs = collections.Counter({f"{c['name']} {e}": n for c in j['syscalls'] for e, n in c['errno'].items()})
    printed = {x.split(None, 1)[1]: int(x.split()[0]) for x in _section(lines, r'errors:$')}
    for k, n in printed.items():
        r.same(f'errors {k}', n, errs.get(k))
    if len(printed) < 8:
        r.same('error kinds printed', sorted(printed), sorted(errs))


CHECKS = {'dyninst': dyninst, 'prof': prof, 'gprof': gprof, 'inline': inline, 'io': io, 'malloc': malloc,
          'pipe': pipe, 'cachesim': cachesim, 'syscall': syscall}


def check(tool, json_path):
    """The differences between TOOL's .out beside json_path and the JSON."""
    path = out_path(json_path)
    r = _Report(path, tool)
    if not os.path.exists(path):
        return [f'{os.path.basename(path)}: not written beside {os.path.basename(json_path)}']
    with open(path) as f:
        lines = f.read().splitlines()
    with open(json_path) as f:
        data = json.load(f)
    if not lines:
        return [f'{os.path.basename(path)}: empty']
    CHECKS[tool](r, lines, data)
    return r.problems


def run(tool, atomx, prog, args):
    """PROG ARGS rewritten with -T TOOL and run in a scratch directory: the
    differences of every TOOL.json* it wrote."""
    import glob
    import subprocess
    import tempfile
    with tempfile.TemporaryDirectory(prefix=f'atomx-out-{tool}.') as d:
        atom = os.path.join(d, 'prog.atom')
        subprocess.run([atomx, os.path.abspath(prog), '-T', tool, '-q', '-o', atom], check=True)
        p = subprocess.run([atom] + args, cwd=d, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL, timeout=300)
        files = sorted(glob.glob(os.path.join(d, f'{tool}.json*')))
        print(f'{prog}: exit status {p.returncode}, {len(files)} {tool}.json file(s)')
        return [p for f in files for p in check(tool, f)] if files else [f'no {tool}.json written']


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in CHECKS:
        sys.exit(__doc__)
    if sys.argv[2] == '--run':
        problems = run(sys.argv[1], sys.argv[3], sys.argv[4], sys.argv[5:])
    else:
        problems = [p for path in sys.argv[2:] for p in check(sys.argv[1], path)]
    for p in problems:
        print('  ', p)
    print('FAIL' if problems else 'OK')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
