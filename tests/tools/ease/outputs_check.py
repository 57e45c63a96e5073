#!/usr/bin/env python3
"""The ease tool's files beside ease.json, checked as their readers see them.

    outputs_check.py --atomx ATOMX --check html|cg|cgnames|merge|shapes PROG [ARGS...]

Instruments PROG with `atomx -T ease`, runs it twice (directories a/ and
b/), then:
  html   opens a/ease.html in headless Chromium (`chromium --headless
         --dump-dom`: the DOM after the page ran) and checks what the
         browser drew, as the page records it in #rendered: one section per
         non-empty table of ease.json, each with its chart drawn, every bar
         drawn with a width and a height, every table row drawn, the
         figures table's rows;
  cg     runs `cg_annotate a/ease.cg` (Valgrind's own reader): it must
         accept the file, and its totals of Ir Dr Dw Bc must equal
         ease.json's totals; and each function's Ir, Dr and Dw in ease.cg
         equal those of cachegrind --cache-sim=yes on PROG (which counts a
         read-modify-write operand as a Dr, as ease.cg does; the Valgrind
         oracle of tool.ease.vg.* compares Dr + Dw only, callgrind counting
         it as a Dw): PROG's own functions must have no rep-prefixed or
         atomic instruction, which the two count apart;
  cgnames  (a C++ program) runs cachegrind on PROG as it names functions
         by default (demangled) and compares the names: no function of
         ease.cg may have a mangled name (_Z...), and the functions of
         ease.cg that cachegrind names too must hold most of its Ir, with
         some of them C++ functions ("ns::f(int)"), so that the two files
         compare by function name;
  merge  runs `atomx ease-report a/ease.json b/ease.json -o m` and checks
         that m/ease.json is the sum of the two (every total, every table
         entry, every branch's executions and taken), that m/ease.out and
         m/ease.html exist, the page drawn as above, and that a/ease.out's
         and m/ease.out's loads, stores and modifies rows give their
         ease.json's totals;
  shapes runs PROG instrumented a second time with `--naive` (every
         executed instruction described on its own, the obviously right
         way) in b/: its four files must equal a/'s, which describes each
         shape of instruction once, byte for byte (the same program name,
         so the runs take the same path).
Exit status 0 when everything holds.
"""
import argparse
import collections
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
import callgrind_file  # noqa: E402  (tests/: the one reader of Valgrind's files)


