"""Shared by the Valgrind-oracle tests of the shipped tools (tool.dyninst.*,
tool.branch.*, tool.unalign.*, tool.pipe.ir.*, tool.cache.*, tool.prof.*,
tool.gprof.*, tool.inline.*): run a program three ways with the same
workload (native, instrumented with `atomx -T TOOL`, under callgrind or
cachegrind), collect the tool's JSON output of every process and Valgrind's
costs, and map addresses to the function symbols Valgrind names.

The symbol helpers (function_symbols, canonical_names, valgrind_only_branches)
come from tests/branch/branch_vs_cachegrind.py, whose docstring explains the
approach (equal-length paths, argv[0] kept, one callgrind file per process).
"""
import argparse
import bisect
import collections
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(ROOT, "tests", "branch"))
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "tests", "tools"))
import callgrind_file  # noqa: E402
import out_check  # noqa: E402
import setaside  # noqa: E402
from branch_vs_cachegrind import (callgrind_costs, function_symbols, canonical_names,  # noqa: E402,F401
                                   valgrind_only_branches, disassembly, REP_PREFIXES)


class _Parser(argparse.ArgumentParser):
    def parse_args(self, *a, **k):
        o = super().parse_args(*a, **k)
        o.set_aside = setaside.parse(o.set_aside, self)  # {procedure: reason}
        return o


def harness_args(description):
    """The options every Run-based checker takes; add your own, then
    parse_args() (o.set_aside is then {procedure: reason}; compare with
    setaside.Selection)."""
    ap = _Parser(description=description)
    ap.add_argument("--atomx", required=True)
    ap.add_argument("--workload", help="corpus/workloads/NAME.sh: run it instead of PROG ARGS")
    ap.add_argument("--timeout", type=int, default=1800)
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory")
    ap.add_argument("--runs", type=int, default=1,
                    help="runs of the instrumented workload; a function whose counts vary and is not set aside fails")
    setaside.add_arguments(ap)
    ap.add_argument("prog")
    ap.add_argument("args", nargs="*")
    return ap


def start(o, tool, **kw):
    """A Run of TOOL made from the harness options `o`, run: (run, failures)
    with failures holding a changed output, or (run, None) when atomx failed
    (FAIL printed).  The caller closes the run."""
    run = Run(o.atomx, o.prog, tool, workload=o.workload, args=o.args, runs=o.runs, timeout=o.timeout, keep=o.keep, **kw)
    try:
        run.run()
    except RuntimeError as e:
        print(f"FAIL {o.prog}: {e}")
        return run, None
    return run, [m for m in [run.output_changed()] if m]


def verdict(prog, failures, sel, passed):
    """Prints the set-aside notes, then FAIL with the failures (at most 40)
    or PASS with `passed`; returns the exit status."""
    for line in sel.notes():
        print("note:", line)
    if failures:
        print(f"FAIL {prog}: {len(failures)} problem(s) over {len(sel.compared)} functions compared")
        for f in failures[:40]:
            print("   ", f)
        return 1
    print(f"PASS {prog}: {len(sel.compared)} functions, {sel.summary()}{passed}")
    return 0


def rep_addresses(prog):
    """Addresses of rep/repz/repnz-prefixed instructions (objdump)."""
    return {addr for addr, text in disassembly(prog) if text.split()[0] in REP_PREFIXES}


class Symbols:
    """pc -> canonical function name (None outside sized function symbols)."""

    def __init__(self, prog):
        self.syms = function_symbols(prog)
        self.canon = canonical_names(self.syms)
        self.starts = [s for s, _, _ in self.syms]

    def __call__(self, pc):
        i = bisect.bisect_right(self.starts, pc) - 1
        if i >= 0 and self.syms[i][0] <= pc < self.syms[i][1]:
            return self.canon[self.syms[i][2]]
        return None

    def names(self):
        return {self.canon[n] for _, _, n in self.syms}


def _wrapper(path, body):
    with open(path, "w") as f:
        f.write("#!/bin/bash\n" + body)
    os.chmod(path, 0o755)


