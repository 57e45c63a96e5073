#!/usr/bin/env python3
"""offline_vs_online.py --atomx ATOMX PROG [ARG...]

`atomx cachesim TRACE` (offline, over the regenerated trace) against
`atomx run -T cachesim` (online) on the same program run, same arguments,
same working directory: every procedure's and every source line's Ir and
instruction misses at every level (I1mr, ILmr) must be equal, in each configuration of a file of
instruction-only hierarchies whose first levels' sets x line <= 4096 bytes
(kept from when the offline side had no load bias: every stream's header
gives it, Consumer::loadBias), each thread's own (the
outer level shared=no: with several threads a shared level sees them in
another order offline, by design).  Prints `FAIL [CONFIG] FUNCTION: EVENT
online N, offline M` per difference and exits 1.

--data: the trace is recorded with data, and in the very same run as the
online tool's (`atomx trace --data --with` the shipped cachesim tool's
files, so that every address is the same in both), and the configurations
simulate data and outer levels of any size: every event -- Ir, Dr, Dw and
each level's misses -- must be equal per procedure and source line.
libc's modelled references are left out of both (--libc none online and
offline).

--libc (with --data): libc's model on both sides -- online, the tool's
(its arguments at run time, strings measured in memory); offline, the
trace's library calls (their arguments recorded, docs/trace.md "Library
references") -- and the libc rows compared too: the total and each
function's Dr, Dw and misses (pieces of 32 bytes on both sides: every data
line here is at least 32 bytes).  Both model the same calls (the string
lengths measured in memory online, and by the trace's recorder at the call
where the result does not give them: strcpy, strncpy, the comparisons, tail
jumps); a function modelled on one side only is named as a failure.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

CONFIG_DATA = """\
config split
I1 size=32K assoc=8 line=64
D1 size=32K assoc=8 line=64
LL size=256K assoc=8 line=64 shared=no
config small-d1
D1 size=4K assoc=2 line=32
L2 size=16K assoc=4 line=64 policy=fifo
LL size=64K assoc=8 line=64 write-allocate=no shared=no
config unified
U1 size=8K assoc=4 line=64
LL size=128K assoc=16 line=64 shared=no
"""

CONFIG = """\
config i1-4way
I1 size=4K assoc=4 line=64
config i1-direct-32
I1 size=1K assoc=1 line=32
config i1-ll
I1 size=2K assoc=2 line=64
LL size=16K assoc=8 line=64 shared=no
"""


def run(cmd, cwd, env=None, out=None, any_status=False):
    r = subprocess.run(cmd, cwd=cwd, env=env, stdout=out or subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0 and not (any_status and 0 < r.returncode < 128):
        sys.exit(f"FAIL {' '.join(cmd)}: exit status {r.returncode}\n{r.stderr[-2000:]}")
    return r


DATA = False  # --data: every event, not only instruction fetches
LIBC = False  # --libc: libc's model on both sides, its rows compared


def counts(entry):
    out = {"Ir": entry["Ir"]}
    if DATA:
        out.update(Dr=entry.get("Dr", 0), Dw=entry.get("Dw", 0))
    for level, m in entry["misses"].items():
        for kind, n in m.items():
            if DATA or kind == "ir":
                out[f"{level}:{kind}"] = n
    return out


def lines(config):
    out = {}
    for l in config["lines"]:
        c = counts(l)
        if any(c.values()):
            out[f"{l['procedure']} {l['file']}:{l['line']}"] = c
    return out


def procedures(config):
    return {p["name"]: counts(p) for p in config["procedures"]}


def libc_rows(config):
    """libc's modelled references: `(libc)` in total and `(libc) NAME` per
    function, as counts() has them (no Ir)."""
    lib = config.get("libc", {})
    out = {}
    for name, entry in [("(libc)", lib)] + [(f"(libc) {f['name']}", f) for f in lib.get("functions", [])]:
        c = counts(dict(entry, Ir=0))
        del c["Ir"]
        if any(c.values()):
            out[name] = c
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--atomx", required=True)
    ap.add_argument("--data", action="store_true")
    ap.add_argument("--libc", action="store_true")
    ap.add_argument("prog")
    ap.add_argument("args", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    atomx = os.path.realpath(a.atomx)
    global DATA, LIBC
    LIBC = a.libc
    DATA = a.data or LIBC
    tool_dir = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))),
                            "tools", "cachesim")
    with tempfile.TemporaryDirectory() as w:
        cfg = os.path.join(w, "i.cache")
        with open(cfg, "w") as f:
            f.write(CONFIG_DATA if DATA else CONFIG)
        # The program's own input files, when it reads one: the same
        # relative names in both runs (gzip's names its output after them).
        with open(os.path.join(w, "input"), "w") as f:
            x = 11
            for _ in range(300):
                line = []
                for _ in range(8):
                    x = (x * 16807) % 2147483647
                    line.append("w%x" % (x % 4096))
                f.write(" ".join(line) + "\n")
        cmd = [os.path.realpath(a.prog)] + a.args
        env = dict(os.environ, ATOMX_CACHE_CONFIG=cfg)
        if DATA:  # one run: the trace and the online tool in the same process
            tool = ["--with", os.path.join(tool_dir, "cachesim_inst.cpp"), "--with",
                    os.path.join(tool_dir, "cachesim_anal.cpp"), "--with-arg", "--libc", "--with-arg",
                    "model" if LIBC else "none"]
            with open(os.path.join(w, "traced.out"), "w") as o:
                traced = status = run([atomx, "trace", "-q", "--data", "-o", "trace"] + tool + ["--"] + cmd, w,
                                      env=env, out=o, any_status=True).returncode
        else:
            with open(os.path.join(w, "traced.out"), "w") as o:
                traced = run([atomx, "trace", "-q", "-o", "trace", "--"] + cmd, w, out=o, any_status=True).returncode
            with open(os.path.join(w, "online.out"), "w") as o:
                status = run([atomx, "run", "-T", "cachesim", "--"] + cmd, w, env=env, out=o, any_status=True).returncode
        # (Some pitfall programs exit with a status of their own: the same in both runs.)
        if status != traced:
            sys.exit(f"FAIL the program's exit status: traced {traced}, under cachesim {status}")
        run([atomx, "cachesim", "trace", "--config", cfg, "--json", "offline.json", "-q", "-o", "offline.txt"] +
            ([] if LIBC or not DATA else ["--libc", "none"]), w)
        on = json.load(open(os.path.join(w, "cachesim.json")))
        off = json.load(open(os.path.join(w, "offline.json")))
        fails = []
        names = [c["name"] for c in on["configurations"]]
        if names != [c["name"] for c in off["configurations"]]:
            fails.append(f"FAIL configurations: online {names}, offline {[c['name'] for c in off['configurations']]}")
        checked = 0
        for c_on, c_off in zip(on["configurations"], off["configurations"]):
            p_on, p_off = procedures(c_on), procedures(c_off)
            # Per source line too (the DWARF of the same program file).
            p_on.update(lines(c_on))
            p_off.update(lines(c_off))
            if LIBC:
                l_on, l_off = libc_rows(c_on), libc_rows(c_off)
                if not any(v.get("Dr") and v.get("Dw") for v in l_on.values()):
                    fails.append(f"FAIL [{c_on['name']}] online: no libc reads and writes (nothing was compared)")
                p_on.update(l_on)
                p_off.update(l_off)
            if DATA and not any(v.get("D1:dr") or v.get("U1:dr") for v in p_on.values()):
                fails.append(f"FAIL [{c_on['name']}] online: no data miss at all (nothing was compared)")
            elif not DATA and not any(v.get("I1:ir") for v in p_on.values()):
                fails.append(f"FAIL [{c_on['name']}] online: no instruction miss at all (nothing was compared)")
            for name in sorted(set(p_on) | set(p_off)):
                e_on, e_off = p_on.get(name, {}), p_off.get(name, {})
                for ev in sorted(set(e_on) | set(e_off)):
                    checked += 1
                    if e_on.get(ev, 0) != e_off.get(ev, 0):
                        level, _, kind = ev.partition(":")  # "Dr", or "D1:dr" (D1's read misses)
                        label = level if not kind else level + ("m" + kind[1] if kind[0] == "d" else "mr")
                        fails.append(f"FAIL [{c_on['name']}] {name}: {label} online {e_on.get(ev, 0)}, "
                                     f"offline {e_off.get(ev, 0)}")
        for f in fails:
            print(f)
        if fails:
            return 1
        print(f"ok: {checked} counts of {len(names)} configurations equal per procedure and source line ({os.path.basename(a.prog)})")
        return 0


if __name__ == "__main__":
    sys.exit(main())
