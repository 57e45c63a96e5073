#!/usr/bin/env python3
"""melt_oracle.py --atomx ATOMX TRACE [options]
   melt_oracle.py --atomx ATOMX [options] -- PROG ARGS...   (traces PROG ARGS
                                              into a temporary TRACE first)

Checks `atomx melt TRACE --json -` against counts made here, independently,
from `atomx regen TRACE`'s text (`TID PC` per instruction, `TID call NAME`
per outside call, `TID signal ...` per signal; a thread's end, an outside
call and a signal cut the sequence):

  always     every exact sequence's occurrences re-counted: the
             non-overlapping ones, left to right (str.count), in each
             thread; coverage = length x occurrences; and the seed's method
             redone here: coverage, the knee, melting, the distinct chunks,
             their periods, the sequences (the whole top-K list and chunk
             list must be equal)
  --brute    the exact method redone by brute force over `atomx regen
             --blocks` (every window of whole blocks up to --max-length
             instructions, counted greedily, ranked, skipped by the rules of
             src/melt/Melt.h): the whole top-K list must be equal
  --planted PROC=OCC   (repeatable) both methods report a sequence inside
             PROC (its `nm -S` range) occurring exactly OCC times, made of
             exactly the instructions of PROC executed at least OCC times,
             as long as their executions allow (sum // OCC)
  --planted-by exact   only that method must (the seed's counts leave out a
             loop's runs that make no cyclic chunk: dijkstra's one-step walks)
  --merged PROC,PROC2=OCC  with --identity text, both methods report a
             sequence occurring exactly OCC times whose pcs lie in PROC (the
             first executed) and as long as PROC's planted sequence: PROC2's
             copy of the same code is counted with it
  --threads-same N   atomx melt --threads N gives the same JSON
  --melt-arg ARG     (repeatable) one more argument for atomx melt
Options passed to atomx melt: --threshold N, --top K, --max-length L.
"""
import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile

SEP = "\0"


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def regen(atomx, trace, blocks=False):
    args = [atomx, "regen", trace] + (["--blocks"] if blocks else [])
    out = subprocess.run(args, check=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout
    return out.splitlines()


def period(s):
    fail_ = [0] * (len(s) + 1)
    k = 0
    for i in range(1, len(s)):
        while k and s[i] != s[k]:
            k = fail_[k]
        if s[i] == s[k]:
            k += 1
        fail_[i + 1] = k
    return len(s) - fail_[len(s)]


def knee(sorted_counts):
    total = sum(sorted_counts)
    m = len(sorted_counts)
    best, rank, cum = -1.0, 1, 0
    for i, c in enumerate(sorted_counts):
        cum += c
        d = cum / total - (i + 1) / m
        if d > best:
            best, rank = d, i + 1
    return rank


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--atomx", required=True)
    ap.add_argument("trace", nargs="?")
    ap.add_argument("--merged", action="append", default=[])
    ap.add_argument("--planted-by", default="seed,exact")
    ap.add_argument("--threads-same", action="append", default=[])
    ap.add_argument("--melt-arg", action="append", default=[])
    ap.add_argument("--brute", action="store_true")
    ap.add_argument("--planted", action="append", default=[])
    ap.add_argument("--threshold")
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--max-length", type=int, default=64)
    argv = sys.argv[1:]
    program = []
    if "--" in argv:
        program = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    a = ap.parse_args(argv)
    if program:
        tmp = tempfile.TemporaryDirectory()
        a.trace = os.path.join(tmp.name, "trace")
        subprocess.run([a.atomx, "trace", "-q", "-o", a.trace, "--"] + program, check=True, stdout=subprocess.DEVNULL)
    if not a.trace:
        ap.error("a trace directory, or -- PROG ARGS")

    # The instruction stream: ids by first appearance, one character each.
    ids, pcs_of, parts, thread = {}, [], [], None
    for line in regen(a.atomx, a.trace):
        tid, what = line.split(" ", 1)
        if tid != thread:
            parts.append(SEP)
            thread = tid
        if what.startswith(("call ", "signal ", "sigreturn ")):  # an outside call or a signal cuts
            parts.append(SEP)
            continue
        pc = int(what, 16)
        i = ids.get(pc)
        if i is None:
            i = ids[pc] = len(pcs_of)
            pcs_of.append(pc)
        parts.append(chr(i + 1))
    text = "".join(parts) + SEP
    counts = collections.Counter(text)
    del counts[SEP]
    executed = sum(counts.values())

    cmd = [a.atomx, "melt", a.trace, "--json", "-", "--top", str(a.top), "--max-length", str(a.max_length)] + a.melt_arg
    if a.threshold:
        cmd += ["--threshold", a.threshold]
    j = json.loads(subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout)
    if j["executed"] != executed:
        fail(f"executed {j['executed']}, regen has {executed}")
    enc = lambda pcs: "".join(chr(ids[int(p, 16)] + 1) for p in pcs)

    # Exact: each sequence's non-overlapping occurrences, left to right.
    for n, s in enumerate(j["exact"]["sequences"], 1):
        occ = text.count(enc(s["pcs"]))
        if occ != s["occurrences"] or s["length"] != len(s["pcs"]) or s["coverage"] != occ * len(s["pcs"]):
            fail(f"exact #{n}: atomx says {s['occurrences']} x {s['length']} = {s['coverage']}, regen has {occ} x {len(s['pcs'])}")
    print(f"exact: {len(j['exact']['sequences'])} sequences re-counted from regen's {executed} instructions")

    # The seed's method, redone.
    sd = j["seed"]
    by_count = sorted(counts.values(), reverse=True)
    if a.threshold:
        threshold = int(a.threshold)
    else:
        threshold = by_count[knee(by_count) - 1]
    if sd["threshold"] != threshold:
        fail(f"threshold {sd['threshold']}, here {threshold}")
    low = {c: SEP for c in counts if counts[c] < threshold}
    chunks = [c for c in text.translate(str.maketrans(low)).split(SEP) if c]
    distinct = collections.Counter(chunks)
    first = {}
    for n, c in enumerate(chunks):
        first.setdefault(c, n)
    got = (sd["chunks"], sd["distinct_chunks"], sd["kept"], sd["smallest_chunk"], sd["largest_chunk"])
    want = (len(chunks), len(distinct), sum(map(len, chunks)), min(map(len, chunks), default=0),
            max(map(len, chunks), default=0))
    if got != want:
        fail(f"seed chunks (count, distinct, kept, smallest, largest) {got}, here {want}")
    found = {}
    for c, k in distinct.items():
        p = period(c)
        key, occ, cyc = (c[:p], k * (len(c) // p), True) if 2 * p <= len(c) else (c, k, False)
        f = found.setdefault(key, [0, 0, False, first[c]])
        f[0] += occ
        f[1] += 1
        f[2] = f[2] or cyc
        f[3] = min(f[3], first[c])
    # Ties: shorter first, then the one seen first.
    seqs = sorted(found.items(), key=lambda kv: (-kv[1][0] * len(kv[0]), len(kv[0]), kv[1][3]))[:a.top]
    dec = lambda s: [format(pcs_of[ord(ch) - 1], "x") for ch in s]
    want = [(dec(s), f[0], f[2], f[1]) for s, f in seqs]
    got = [(s["pcs"], s["occurrences"], s["cyclic"], s["chunks"]) for s in sd["sequences"]]
    if got != want:
        fail(f"seed sequences differ:\n atomx {got}\n here  {want}")
    top_chunks = sorted(distinct.items(), key=lambda kv: (-kv[1] * len(kv[0]), len(kv[0]), first[kv[0]]))[:len(sd["top_chunks"])]
    if [(c["pcs"], c["count"], c["period"]) for c in sd["top_chunks"]] != [(dec(c), k, period(c)) for c, k in top_chunks]:
        fail("seed's top chunks differ")
    # The seed's parse of each top chunk (its Table 2), by brute force: per
    # distinct instruction in order of first position j, its COUNT and the
    # distinct distances between its consecutive occurrences.
    rows_checked = 0
    for k, (c, _) in enumerate(top_chunks):
        want, pos = [], {}
        for n, ch in enumerate(c):
            if ch not in pos:
                want.append({"j": n + 1, "count": 0, "pc": dec(ch)[0], "intervals": []})
                pos[ch] = (len(want) - 1, None)
            row, last = pos[ch]
            want[row]["count"] += 1
            if last is not None and n - last not in want[row]["intervals"]:
                want[row]["intervals"].append(n - last)
            pos[ch] = (row, n)
        got = sd["top_chunks"][k].get("intervals")
        if got != want:
            fail(f"chunk {k + 1}'s interval table differs:\n atomx {got}\n here  {want}")
        rows_checked += len(want)
    # Each sequence's static share: its distinct addresses per procedure,
    # against the procedure's instructions as objdump shows them within the
    # symbol's bounds (nm -S).
    insns = [int(m.group(1), 16) for m in re.finditer(r"^\s+([0-9a-f]+):\t", subprocess.run(
        ["objdump", "-d", "--no-show-raw-insn", j["program"]], check=True, stdout=subprocess.PIPE, text=True).stdout, re.M)]
    shares = 0
    for method in ("seed", "exact"):
        for n, q in enumerate(j[method]["sequences"], 1):
            st = q["static"]
            pcs = {int(x, 16) for x in q["pcs"]}
            if st["instructions"] != len(pcs):
                fail(f"{method} #{n}: static instructions {st['instructions']}, its distinct addresses {len(pcs)}")
            for pr in st["procedures"]:
                lo, hi = symbol_range(j["program"], pr["name"])
                size = sum(lo <= x < hi for x in insns)
                mine = sum(lo <= x < hi for x in pcs)
                if (pr["of"], pr["instructions"]) != (size, mine):
                    fail(f"{method} #{n}: static share in {pr['name']}: atomx {pr['instructions']} of {pr['of']}, "
                         f"objdump {mine} of {size}")
                shares += 1
    print(f"seed: threshold {threshold}, {len(chunks)} chunks, {len(distinct)} distinct, {len(found)} sequences: equal; "
          f"{rows_checked} interval-table rows and {shares} static shares equal")

    if a.brute:
        brute(a, j, regen(a.atomx, a.trace, blocks=True), text, pcs_of)
    for threads in a.threads_same:
        other = json.loads(subprocess.run(cmd + ["--threads", threads], check=True, stdout=subprocess.PIPE,
                                          text=True).stdout)
        if other != j:
            fail(f"--threads {threads} gives another report than the default")
        print(f"--threads {threads}: the same report")
    lengths = {}
    for spec in a.planted:
        lengths[spec.split("=")[0]] = planted(a, j, spec, counts, ids)
    for spec in a.merged:
        merged(a, spec, lengths)
    print("ok")


def brute(a, j, lines, text, pcs_of):
    # Blocks by (start, count): each takes the next COUNT instructions.
    stream = iter(ch for ch in text if ch != SEP)
    seq, bid, blocks, thread = [], {}, [], None
    for line in lines:
        tid, rest = line.split(" ", 1)
        if tid != thread:
            seq.append(None)
            thread = tid
        if rest.startswith(("call ", "signal ", "sigreturn ")):
            seq.append(None)
            continue
        start, count = rest.split(" ")[:2]
        if int(count) == 0:  # a block whose first instruction faulted
            continue
        insns = "".join(next(stream) for _ in range(int(count)))
        key = (start, int(count))
        if key not in bid:
            bid[key] = len(blocks)
            blocks.append(insns)
        seq.append(bid[key])
    seq.append(None)
    L = a.max_length
    nodes = {}  # block tuple -> [occurrences, lastEnd, created]
    pos = 0
    segment = []
    positions = []
    for b in seq:
        if b is not None:
            segment.append(b)
            continue
        for s in range(len(segment)):
            length, key = 0, ()
            for q in range(s, len(segment)):
                length += len(blocks[segment[q]])
                if length > L:
                    break
                key += (segment[q],)
                n = nodes.get(key)
                if n is None:
                    n = nodes[key] = [0, 0, len(nodes)]
                if pos + s >= n[1]:
                    n[0] += 1
                    n[1] = pos + s + len(key)
        pos += len(segment)
        segment = []
    if j["exact"]["candidates"] != len(nodes):
        fail(f"exact candidates {j['exact']['candidates']}, brute force {len(nodes)}")
    ilen = lambda k: sum(len(blocks[b]) for b in k)
    cands = sorted((k for k, n in nodes.items() if n[0] >= 2), key=lambda k: (-nodes[k][0] * ilen(k), ilen(k), nodes[k][2]))
    out = []
    for k in cands:
        if len(out) >= a.top:
            break
        p = period(k)
        if p < len(k) and len(k) % p == 0:
            continue
        explained = False
        for r, rocc in out:
            m = sum(all(k[t] == r[(i + t) % len(r)] for t in range(len(k))) for i in range(len(r)))
            if m and nodes[k][0] <= 2 * m * rocc:
                explained = True
                break
        if not explained:
            out.append((k, nodes[k][0]))
    want = [([format(pcs_of[ord(ch) - 1], "x") for b in k for ch in blocks[b]], occ) for k, occ in out]
    got = [(s["pcs"], s["occurrences"]) for s in j["exact"]["sequences"]]
    if got != want:
        k = next((i for i, (x, y) in enumerate(zip(got, want)) if x != y), min(len(got), len(want)))
        show = lambda s: f"{s[1]} x {len(s[0])} instructions from {s[0][0]}" if s else "nothing"  # noqa: E731
        fail(f"exact top {a.top} differs from the brute force at rank {k + 1}: atomx "
             f"{show(got[k] if k < len(got) else None)}, brute force {show(want[k] if k < len(want) else None)}"
             f" ({len(got)} and {len(want)} sequences)\n atomx {got}\n brute {want}")
    print(f"brute force: {len(nodes)} candidates, the top {len(out)} equal")


def symbol_range(program, proc):
    for line in subprocess.run(["nm", "-S", program], check=True, stdout=subprocess.PIPE, text=True).stdout.splitlines():
        f = line.split()
        if len(f) == 4 and f[3] == proc:
            return int(f[0], 16), int(f[0], 16) + int(f[1], 16)
    fail(f"{proc}: not in nm -S {program}")


def merged(a, spec, lengths):
    procs, occ = spec.split("=")
    first = procs.split(",")[0]
    if first not in lengths:
        fail(f"--merged {spec}: give --planted {first}=N too (its sequence's length)")
    cmd = [a.atomx, "melt", a.trace, "--identity", "text", "--json", "-", "--top", str(a.top)]
    if a.threshold:
        cmd += ["--threshold", a.threshold]
    j = json.loads(subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout)
    lo, hi = symbol_range(j["program"], first)
    for method in ("seed", "exact"):
        if not any(s["occurrences"] == int(occ) and s["length"] == lengths[first] and
                   all(lo <= int(p, 16) < hi for p in s["pcs"]) for s in j[method]["sequences"]):
            fail(f"{method}, by text: no sequence of {lengths[first]} instructions in {first} occurring {occ} times "
                 f"(got {[(s['procedures'], s['occurrences'], s['length']) for s in j[method]['sequences']]})")
    print(f"by text: {procs} merged, {lengths[first]} instructions x {occ} found by both methods")


def planted(a, j, spec, counts, ids):
    proc, occ = spec.split("=")
    occ = int(occ)
    lo, hi = symbol_range(j["program"], proc)
    execs = {pc: counts[chr(i + 1)] for pc, i in ids.items() if lo <= pc < hi}
    want = {pc for pc, c in execs.items() if c >= occ}
    length = sum(execs[pc] for pc in want) // occ
    for method in a.planted_by.split(","):
        hits = [s for s in j[method]["sequences"]
                if s["occurrences"] == occ and {int(p, 16) for p in s["pcs"]} == want and s["length"] == length]
        if not hits:
            fail(f"{method}: no sequence of {length} instructions in {proc} occurring {occ} times "
                 f"(got {[(s['procedures'], s['occurrences'], s['length']) for s in j[method]['sequences']]})")
    print(f"planted {proc}: {length} instructions x {occ} found by {a.planted_by}")
    return length


if __name__ == "__main__":
    main()
