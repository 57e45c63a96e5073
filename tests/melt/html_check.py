#!/usr/bin/env python3
"""html_check.py ATOMX -- PROG ARGS...

Traces PROG ARGS, writes `atomx melt TRACE --html F --json J`, opens F in
headless Chromium (`chromium --headless --dump-dom`: the DOM after the page
ran), and checks what the browser drew, as the page records it in
#rendered: every histogram bar drawn with a width and a height (as many as
the page has, one per rank shown), the chart and the curve drawn, the
coverage table's rows (15, or fewer instructions), and as many rows drawn in
each method's table as the JSON has sequences; and the threshold line.
"""
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile


def main():
    atomx, prog = sys.argv[1], sys.argv[3:]
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if not browser:
        print("FAIL: no chromium (scripts/setup.sh installs it)")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        trace, page, data = (os.path.join(tmp, n) for n in ("trace", "m.html", "m.json"))
        subprocess.run([atomx, "trace", "-q", "-o", trace, "--"] + prog, check=True, stdout=subprocess.DEVNULL)
        subprocess.run([atomx, "melt", trace, "--top", "4", "--html", page, "--json", data], check=True,
                       stdout=subprocess.DEVNULL)
        j = json.load(open(data))
        dom = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=" + tmp + "/profile",
                              "--virtual-time-budget=5000", "--dump-dom", "file://" + page],
                             capture_output=True, text=True, timeout=120).stdout
    m = re.search(r'<pre id="rendered"[^>]*>([^<]*)</pre>', dom)
    if not m or not m.group(1):
        print("FAIL: the page recorded nothing: did the browser run it?")
        return 1
    got = json.loads(html.unescape(m.group(1)))
    print("rendered:", got)
    problems = []
    if not got["bars"] or got["barsDrawn"] != got["bars"]:
        problems.append(f"{got['barsDrawn']} of {got['bars']} bars drawn")
    if got["chart"] <= 0 or got["curve"] <= 0:
        problems.append("the chart or the curve has no width")
    if got["coverageRows"] != min(15, len(j["instructions"])):
        problems.append(f"{got['coverageRows']} coverage rows drawn")
    for method in ("seed", "exact"):
        if got[method + "Rows"] != len(j[method]["sequences"]):
            problems.append(f"{got[method + 'Rows']} {method} rows drawn, the JSON has {len(j[method]['sequences'])}")
    if 'id="threshold"' not in dom:
        problems.append("no threshold line")
    for p in problems:
        print("FAIL:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
