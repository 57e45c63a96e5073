"""Reading callgrind output files: the one parser every Valgrind oracle uses.

    for ev in callgrind_file.read(path): ...

Valgrind's callgrind writes, with --dump-instr=yes, one cost line per
instruction address; `calls=` lines for calls (the line after is the call
site with the callee's inclusive cost); with --collect-jumps=yes, `jump=` and
`jcnd=` lines for jumps (the line after is the jumping instruction).  Names
may be compressed (`fn=(12) name`, later `fn=(12)`) or not (the default or
--compress-strings=no); positions may be relative (`+3`, `-2`, `*`) or
absolute (--compress-pos=no).  A jump's target is read only when it is
absolute: run with --compress-pos=no to use jumps.

Events (plain tuples' worth of fields, in a small class):
  Cost(ob, fn, file, addr, line, costs)       costs: {event name: count}
  Call(ob, fn, file, addr, line, cob, cfn, target, count, inclusive)
                                              inclusive: {event name: the call's inclusive cost}
  Jump(ob, fn, file, addr, line, target, taken, executed)
A recursion level's function name f'2 is reported as f.  `ob` is the object
file's path as Valgrind wrote it; addresses are the object's own (Valgrind
subtracts a shared object's load address).
"""
import collections
import os
import re

Cost = collections.namedtuple("Cost", "ob fn file addr line costs")
Call = collections.namedtuple("Call", "ob fn file addr line cob cfn target count inclusive")
Jump = collections.namedtuple("Jump", "ob fn file addr line target taken executed")

_COMPRESSED = re.compile(r"^\((\d+)\)(?: (.*))?$")
_NAMED = {"ob": "ob", "cob": "ob", "fl": "fl", "fi": "fl", "fe": "fl", "cfi": "fl", "cfl": "fl",
          "fn": "fn", "cfn": "fn"}


def _base_name(fn):
    if fn and "'" in fn and fn.rsplit("'", 1)[1].isdigit():
        return fn.rsplit("'", 1)[0]
    return fn


def read(path):
    """Yields Cost, Call and Jump events of one callgrind file, in file order."""
    names = {}  # (kind, id) -> name, for compressed names
    ob = fn = fl = fi = cob = cfn = None
    positions = ["line"]
    events = []
    last = []
    pending = None  # ("call", count, target) or ("jump", taken, executed, target): the next line is its source

    def name_of(head, rest):
        m = _COMPRESSED.match(rest)
        if not m:
            return rest
        key = (_NAMED[head], m.group(1))
        if m.group(2) is not None:
            names[key] = m.group(2)
        return names.get(key)

    def position(tokens):
        out = []
        for i, p in enumerate(tokens):
            if p == "*":
                v = last[i]
            elif p[0] in "+-":
                v = last[i] + int(p)
            else:
                v = int(p, 0)
            out.append(v)
        return out

    with open(path) as f:
        for raw in f:
            line = raw.rstrip("\n")
            if not line or line[0] == "#":
                continue
            head, eq, rest = line.partition("=")
            if eq and head in _NAMED:
                name = name_of(head, rest)
                if head == "ob":
                    ob = cob = name
                elif head == "fl":
                    fl = fi = name
                elif head in ("fi", "fe"):
                    fi = name
                elif head == "fn":
                    fn = _base_name(name)
                    fi, cob = fl, ob
                elif head == "cob":
                    cob = name
                elif head == "cfn":
                    cfn = _base_name(name)
                continue
            if eq and head == "calls":
                count, *target = rest.split()
                pending = ("call", int(count), target)
                continue
            if eq and head in ("jump", "jcnd"):
                count, *target = rest.split()
                taken, _, executed = count.partition("/")
                pending = ("jump", int(taken), int(executed or taken), target)
                continue
            if line.startswith("positions:"):
                positions = line.split()[1:]
                continue
            if line.startswith("events:"):
                events = line.split()[1:]
                continue
            if not (line[0].isdigit() or line[0] in "+-*"):
                continue
            parts = line.split()
            n = len(positions)
            if not last:
                last = [0] * n
            pos = position(parts[:n])
            last = pos
            addr = pos[positions.index("instr")] if "instr" in positions else None
            lineno = pos[positions.index("line")] if "line" in positions else None
            if pending is None:
                costs = {e: int(c) for e, c in zip(events, parts[n:])}
                yield Cost(ob, fn, fi, addr, lineno, costs)
                continue
            kind, *args = pending
            pending = None
            target = args[-1]
            absolute = all(t[0] not in "+-*" for t in target)
            tpos = [int(t, 0) for t in target] if absolute else None
            taddr = tpos[positions.index("instr")] if tpos and "instr" in positions else None
            if kind == "call":
                yield Call(ob, fn, fi, addr, lineno, cob, cfn, taddr, args[0],
                           {e: int(c) for e, c in zip(events, parts[n:])})
                cob = ob
            else:
                if not absolute:
                    raise ValueError(f"{path}: a jump target with a relative position: run callgrind with --compress-pos=no")
                yield Jump(ob, fn, fi, addr, lineno, taddr, args[0], args[1])


def costs(path, object_name, event):
    """(function, instruction address, cost of `event`) of every cost line of
    the object whose file name is object_name (a call's inclusive cost is not
    a cost line; a cost left off the end of a line is 0)."""
    for ev in read(path):
        if type(ev) is Cost and ev.ob and os.path.basename(ev.ob) == object_name:
            yield ev.fn, ev.addr, ev.costs.get(event, 0)


def executions(paths, object_name, addrs):
    """{address: executions} of the instructions at `addrs` (rep-prefixed
    string instructions) in the object named object_name, over callgrind
    files written with --dump-instr=yes --collect-jumps=yes --compress-pos=no.

    Valgrind runs a rep-prefixed instruction as a loop: each iteration ends
    with a jump back to the instruction itself, and each arrival at it is one
    Ir.  So the times it was executed (entered from the code before it) are
    its Ir less the jumps from it to itself."""
    ex = collections.Counter()
    for path in paths:
        for ev in read(path):
            if not ev.ob or os.path.basename(ev.ob) != object_name or ev.addr not in addrs:
                continue
            if type(ev) is Cost:
                ex[ev.addr] += ev.costs.get("Ir", 0)
            elif type(ev) is Jump and ev.target == ev.addr:
                ex[ev.addr] -= ev.taken
    return ex
