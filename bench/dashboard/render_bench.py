#!/usr/bin/python3
"""bench/dashboard: how long the farm's pages take with a long history
(issue 33: under 200 ms with 1,000 revisions and 100 models in the build DB).

    render_bench.py CUVIL WORKDIR [REVISIONS MODELS ROUNDS]

A real controller makes the build DB on a one-model repository and is
stopped; the DB then gets REVISIONS revisions of MODELS jobs each, as a busy
farm leaves them (most jobs planner hits, one model in ten retrained and
compiled by a worker each revision with its miss cause, one in fifty failed
with a diagnostic, the ages spread over 30 days); a controller started on it
serves the pages, each fetched ROUNDS times over loopback after one warm-up.
The same pages on the one-revision DB are timed first, side by side, so the
ratio shows what the history costs.  Prints p50 and worst per page."""
import json
import os
import random
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request

PAGES = ["/", "/failures", "/misses", "/models?model=models/m007.onnx", "/revisions/{rev}",
         "/api/v1/cache", "/api/v1/misses", "/api/v1/revisions", "/api/v1/models?model=models/m007.onnx",
         "/metrics"]
DAY = 86400000


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def git(repo, *args):
    subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True)


def make_repo(work):
    repo = os.path.join(work, "repo")
    os.makedirs(os.path.join(repo, "cuvil"))
    os.makedirs(os.path.join(repo, "models"))
    with open(os.path.join(repo, "cuvil", "p.yaml"), "w") as f:
        f.write("apiVersion: cuvil.dev/v1\nkind: CuvilPipeline\nmetadata: {name: p}\n"
                "spec:\n  models: [models/m.cuir]\n  targets: [x86_64-avx2]\n")
    with open(os.path.join(repo, "models", "m.cuir"), "w") as f:
        f.write("cuir 1\nmodel @m(%x: f32[N,4]) -> (f32[N,4]) {\n  %0 = relu(%x) : f32[N,4]\n"
                "  return %0\n}\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "-c", "user.name=bench", "-c", "user.email=b@x", "commit", "-q", "-m", "one model")
    return repo


def controller(cuvil, repo, state, port):
    p = subprocess.Popen([cuvil, "controller", repo, "--state", state, "--interval", "1h",
                          "--cache", os.path.join(state, "cache"), "--http", "127.0.0.1:%d" % port],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            urllib.request.urlopen("http://127.0.0.1:%d/api/v1/status" % port, timeout=2).read()
            return p
        except OSError:
            time.sleep(0.05)
    p.kill()
    sys.exit("render_bench: the controller did not answer")


def fill(db, revisions, models):
    """REVISIONS x MODELS jobs, as a farm would have recorded them."""
    rnd = random.Random(7)
    c = sqlite3.connect(db)
    now = int(time.time() * 1000)
    jid = c.execute("SELECT COALESCE(MAX(id),0) FROM jobs").fetchone()[0]
    c.execute("BEGIN")
    keys = {}
    for r in range(revisions):
        t = now - (revisions - r) * (30 * DAY // revisions)
        rev = "main@sha1:%040x" % rnd.getrandbits(160)
        cur = c.execute("INSERT INTO revisions(revision,state,created_ms,planned_ms,finished_ms,"
                        "subject,author,commit_ms) VALUES(?,?,?,?,?,?,?,?)",
                        (rev, "succeeded", t, t + 50, t + 60000, "change %d" % r, "Dev %d" % (r % 7), t - 1000))
        rid = cur.lastrowid
        for m in range(models):
            jid += 1
            path = "models/m%03d.onnx" % m
            retrain = r == 0 or (m + r) % 10 == 0
            failed = not retrain and (m * 7 + r) % 50 == 0
            if retrain or failed:
                keys[m] = "%064x" % rnd.getrandbits(256)
            key = keys[m]
            job = "job-%d" % jid
            if retrain or failed:
                status = "failed" if failed else "ok"
                res = c.execute("INSERT INTO results(job_id,status,attempts,dead_letter,l1,l2,"
                                "artifact_manifest,queue_seq,msg,recorded_ms) VALUES(?,?,?,?,?,?,?,?,?,?)",
                                (job, status, 1, 0, "miss", "none" if failed else "miss",
                                 None if failed else "%064x" % jid, jid, "{}", t + 30000)).lastrowid
                if failed:
                    c.execute("INSERT INTO diagnostics(revision_id,result_id,diag_id,root_id,code,"
                              "severity,file,line,col,message) VALUES(?,?,?,?,?,?,?,?,?,?)",
                              (rid, res, 1, 1, 3003, "error", path, 3, 8, "relu gives f32[N,4], declared f32[N,5]"))
                miss = None if failed else ("new" if r == 0 else "weights")
                c.execute("INSERT INTO jobs(job_id,revision_id,pipeline,model_path,model_digest,target,"
                          "precision,opt_level,l2_key,state,runner,result_id,attempts,queued_ms,"
                          "started_ms,frontend_ms,passes_ms,codegen_ms,uploaded_ms,finished_ms,miss,"
                          "miss_reason) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                          (job, rid, "p", path, key, "x86_64-avx2", "fp32", "O2", key,
                           status, job, res, 1, t, t + 100, t + 400, t + 600, t + 5000, t + 5200, t + 30000,
                           miss, miss and "not found: structure unchanged, weights changed"))
            else:
                c.execute("INSERT INTO jobs(job_id,revision_id,pipeline,model_path,model_digest,target,"
                          "precision,opt_level,l2_key,state,runner,attempts,queued_ms) "
                          "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)",
                          (job, rid, "p", path, key, "x86_64-avx2", "fp32", "O2", key, "hit", job, 0, t))
    c.execute("COMMIT")
    last = c.execute("SELECT revision FROM revisions ORDER BY id DESC LIMIT 1").fetchone()[0]
    c.close()
    return last


def time_pages(port, rev, rounds):
    out = {}
    for page in PAGES:
        url = "http://127.0.0.1:%d%s" % (port, page.format(rev=rev.split(":")[-1]))
        t = []
        for i in range(rounds + 1):
            t0 = time.perf_counter()
            with urllib.request.urlopen(url, timeout=60) as r:
                body = r.read()
            if i:
                t.append((time.perf_counter() - t0) * 1e3)
        t.sort()
        out[page] = (t[len(t) // 2], t[-1], len(body))
    return out


def main():
    cuvil, work = sys.argv[1], sys.argv[2]
    revisions, models, rounds = (int(a) for a in (sys.argv[3:6] + ["1000", "100", "5"][len(sys.argv[3:6]):]))
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    repo = make_repo(work)
    state = os.path.join(work, "state")
    port = free_port()
    p = controller(cuvil, repo, state, port)
    try:
        revs = []
        for _ in range(400):    # the controller plans the repository's head
            revs = json.loads(urllib.request.urlopen(
                "http://127.0.0.1:%d/api/v1/revisions" % port).read())["revisions"]
            if revs:
                break
            time.sleep(0.05)
        if not revs:
            sys.exit("render_bench: the controller planned nothing")
        small = time_pages(port, revs[0]["revision"], rounds)
    finally:                    # never leave a controller behind
        p.terminate()
        p.wait()
    t0 = time.time()
    rev = fill(os.path.join(state, "build.db"), revisions, models)
    fill_s = time.time() - t0
    p = controller(cuvil, repo, state, port)
    try:
        big = time_pages(port, rev, rounds)
    finally:
        p.terminate()
        p.wait()
    print("bench/dashboard: %d revisions x %d models (%d jobs; filled in %.1f s), p50 and worst of %d "
          "fetches after a warm-up; load average %s" % (revisions, models, revisions * models, fill_s,
                                                        rounds, " ".join(open("/proc/loadavg").read().split()[:3])))
    print("| page | 1 revision p50 ms | %d revisions p50 ms | worst ms | ratio | bytes | under 200 ms |"
          % revisions)
    print("|---|---:|---:|---:|---:|---:|---|")
    for page in PAGES:
        s, b = small[page], big[page]
        print("| %s | %.1f | %.1f | %.1f | %.1f | %d | %s |" % (page, s[0], b[0], b[1], b[0] / s[0], b[2],
                                                               "yes" if b[1] < 200 else "NO"))


if __name__ == "__main__":
    main()
