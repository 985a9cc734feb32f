#!/usr/bin/env python3
"""`dshq answer` -> outcome file, timed from a plain process loop (no file watchers).

usage: python3 benches/cli_answer.py N MODE BIN [BIN ...]
  N     samples per binary
  MODE  cli   - each CLI answer follows only the previous one (an idle daemon)
        mixed - an answer file is answered by the daemon just before each CLI answer,
                as in the e2e bench's interleaved loop
  BIN   dshq binaries, measured in the same rounds (each on its own root and daemon,
        under a temporary directory)

Each sample asks a request with `dshq ask -`, then times `dshq answer ID --select ...`
from spawn to exit; the outcome file must exist at exit. See docs/PERFORMANCE.md.
"""
import json
import os
import subprocess
import sys
import tempfile
import time
n = int(sys.argv[1]); mode = sys.argv[2]; bins = sys.argv[3:]
roots = {}; daemons = []
base = tempfile.mkdtemp(prefix="dshq-cli-answer-")
for k, b in enumerate(bins):
    root = os.path.join(base, f"r{k}")
    os.makedirs(root)
    env = dict(os.environ, DSHQ_ROOT=root, RUST_LOG='error')
    daemons.append(subprocess.Popen([b, "daemon"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    while not os.path.exists(f"{root}/answers/new"): time.sleep(0.01)
    time.sleep(0.3)
    out = subprocess.run([b, "--json", "provider", "register", "--name", "bench", "--ttl", "1h"], env=env, capture_output=True)
    roots[b] = (root, env, json.loads(out.stdout)["lease"])
def ask(b, rid):
    root, env, lease = roots[b]
    req = {"id": rid, "context": "default", "questions": [{"id": "db", "question": "Which?", "options": [{"label": "Postgres"}, {"label": "SQLite"}]}], "timeout": "8h"}
    subprocess.run([b, "ask", "-"], input=json.dumps(req).encode(), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
res = {b: [] for b in bins}
for i in range(n):
    for b in bins:
        root, env, lease = roots[b]
        rid = f"c{i}"; ask(b, rid)
        if mode == "mixed":
            fid = f"f{i}"; ask(b, fid)
            body = json.dumps({"lease": lease, "answers": [{"id": "db", "selected": ["SQLite"]}]})
            open(f"{root}/answers/tmp/{fid}.json", "w").write(body)
            os.rename(f"{root}/answers/tmp/{fid}.json", f"{root}/answers/new/{fid}.json")
            while not os.path.exists(f"{root}/outbox/{fid}.json"): time.sleep(0.0002)
        t = time.perf_counter()
        r = subprocess.run([b, "answer", rid, "--select", "Postgres", "--lease", lease], env=env, stdout=subprocess.DEVNULL)
        dt = (time.perf_counter() - t) * 1e3
        assert r.returncode == 0, r
        res[b].append(dt)
for d in daemons:
    d.kill()
    d.wait()
subprocess.run(["rm", "-rf", base])
def pct(v, p):
    # The same rank as the e2e bench: the smallest value with p% of the samples at or below it.
    return v[max(1, -(-len(v) * p // 100)) - 1]
for b, v in res.items():
    v.sort()
    print(f"{mode} {b}: n {len(v)} p50 {pct(v, 50):.2f} p90 {pct(v, 90):.2f} p99 {pct(v, 99):.2f} max {v[-1]:.2f} ms")