class Run:
    """One comparison: PROG with a workload (a corpus script run in an empty
    directory with the binary's path) or ARGS.  After run(): .results
    (native, atom, and callgrind or cachegrind: (status, stdout, stderr)),
    .outputs[r] (the tool's JSON files of every process of instrumented run
    r; the files named in collect lie beside the JSON file of their
    process), .cgdir (Valgrind's files, one per process), .unmoved
    (procedures atomx left in place).

    valgrind: "callgrind" (run with --dump-instr=yes --collect-jumps=yes
    --compress-pos=no, so that rep_executions() can read its jumps) or
    "cachegrind";
    valgrind_opts: more of its options.  collect: names of other files the
    tool writes (NAME, or NAME.PID from a forked child) to keep; discard:
    names of files it writes that nobody reads, removed after each process
    so that the workload's directory holds what the program wrote."""

    def __init__(self, atomx, prog, tool, tool_args=(), workload=None, args=(), runs=1, timeout=1800,
                 valgrind="callgrind", valgrind_opts=(), collect=(), discard=(), keep=False, scratch=None):
        self.atomx, self.prog, self.tool = atomx, os.path.abspath(prog), tool
        self.tool_args, self.workload, self.args = list(tool_args), workload, list(args)
        self.runs, self.timeout, self.keep = runs, timeout, keep
        self.valgrind, self.vg_opts = valgrind, list(valgrind_opts)
        self.collect, self.discard = list(collect), list(discard)
        # scratch: the scratch directory's name prefix (default atomx-TOOL.);
        # runs of two tools compared with each other need paths of one length.
        self.work = tempfile.mkdtemp(prefix=scratch or f"atomx-{tool}.")

    def close(self):
        if self.keep:
            print("kept", self.work)
        else:
            shutil.rmtree(self.work, ignore_errors=True)

    def instrument(self):
        w = self.work
        self.atom = os.path.join(w, os.path.basename(self.prog) + ".atom")
        report = os.path.join(w, "report.json")
        cmd = [self.atomx, self.prog, "-T", self.tool, "-o", self.atom, "-q", "--report", report]
        if self.tool_args:
            cmd += ["--"] + self.tool_args
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"atomx failed:\n{r.stderr}")
        with open(report) as f:
            self.unmoved = {p["name"] for p in json.load(f).get("unmoved", [])}

    def run(self, with_valgrind=True):
        self.instrument()
        w, base = self.work, os.path.basename(self.prog)
        bindir = os.path.join(w, "bin")
        os.mkdir(bindir)
        binary = os.path.join(bindir, base)
        os.mkdir(os.path.join(w, "cgb"))
        cg_binary = os.path.join(w, "cgb", base)
        shutil.copy(self.prog, cg_binary)
        self.cgdir = os.path.join(w, "cg")
        os.mkdir(self.cgdir)
        # TOOL.out beside TOOL.json: out_problems() compares them.
        kept = " ".join(f"{n} {n}.*" for n in [f"{self.tool}.json", f"{self.tool}.out"] + self.collect)
        # argv[0]: Valgrind cannot set it, its program is named by the
        # copy's path; so every run is named by that path (exec -a), not
        # only by one of its length.  A program's work may depend on its
        # name's bytes: lua interns argv[0] (a short string), whose hash
        # decides which chains internshrstr walks, so lua's internshrstr and
        # tablerehash differed from Valgrind's by a few instructions, or
        # not, with the scratch directory's random name (pipe, --full
        # oracles-b; tool.dyninst.argv0: a program whose work is its
        # name's bytes).  ATOMX_TEST_ARGV0=wrapper names the native and
        # instrumented runs by the wrapper's path again (its must-fail twin).
        name = '"$0"' if os.environ.get("ATOMX_TEST_ARGV0") == "wrapper" else f'"{cg_binary}"'
        self.argv0 = name
        wrappers = [
            ("native", f'exec -a {name} "{self.prog}" "$@"\n'),
            # One directory per process, so that the files it wrote stay
            # together; NAME.PID: written by a forked child (AtomxOutputPath).
            ("atom", f'(exec -a {name} "{self.atom}" "$@"); rc=$?\n'
                     'd="$ATOMX_TOOL_OUT/$$.$(date +%s%N)"\n'
                     f'for f in {kept}; do [ -f "$f" ] && mkdir -p "$d" && mv "$f" "$d/"; done\n'
                     + "".join(f'rm -f {n} {n}.*\n' for n in self.discard)
                     + 'exit $rc\n'),
        ]
        if with_valgrind:
            vg = self.valgrind
            opts = (["--dump-instr=yes", "--collect-jumps=yes", "--compress-pos=no"] if vg == "callgrind" else []) + ["--demangle=no"] + self.vg_opts
            wrappers.append((vg, f"exec valgrind -q --tool={vg} {' '.join(opts)}"
                             f' --{vg}-out-file="{self.cgdir}/cg.%p" "{cg_binary}" "$@"\n'))
        self._binary, self._cg_binary = binary, cg_binary
        self.results, self.outputs = {}, []
        for k, (name, body) in enumerate(wrappers):
            _wrapper(binary, body)
            for r in range(self.runs if name == "atom" else 1):
                d = os.path.join(w, f"run{k}.{r}.d")  # equal-length paths
                os.mkdir(d)
                env = dict(os.environ)
                if name == "atom":
                    env["ATOMX_TOOL_OUT"] = os.path.join(w, f"out.{r}")
                    os.mkdir(env["ATOMX_TOOL_OUT"])
                p = self._workload(d, env)
                self.results.setdefault(name, (p.returncode, p.stdout, p.stderr))
                if name == "atom":
                    jsons = os.path.join(env["ATOMX_TOOL_OUT"], "*", f"{self.tool}.json*")
                    self.outputs.append(sorted(glob.glob(jsons)))
        return self

    def callgrind_again(self):
        """After run(): the workload once more, under callgrind (Ir per
        instruction, jumps, positions uncompressed); returns its files, one
        per process (for a checker whose main Valgrind run was cachegrind)."""
        out = os.path.join(self.work, "cl")
        os.mkdir(out)
        _wrapper(self._binary, "exec valgrind -q --tool=callgrind --dump-instr=yes --collect-jumps=yes"
                               " --compress-pos=no --skip-plt=no --demangle=no"
                               f' --callgrind-out-file="{out}/cg.%p" "{self._cg_binary}" "$@"\n')
        d = os.path.join(self.work, "run9.0.d")  # as long as the others
        os.mkdir(d)
        self._workload(d)
        return [os.path.join(out, fn) for fn in sorted(os.listdir(out))]

    def _workload(self, cwd, env=None):
        """The workload (or PROG ARGS) through the wrapper at its binary's
        path, in `cwd`."""
        b = self._binary
        cmd = ["bash", os.path.abspath(self.workload), b] if self.workload else [b] + self.args
        return subprocess.run(cmd, cwd=cwd, capture_output=True, timeout=self.timeout, env=env)

    def output_changed(self):
        n, a = self.results["native"], self.results["atom"]
        if n == a:
            return None
        return f"program output changed (status {n[0]} -> {a[0]}, stdout same: {n[1] == a[1]}, stderr same: {n[2] == a[2]})"

    def valgrind_files(self):
        """Valgrind's output files, one per process."""
        return [os.path.join(self.cgdir, fn) for fn in sorted(os.listdir(self.cgdir))]

    def callgrind(self, event):
        """(function, address, cost) over every process callgrind saw."""
        for path in self.valgrind_files():
            yield from callgrind_costs(path, os.path.basename(self.prog), event)

    def rep_executions(self):
        """{address: executions} of PROG's rep-prefixed string instructions,
        over every process callgrind saw (callgrind_file.executions: Valgrind
        counts an Ir per iteration, the tools one per execution)."""
        return callgrind_file.executions(self.valgrind_files(), os.path.basename(self.prog), rep_addresses(self.prog))

    def out_problems(self, run=0):
        """What each process's TOOL.out of instrumented run `run` prints
        that its TOOL.json does not say (tests/tools/out_check.py)."""
        return [p for path in self.outputs[run] for p in out_check.check(self.tool, path)]

    def json_outputs(self, run=0):
        for path in self.outputs[run]:
            with open(path) as f:
                yield json.load(f)
