#!/usr/bin/env python3
"""merge_oracle.py --atomx ATOMX [--regen-env K=V]... [--fork] PROGRAM

Traces PROGRAM (tests/trace/programs/handoff.c) and checks `atomx regen
--merge` (docs/trace.md, "Ordering threads and processes") against
oracles that do not come from atomx:
  - the manifest says `schedule sync-points` (and `switches` as root);
  - each thread's lines of the merged trace equal its lines of `atomx regen`
    (nothing lost, duplicated or moved within the thread), and
    `--merge --thread TID` of one thread equals them too;
  - every read of a pipe comes after the write it reads: the k-th call
    to read@plt in receive_record after the k-th call to write@plt in
    send_record, and the same for the acknowledgements back (consumer's
    write, producer's read), so neither thread's part can simply come
    first (the call sites found by objdump in the program file);
  - the tickets taken under the mutex (the entry of take_ticket, found by
    nm) come in exactly the order of the program's own record.
--fork makes the producer a forked process (the records then cross
processes).  --regen-env K=V sets K for the merging regen only (the must-fail twins'
hooks: ATOMX_TEST_SCHEDULE_SKEW, ATOMX_TEST_MERGE_DROP).  Prints PASS, or
FAIL: and what differs (exit 1).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run(cmd, env=None):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        fail(f"{' '.join(cmd)} exited {r.returncode}: {r.stderr.strip()[-2000:]}")
    return r.stdout


def by_thread(text):
    """The lines of a text trace per thread: a line that starts with a space
    (a data or library reference) belongs to the line before it."""
    threads = {}
    last = None
    for line in text.splitlines():
        if line.startswith(" "):
            threads[last].append(line)
            continue
        last = line.split(" ", 1)[0]
        threads.setdefault(last, []).append(line)
    return threads


def compare(tid, merged, alone, what):
    for i, (m, a) in enumerate(zip(merged, alone)):
        if m != a:
            fail(f"thread {tid}: {what} differs from its own regeneration at its line {i + 1}: '{m}' there, '{a}' alone")
    if len(merged) != len(alone):
        fail(f"thread {tid}: {what} has {len(merged)} lines, its own regeneration {len(alone)}")


def call_sites(program, function, callee):
    """Addresses (hex, no 0x) of the calls to CALLEE@plt inside FUNCTION."""
    out = run(["objdump", "-d", "--no-show-raw-insn", program])
    sites, inside = [], False
    for line in out.splitlines():
        m = re.match(r"^[0-9a-f]+ <([^>]+)>:", line)
        if m:
            inside = m.group(1) == function
            continue
        c = re.match(r"^\s*([0-9a-f]+):\s+call\s+[0-9a-f]+ <" + re.escape(callee) + r"@plt>", line)
        if inside and c:
            sites.append(c.group(1))
    if len(sites) != 1:
        fail(f"objdump shows {len(sites)} calls to {callee}@plt in {function}, not one")
    return sites[0]


def symbol(program, name):
    for line in run(["nm", program]).splitlines():
        f = line.split()
        if len(f) == 3 and f[2] == name:
            return format(int(f[0], 16), "x")
    fail(f"nm finds no {name} in {program}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--atomx", required=True)
    ap.add_argument("--regen-env", action="append", default=[])
    ap.add_argument("--fork", action="store_true", help="the producer a forked process (PROGRAM ORDER fork)")
    ap.add_argument("program")
    args = ap.parse_args()
    program = os.path.abspath(args.program)
    with tempfile.TemporaryDirectory(prefix="atomx-merge.") as work:
        trace = os.path.join(work, "trace")
        order_file = os.path.join(work, "order")
        run([args.atomx, "trace", "-q", "-o", trace, "--", program, order_file] + (["fork"] if args.fork else []))
        manifest = open(os.path.join(trace, "manifest")).read().splitlines()
        # (`schedule sync-points switches` when the privileged log was recorded too)
        if not any(line.split()[:2] == ["schedule", "sync-points"] for line in manifest):
            fail("the manifest has no 'schedule sync-points' line")
        env = dict(os.environ)
        for kv in args.regen_env:
            k, _, v = kv.partition("=")
            env[k] = v
        merged_text = run([args.atomx, "regen", "-q", trace, "--merge"], env)
        alone = by_thread(run([args.atomx, "regen", "-q", trace]))
        # A forked child's own lines: regen's text prints the calls of the
        # part it inherited (its parent's, before the fork) though not their
        # blocks, so they lead its lines; --merge leaves them out with the
        # blocks (docs/trace.md, "Ordering threads and processes").
        for e in run([args.atomx, "regen", trace, "--events"]).splitlines():
            f = e.split()
            if len(f) >= 4 and f[3] == "forked" and f[2] in alone:
                lines = alone[f[2]]
                while lines and " call " in lines[0]:
                    lines.pop(0)
        merged = by_thread(merged_text)
        if sorted(merged) != sorted(alone):
            fail(f"the merged trace has threads {sorted(merged)}, regen {sorted(alone)}")
        for tid in sorted(alone):
            compare(tid, merged[tid], alone[tid], "the merged trace")

        record = open(order_file).read().split("\n")
        tickets = [l for l in record if l.isdigit()]
        producer = next(l.split()[1] for l in record if l.startswith("producer "))
        consumer = next(l.split()[1] for l in record if l.startswith("consumer "))
        one = by_thread(run([args.atomx, "regen", "-q", trace, "--merge", "--thread", producer], env))
        if list(one) != [producer]:
            fail(f"--merge --thread {producer} has threads {sorted(one)}")
        compare(producer, one[producer], alone[producer], f"--merge --thread {producer}")

        # The records, producer to consumer; the acknowledgements back.
        handoffs = [("record", (producer, "send_record", "write"), (consumer, "receive_record", "read")),
                    ("acknowledgement", (consumer, "consumer", "write"), (producer, "producer", "read"))]
        sites = {}
        for _, *ends in handoffs:
            for tid, function, callee in ends:
                sites[(tid, call_sites(program, function, callee))] = (tid, function, callee)
        ticket = symbol(program, "take_ticket")
        seen = {end: [] for end in sites.values()}
        taken = []
        for i, line in enumerate(merged_text.splitlines()):
            f = line.split(" ")
            if len(f) != 2:
                continue
            if (f[0], f[1]) in sites:
                seen[sites[(f[0], f[1])]].append(i)
            elif f[1] == ticket:
                taken.append(f[0])
        for what, send, receive in handoffs:
            writes, reads = seen[send], seen[receive]
            if len(writes) != len(reads) or not writes:
                fail(f"{len(writes)} writes and {len(reads)} reads of the {what}s in the merged trace")
            for k, (w, r) in enumerate(zip(writes, reads)):
                if r < w:
                    fail(f"read {k} of a {what} (thread {receive[0]}, the call to read in {receive[1]}, merged line "
                         f"{r + 1}) precedes the write it reads (thread {send[0]}, the call in {send[1]}, merged line {w + 1})")
        if len(taken) != len(tickets):
            fail(f"{len(taken)} tickets taken in the merged trace, {len(tickets)} in the program's record")
        for k, (a, b) in enumerate(zip(tickets, taken)):
            if a != b:
                fail(f"ticket {k}: taken by thread {a} in the program's record, by thread {b} in the merged trace")
        switches = sum(1 for a, b in zip(tickets, tickets[1:]) if a != b)
        print(f"PASS: {len(alone)} threads; {len(seen[handoffs[0][2]])} records and "
              f"{len(seen[handoffs[1][2]])} acknowledgements read after their writes; {len(tickets)} tickets "
              f"({switches} changes of taker) in the program's order")


if __name__ == "__main__":
    main()