def render(page, tmp):
    """What the page says it drew, or None."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if not browser:
        return None
    dom = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=" + tmp + "/profile",
                          "--virtual-time-budget=5000", "--dump-dom", "file://" + page],
                         capture_output=True, text=True, timeout=180).stdout
    m = re.search(r'<pre id="rendered"[^>]*>([^<]*)</pre>', dom)
    return json.loads(html.unescape(m.group(1))) if m and m.group(1) else None


def check_page(page, data, tmp):
    got = render(page, tmp)
    if got is None:
        return [f"{page}: the page recorded nothing (no chromium, or the browser did not run it)"]
    print("rendered:", {k: v for k, v in got.items() if k != "titles"})
    tables = [t for t, rows in data["tables"].items() if rows]
    rows = sum(min(500, len(data["tables"][t])) for t in tables)
    problems = []
    if got["sections"] != len(tables) or got["charts"] != len(tables):
        problems.append(f"{got['sections']} sections and {got['charts']} charts drawn for {len(tables)} tables")
    if not got["bars"] or got["barsDrawn"] != got["bars"]:
        problems.append(f"{got['barsDrawn']} of {got['bars']} bars drawn")
    if got["rows"] != rows or got["rowsDrawn"] != rows:
        problems.append(f"{got['rowsDrawn']} of {got['rows']} table rows drawn, ease.json has {rows}")
    if got["figures"] < 8:
        problems.append(f"{got['figures']} rows of figures drawn")
    return problems


def check_cg(d):
    j = json.load(open(os.path.join(d, "ease.json")))
    r = subprocess.run(["cg_annotate", os.path.join(d, "ease.cg")], capture_output=True, text=True, cwd=d)
    if r.returncode != 0:
        return [f"cg_annotate failed: {r.stderr.strip()[:400]}"]
    # The totals line: "51,209 (100.0%) 3,399 (100.0%) ...  PROGRAM TOTALS".
    n = r"([\d,]+)(?:\s+\([\d.]+%\))?\s+"
    m = re.search(r"^\s*" + n * 4 + "PROGRAM TOTALS", r.stdout, re.M)
    if not m:
        return ["cg_annotate printed no PROGRAM TOTALS line"]
    got = [int(x.replace(",", "")) for x in m.groups()]
    t = j["totals"]
    want = [t.get("instructions", 0), t.get("Dr", 0), t.get("Dw", 0), t.get("Bc", 0)]
    print("cg_annotate totals (Ir Dr Dw Bc):", got)
    return [] if got == want else [f"cg_annotate totals {got}, ease.json's {want}"]


def cg_functions(path):
    """{function: Counter(event: cost)} of a cachegrind-format file."""
    out = collections.defaultdict(collections.Counter)
    for ev in callgrind_file.read(path):
        if isinstance(ev, callgrind_file.Cost):
            out[ev.fn].update(ev.costs)
    return out


def cachegrind(d, prog, args, options):
    """cg_functions of cachegrind's own file for PROG ARGS (run in d/vg), or what went wrong."""
    if not shutil.which("valgrind"):
        return "no valgrind: ease.cg cannot be compared with cachegrind's file"
    vg = os.path.join(d, "vg")
    os.mkdir(vg)
    out = os.path.join(vg, "cachegrind.out")
    subprocess.run(["valgrind", "--tool=cachegrind"] + options + ["--cachegrind-out-file=" + out, prog] + args,
                   cwd=vg, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # PROG's status is its own
    return cg_functions(out) if os.path.exists(out) else "cachegrind wrote no output"


def check_cg_split(d, prog, args):
    """ease.cg's Ir, Dr and Dw per function against cachegrind's."""
    theirs = cachegrind(d, prog, args, ["--cache-sim=yes"])
    if isinstance(theirs, str):
        return [theirs]
    ours = cg_functions(os.path.join(d, "ease.cg"))
    # Valgrind names functions it has a symbol for; _start is its "(below
    # main)" and crtstuff's local ones fall into "???" with the rest it
    # cannot name: those are left out, and what is compared must be most of
    # the run.
    problems, compared = [], collections.Counter()
    for fn, c in sorted(ours.items()):
        if fn not in theirs:
            continue
        compared += c
        for e in ("Ir", "Dr", "Dw"):
            if c[e] != theirs[fn][e]:
                problems.append(f"{fn}: {e} ease.cg {c[e]}, cachegrind {theirs[fn][e]}")
    total = sum(c["Ir"] for c in ours.values())
    if compared["Ir"] < 0.95 * total:
        problems.append(f"only {compared['Ir']} of ease.cg's {total} Ir in functions cachegrind names")
    print(f"ease.cg against cachegrind: Ir {compared['Ir']} of {total}, Dr {compared['Dr']}, Dw {compared['Dw']} compared")
    return problems


def check_cg_names(d, prog, args):
    """ease.cg's function names against those of cachegrind's own file."""
    theirs = cachegrind(d, prog, args, [])  # names demangled, as by default
    if isinstance(theirs, str):
        return [theirs]
    ours = cg_functions(os.path.join(d, "ease.cg"))
    problems = [f"ease.cg names a function by its symbol: {fn}" for fn in sorted(ours) if fn.startswith("_Z")]
    total = sum(c["Ir"] for c in ours.values())
    named = {fn: c["Ir"] for fn, c in ours.items() if fn in theirs}
    cxx = sorted(fn for fn in named if "(" in fn)
    if sum(named.values()) < 0.9 * total:
        missing = sorted((fn for fn in ours if fn not in theirs), key=lambda fn: -ours[fn]["Ir"])[:5]
        problems.append(f"only {sum(named.values())} of ease.cg's {total} Ir in functions cachegrind names the same; "
                        f"not named so by cachegrind: {missing}")
    if not cxx:
        problems.append("no C++ function of ease.cg is named as cachegrind names it")
    print(f"ease.cg names against cachegrind's: {len(named)} of {len(ours)} functions "
          f"({sum(named.values())} of {total} Ir), C++ ones such as {cxx[:3]}")
    return problems


def check_text_figures(out, j):
    """ease.out's loads, stores and modifies rows give ease.json's totals."""
    rows = {}
    for line in open(out):
        f = re.match(r"\s+(loads|stores|modifies)\s+([\d,]+)\s", line)
        if f:
            rows[f.group(1)] = int(f.group(2).replace(",", ""))
    return [f"{out}: the {k} row says {rows.get(k)}, ease.json's total {j['totals'].get(k, 0)}"
            for k in ("loads", "stores", "modifies") if rows.get(k) != j["totals"].get(k, 0)]


def check_merge(atomx, a, b, m, tmp):
    r = subprocess.run([atomx, "ease-report", os.path.join(a, "ease.json"), os.path.join(b, "ease.json"), "-o", m],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return [f"atomx ease-report failed: {r.stderr.strip()}"]
    ja, jb, jm = (json.load(open(os.path.join(d, "ease.json"))) for d in (a, b, m))
    problems = []
    for k in set(ja["totals"]) | set(jb["totals"]) | set(jm["totals"]):
        if jm["totals"].get(k, 0) != ja["totals"].get(k, 0) + jb["totals"].get(k, 0):
            problems.append(f"total {k}: merged {jm['totals'].get(k)}, runs {ja['totals'].get(k)} + {jb['totals'].get(k)}")
    for t in set(ja["tables"]) | set(jb["tables"]):
        want = collections.Counter(ja["tables"].get(t, {})) + collections.Counter(jb["tables"].get(t, {}))
        if collections.Counter(jm["tables"].get(t, {})) != want:
            problems.append(f"table {t}: merged differs from the sum")

    def branches(j):
        return {(b["program"], b["pc"]): (b["executed"], b["taken"]) for b in j["branches"]}
    ba, bb, bm = branches(ja), branches(jb), branches(jm)
    for k in set(ba) | set(bb):  # a branch that did not run in one is not in its file
        ea, ta = ba.get(k, (0, 0))
        eb, tb = bb.get(k, (0, 0))
        want = (ea + eb, None if ta is None or tb is None else ta + tb)
        if bm.get(k) != want:
            problems.append(f"branch {k}: merged {bm.get(k)}, sum {want}")
    if not os.path.getsize(os.path.join(m, "ease.out")):
        problems.append("the merged ease.out is empty")
    for d, j in ((a, ja), (m, jm)):
        problems += check_text_figures(os.path.join(d, "ease.out"), j)
    problems += check_page(os.path.join(m, "ease.html"), jm, tmp)
    print(f"merged: {jm['totals']['instructions']} instructions = {ja['totals']['instructions']} + {jb['totals']['instructions']}")
    return problems


def check_shapes(atomx, prog, args, atom, a, b, tmp):
    # Both run as p/prog.atom and n/prog.atom: argv[0] of one length, so
    # that a program that looks at its name takes the same path in both.
    runs = []
    for d, extra in ((a, []), (b, ["--", "--naive"])):
        binary = os.path.join(tmp, "p" if d == a else "n", "prog.atom")
        os.mkdir(os.path.dirname(binary))
        if extra:
            subprocess.run([atomx, prog, "-T", "ease", "-o", binary, "-q"] + extra, check=True)
        else:
            shutil.copy(atom, binary)
        shutil.rmtree(d)
        os.mkdir(d)
        subprocess.run([binary] + args, cwd=d, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    problems = []
    if os.environ.get("OUTPUTS_CHECK_CORRUPT_SHAPES"):  # --corrupt
        with open(os.path.join(a, "ease.json"), "ab") as f:
            f.write(b"\n")
    for name in ("ease.out", "ease.json", "ease.cg", "ease.html"):
        x, y = (open(os.path.join(d, name), "rb").read() for d in (a, b))
        if x != y:
            lx, ly = x.splitlines(), y.splitlines()
            k = next((i for i in range(min(len(lx), len(ly))) if lx[i] != ly[i]), min(len(lx), len(ly)))
            problems.append(f"{name} differs from --naive's at line {k + 1}: "
                            f"{lx[k][:120] if k < len(lx) else b'(end)'} / {ly[k][:120] if k < len(ly) else b'(end)'}")
    print(f"shapes: {json.load(open(os.path.join(a, 'ease.json')))['totals']['instructions']} instructions, "
          f"{len(problems)} of 4 files differ from --naive's")
    return problems


def corrupt(check, d):
    """A wrong output for the check's must-fail twin."""
    def edit(name, change):
        path = os.path.join(d, name)
        with open(path) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(change(text))
    if check == "html":
        edit("ease.html", lambda t: t.replace("<script", "<!--script").replace("</script>", "</script-->"))
    elif check == "cgnames":
        edit("ease.cg", lambda t: re.sub(r"^fn=(.*)$", lambda m: "fn=_Z" + re.sub(r"\W", "", m.group(1)), t, flags=re.M))
    elif check == "shapes":
        # check_shapes runs the tool again into the same directory: break the
        # file it compares after that run (the environment reaches it).
        os.environ["OUTPUTS_CHECK_CORRUPT_SHAPES"] = "1"
    else:
        raise SystemExit(f"--corrupt: no twin for --check {check}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--atomx", required=True)
    ap.add_argument("--check", choices=("html", "cg", "cgnames", "merge", "shapes"), required=True)
    ap.add_argument("--corrupt", action="store_true",
                    help="the must-fail twins: break the run's output the check reads (html: no script runs; "
                         "cgnames: ease.cg's names mangled; shapes: ease.json one line longer) and fail")
    ap.add_argument("--static", action="store_true",
                    help="ease's static measurements (-- --static): the program's own code must not run (no output, "
                         "status 0), and the outputs say static")
    ap.add_argument("prog")
    ap.add_argument("args", nargs="*")
    o = ap.parse_args()
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        atom = os.path.join(tmp, "prog.atom")
        subprocess.run([o.atomx, o.prog, "-T", "ease", "-o", atom, "-q"] + (["--", "--static"] if o.static else []), check=True)
        dirs = [os.path.join(tmp, n) for n in ("a", "b", "m")]
        for d in dirs:
            os.mkdir(d)
        for d in dirs[:2]:
            r = subprocess.run([atom] + o.args, cwd=d, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            if o.static and (r.returncode or r.stdout):
                problems.append(f"--static: the program ran (status {r.returncode}, {len(r.stdout)} bytes of output)")
        if o.static:
            j = json.load(open(os.path.join(dirs[0], "ease.json")))
            if j.get("weighting") != "static":
                problems.append(f"--static: ease.json's weighting is {j.get('weighting')!r}")
            if "(static)" not in open(os.path.join(dirs[0], "ease.html")).read():
                problems.append("--static: ease.html does not say (static)")
        if o.corrupt:
            corrupt(o.check, dirs[0])
        if o.check == "html":
            problems += check_page(os.path.join(dirs[0], "ease.html"), json.load(open(os.path.join(dirs[0], "ease.json"))), tmp)
        elif o.check == "cg":
            problems += check_cg(dirs[0]) + check_cg_split(dirs[0], o.prog, o.args)
        elif o.check == "cgnames":
            problems += check_cg_names(dirs[0], o.prog, o.args)
        elif o.check == "shapes":
            problems += check_shapes(o.atomx, o.prog, o.args, atom, dirs[0], dirs[1], tmp)
        else:
            problems += check_merge(o.atomx, dirs[0], dirs[1], dirs[2], tmp)
    for p in problems:
        print("FAIL:", p)
    if not problems:
        print(f"PASS {o.check}: {o.prog}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
