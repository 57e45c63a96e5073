#!/usr/bin/env python3
"""cachesim's slowdown on one program: I only, D only, both with a unified LL,
beside cachegrind --cache-sim=yes on the same workload.

    bench/cachesim.py --atomx build/bin/atomx [--prog ~/.cache/atomx-corpus/bin/gzip-gcc-O2]
        [--rounds 7] [--mb 4] [--json OUT.json] [--workload corpus/workloads/muparser.sh]

The workload: PROG -6 -c on MB megabytes of pseudo-English text (a gzip- or
bzip2-style command line).  Each configuration is rewritten once (--refs i,
d or id; the hierarchy from ATOMX_CACHE_CONFIG), then run in rounds, each
run between two native runs (N X1 N X2 N ...); its ratio is its time over
the mean of the natives around it; the table gives the median over the
rounds.  Every run's output is compared with the native one's.  With
--workload SCRIPT, a corpus workload replaces the gzip command line: SCRIPT
BINARY in a fresh empty directory, as corpus/check.sh runs it.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

CONFIGS = {
    # name: (--refs, configuration file text)
    "I1 only": ("i", "I1 size=32K assoc=8 line=64\n"),
    "D1 only": ("d", "D1 size=32K assoc=8 line=64\n"),
    "I1+D1+LL": ("id", "I1 size=32K assoc=8 line=64\nD1 size=32K assoc=8 line=64\nLL size=8M assoc=16 line=64\n"),
    "U1 (unified L1)": ("id", "U1 size=32K assoc=8 line=64\n"),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--atomx", required=True)
    ap.add_argument("--prog", default=os.path.expanduser("~/.cache/atomx-corpus/bin/gzip-gcc-O2"))
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--mb", type=int, default=4)
    ap.add_argument("--no-cachegrind", action="store_true")
    ap.add_argument("--workload", help="a corpus workload script to run instead of PROG -6 -c TEXT")
    ap.add_argument("--json", help="also write the settings, the machine's load and every round's ratio here")
    o = ap.parse_args()
    work = tempfile.mkdtemp(prefix="atomx-bench-cachesim.")
    text = os.path.join(work, "text.txt")
    # Park-Miller words: deterministic, compressible like text.
    words = ["the", "cache", "line", "of", "a", "block", "simulated", "miss", "hit", "level", "program", "and",
             "instruction", "data", "reference", "set", "way", "tag", "to", "in"]
    seed, out, size = 1, [], 0
    while size < o.mb << 20:
        line = []
        for _ in range(12):
            seed = seed * 16807 % 2147483647
            line.append(words[seed % len(words)])
        s = " ".join(line) + "\n"
        out.append(s)
        size += len(s)
    with open(text, "w") as f:
        f.write("".join(out))
    runs = {"native": ([o.prog], {})}
    for name, (refs, cfg) in CONFIGS.items():
        binary = os.path.join(work, f"prog.{refs}")
        if not os.path.exists(binary):
            subprocess.run([o.atomx, o.prog, "-T", "cachesim", "-o", binary, "-q", "--", "--refs", refs], check=True)
        path = os.path.join(work, name.split()[0] + ".cache")
        with open(path, "w") as f:
            f.write(cfg)
        runs[name] = ([binary], {"ATOMX_CACHE_CONFIG": path})
    if not o.no_cachegrind:
        runs["cachegrind --cache-sim=yes"] = (["valgrind", "-q", "--tool=cachegrind", "--cache-sim=yes",
                                               "--cachegrind-out-file=/dev/null", o.prog], {})

    def run(name):
        cmd, env = runs[name]
        if o.workload:
            if cmd[0] == "valgrind":
                sys.exit("--workload runs no cachegrind: add --no-cachegrind")
            cwd = tempfile.mkdtemp(prefix="run.", dir=work)
            cmd = ["bash", os.path.abspath(o.workload), cmd[0]]
        else:
            cwd, cmd = work, cmd + ["-6", "-c", text]
        t = time.perf_counter()
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=dict(os.environ, **env), cwd=cwd)
        if o.workload:
            subprocess.run(["rm", "-rf", cwd])
        return time.perf_counter() - t, p.stdout

    _, expected = run("native")
    ratios = {n: [] for n in runs if n != "native"}
    names = list(ratios)
    for r in range(o.rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        if r % 2:
            order.reverse()
        before, _ = run("native")
        for n in order:
            t, output = run(n)
            if output != expected:
                sys.exit(f"{n}: output differs from native")
            after, _ = run("native")
            ratios[n].append(t / ((before + after) / 2))
            before = after
    native = statistics.median(run("native")[0] for _ in range(3))
    what = f"the workload {os.path.basename(o.workload)}" if o.workload else f"-6 -c on {o.mb} MB of text"
    print(f"{os.path.basename(o.prog)} {what} (native {native:.3f} s), medians of {o.rounds} pairwise runs:")
    print("| configuration | slowdown vs native |\n|---|---|")
    for n in names:
        print(f"| {n} | {statistics.median(ratios[n]):.2f}x (range {min(ratios[n]):.2f}-{max(ratios[n]):.2f}) |")
    if o.json:
        commit = subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(o.atomx)), "rev-parse", "HEAD"],
                                capture_output=True, text=True).stdout.strip()
        with open(o.json, "w") as f:
            json.dump({"prog": os.path.basename(o.prog), "workload": o.workload, "mb": o.mb, "rounds": o.rounds, "atomx": o.atomx,
                       "atomx_commit": commit, "native_seconds": native, "nproc": os.cpu_count(),
                       "loadavg_end": os.getloadavg(),
                       "configurations": {n: {"refs": CONFIGS[n][0] if n in CONFIGS else None,
                                              "median": statistics.median(ratios[n]), "ratios": ratios[n]}
                                          for n in names}}, f, indent=1)
    subprocess.run(["rm", "-rf", work])


if __name__ == "__main__":
    main()
