#!/usr/bin/python3
"""Chaos tests of the farm: processes killed with SIGKILL mid-build.

    farm_chaos.py CUVIL WORKDIR [--models N] [--kill-every S] [--queue sqlite|kafka]
                  [--kafka-mock PATH] [--kafka-config K=V&...] [--static] SCENARIO...

Scenarios:
  workers     a cold build of N models x 2 targets by `cuvil controller --once`
              and 2 `cuvil worker` processes; every S seconds (randomised) one
              worker is killed with SIGKILL and a fresh one started (with
              --static, under the killed one's worker id: Kafka static group
              membership, as a StatefulSet restarts a pod under its name).
  controller  the same build; the controller is killed with SIGKILL twice
              (a third and two thirds of the way) and started again.
Checks, against an undisturbed `cuvil farm up --once` of the same repository:
every job ends ok with exactly one result row, no job is lost or added, the
artifact set (model, target, precision -> manifest digest, i.e. every file
by content) is identical, and `PRAGMA integrity_check` passes on the build
DB and the queue.  Prints one line per scenario; exits 1 on any violation.
"""
import argparse
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time

TARGETS = ("x86_64", "x86_64-avx2")
# A short session: librdkafka's mock cluster waits session.timeout.ms - 1 s
# for members to rejoin and drops a dead one after session.timeout.ms, so a
# 4 s session starved the group of time between kills every ~4 s (160 of
# 200 jobs in 900 s); 1.5 s does not (docs/reliability.md).  Real brokers
# refuse sessions under group.min.session.timeout.ms (6 s by default):
# there, static membership (--static) is what avoids the rebalances.
KAFKA_CONF = ("&session.timeout.ms=1500&heartbeat.interval.ms=200&max.poll.interval.ms=4000"
              "&fetch.wait.max.ms=10")


def git(repo, *args):
    subprocess.run(["git", "-C", repo, "-c", "user.name=chaos", "-c", "user.email=c@cuvil.dev",
                    *args], check=True, stdout=subprocess.DEVNULL)


def make_repo(repo, n):
    os.makedirs(os.path.join(repo, "cuvil"))
    os.makedirs(os.path.join(repo, "models"))
    subprocess.run(["git", "init", "-q", "-b", "main", repo], check=True)
    with open(os.path.join(repo, "cuvil", "p.yaml"), "w") as f:
        f.write("apiVersion: cuvil.dev/v1\nkind: CuvilPipeline\nmetadata: {name: chaos}\n"
                "spec:\n  models: [\"models/*.cuir\"]\n  targets: [%s]\n  precisions: [fp32]\n"
                % ", ".join(TARGETS))
    rng = random.Random(11)
    for i in range(n):
        vals = ", ".join("%.6f" % rng.uniform(-1, 1) for _ in range(8))
        with open(os.path.join(repo, "models", "m%03d.cuir" % i), "w") as f:
            f.write("cuir 1\nmodel @m%d(%%x: f32[N,8]) -> (f32[N,8]) {\n"
                    "  param %%b: f32[8] = dense(%s)\n  %%0 = add(%%x, %%b) : f32[N,8]\n"
                    "  %%1 = relu(%%0) : f32[N,8]\n  return %%1\n}\n" % (i, vals))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "models")


class Farm:
    """A controller and its workers, started and killed by hand."""

    def __init__(self, a, tag, queue_url):
        self.a = a
        self.state = os.path.join(a.work, tag + "-state")
        self.cache = os.path.join(a.work, tag + "-cache")
        self.queue = queue_url or "sqlite:" + os.path.join(self.state, "queue.db")
        self.env = dict(os.environ, CUVIL_CACHE_DIR=self.cache, CUVIL_REMOTE_CACHE="")
        self.ctl = None
        self.workers = []
        self.kills = 0
        self.wn = 0
        self.free_ids = []   # --static: ids of killed workers, to be reused
        for d in (self.state, self.cache):   # a cold build, also when WORKDIR is reused
            shutil.rmtree(d, ignore_errors=True)
        os.makedirs(self.state)

    def start_controller(self):
        log = open(os.path.join(self.state, "controller.log"), "a")
        self.ctl = subprocess.Popen([self.a.cuvil, "controller", self.a.repo, "--once",
                                     "--state", self.state, "--cache", self.cache,
                                     "--queue", self.queue], env=self.env, stdout=log,
                                    stderr=subprocess.STDOUT)

    def start_worker(self):
        self.wn += 1
        wid = self.free_ids.pop(0) if self.free_ids else "chaos-%d" % self.wn
        log = open(os.path.join(self.state, "chaos-worker-%d.log" % self.wn), "w")
        p = subprocess.Popen([self.a.cuvil, "worker", "--queue", self.queue, "--trees",
                              os.path.join(self.state, "trees"), "--cache", self.cache,
                              "--id", wid, "--lease", str(self.a.lease),
                              "--poll-ms", "100"], env=self.env, stdout=log,
                             stderr=subprocess.STDOUT)
        p.chaos_id = wid
        self.workers.append(p)

    def attempt_of(self, worker_id):
        """The attempt number of the job a worker holds (SQLite queue), 0 if
        none or unknown."""
        if self.a.queue != "sqlite":
            return 0
        try:
            c = sqlite3.connect("file:%s?mode=ro" % os.path.join(self.state, "queue.db"),
                                uri=True, timeout=10)
            r = c.execute("SELECT MAX(j.attempt) FROM workers w JOIN jobs j ON j.job_id = "
                          "w.job_id AND j.state = 'leased' WHERE w.id = ?",
                          (worker_id,)).fetchone()
            c.close()
            return r[0] or 0
        except sqlite3.Error:
            return 0

    def busy(self):
        """Whether some worker holds a job (SQLite queue; False otherwise)."""
        if self.a.queue != "sqlite":
            return False
        try:
            c = sqlite3.connect("file:%s?mode=ro" % os.path.join(self.state, "queue.db"),
                                uri=True, timeout=10)
            n = c.execute("SELECT COUNT(*) FROM workers w JOIN jobs j ON j.job_id = w.job_id "
                          "AND j.state = 'leased'").fetchone()[0]
            c.close()
            return n > 0
        except sqlite3.Error:
            return False

    def kill_worker(self, rng):
        # A job killed on its last attempt is dead-lettered (infra), by
        # design: spare workers on a job's last attempt (SQLite shows them).
        live = [p for p in self.workers if p.poll() is None and
                self.attempt_of(p.chaos_id) < self.a.max_attempts]
        if not live:
            return
        victim = rng.choice(live)
        victim.send_signal(signal.SIGKILL)
        victim.wait()
        self.workers.remove(victim)
        self.kills += 1
        if self.a.static:
            self.free_ids.append(victim.chaos_id)

    def reap(self):
        self.workers = [p for p in self.workers if p.poll() is None]

    def stop_workers(self):
        for p in self.workers:
            p.send_signal(signal.SIGTERM)
        for p in self.workers:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.workers = []

    def db(self):
        return sqlite3.connect("file:%s?mode=ro" % os.path.join(self.state, "build.db"),
                               uri=True, timeout=10)

    def results_recorded(self):
        try:
            c = self.db()
            n = c.execute("SELECT COUNT(*) FROM jobs WHERE state != 'queued'").fetchone()[0]
            c.close()
            return n
        except sqlite3.Error:
            return 0


def artifact_set(state):
    """(model, target, precision) -> (L2 key, manifest digest); the manifest
    is None for a job that hit the cache at planning (found through its key)."""
    c = sqlite3.connect("file:%s?mode=ro" % os.path.join(state, "build.db"), uri=True)
    rows = c.execute("SELECT model_path, target, precision, l2_key, manifest FROM artifacts "
                     "WHERE revision_id = (SELECT MAX(id) FROM revisions)").fetchall()
    c.close()
    return {(m, t, p): (k, man) for m, t, p, k, man in rows}


def artifact_diff(ref, got, same_files=None):
    """Entries that differ: by manifest digest (every file by content) where
    both runs recorded one; else, when same_files is given, by the files
    themselves (same_files(key) -> bool); else counted as different."""
    bad = []
    for k in set(ref) | set(got):
        a, b = ref.get(k), got.get(k)
        if not a or not b:
            bad.append(k)
        elif a[1] and b[1]:
            if a[1] != b[1]:
                bad.append(k)
        elif not same_files or not same_files(k):
            bad.append(k)
    return sorted(bad)


def fetched_files(cuvil, state, cache, key, out):
    """{name: bytes} of one artifact as `cuvil artifacts get` writes it."""
    model, target, precision = key
    p = subprocess.run([cuvil, "artifacts", "get", "latest", model, target, precision, "-o", out,
                        "--state", state, "--cache", cache], capture_output=True, text=True,
                       env=dict(os.environ, CUVIL_REMOTE_CACHE=""))
    if p.returncode != 0:
        return None
    files = {}
    for name in os.listdir(out):
        with open(os.path.join(out, name), "rb") as f:
            files[name] = f.read()
    return files


def same_files_fn(cuvil, work, a, b):
    """same_files for artifact_diff: fetches the artifact from two farms
    (state, cache) and compares every file byte for byte."""
    n = [0]

    def same(key):
        n[0] += 1
        fa = fetched_files(cuvil, a[0], a[1], key, os.path.join(work, "fetch-a-%d" % n[0]))
        fb = fetched_files(cuvil, b[0], b[1], key, os.path.join(work, "fetch-b-%d" % n[0]))
        return fa is not None and fa == fb
    return same


def integrity(path):
    if not os.path.exists(path):
        return "absent"
    c = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    r = c.execute("PRAGMA integrity_check").fetchall()
    c.close()
    return "ok" if r == [("ok",)] else repr(r[:3])


def check(farm, ref, jobs):
    """Violations of the farm's promises, as strings."""
    bad = []
    c = farm.db()
    rev = c.execute("SELECT id, state FROM revisions ORDER BY id").fetchall()
    if len(rev) != 1 or rev[0][1] != "succeeded":
        bad.append("revisions: %r (want one, succeeded)" % rev)
    states = dict(c.execute("SELECT state, COUNT(*) FROM jobs GROUP BY state").fetchall())
    total = sum(states.values())
    if total != jobs or set(states) - {"ok", "hit"}:
        bad.append("jobs by state %r (want %d, all ok)" % (states, jobs))
    no_result = c.execute("SELECT COUNT(*) FROM jobs WHERE result_id IS NULL").fetchone()[0]
    if no_result:
        bad.append("%d jobs without a result" % no_result)
    dups = c.execute("SELECT COUNT(*) FROM (SELECT job_id FROM results GROUP BY job_id "
                     "HAVING COUNT(*) > 1)").fetchone()[0]
    if dups:
        bad.append("%d jobs with more than one result row" % dups)
    nres = c.execute("SELECT COUNT(*) FROM results").fetchone()[0]
    c.close()
    arts = artifact_set(farm.state)
    diff = artifact_diff(ref, arts)
    if diff or any(m is None for _, m in arts.values()):
        bad.append("artifact set differs from the undisturbed run in %d entries, e.g. %r"
                   % (len(diff), diff[:3]))
    for db in ("build.db", "queue.db"):
        ic = integrity(os.path.join(farm.state, db))
        if ic not in ("ok", "absent"):
            bad.append("%s integrity_check: %s" % (db, ic))
    return bad, nres


def reference(a, jobs):
    state, cache = os.path.join(a.work, "ref-state"), os.path.join(a.work, "ref-cache")
    env = dict(os.environ, CUVIL_CACHE_DIR=cache, CUVIL_REMOTE_CACHE="")
    # An earlier run in the same WORKDIR built the same repository: reuse it
    # (the undisturbed build takes minutes with the sanitized binary).
    if not os.path.exists(os.path.join(state, "build.db")):
        p = subprocess.run([a.cuvil, "farm", "up", a.repo, "--once", "--workers", "2", "--state",
                            state, "--cache", cache], env=env, capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit("chaos: the undisturbed build failed:\n%s%s" % (p.stdout, p.stderr[-2000:]))
    ref = artifact_set(state)
    if len(ref) != jobs:
        sys.exit("chaos: the undisturbed build made %d artifacts, want %d" % (len(ref), jobs))
    return ref


def wait_for(path, timeout):
    t0 = time.monotonic()
    while not os.path.exists(path):
        if time.monotonic() - t0 > timeout:
            return False
        time.sleep(0.05)
    return True


def run_workers(a, ref, jobs, rng, queue_url):
    farm = Farm(a, "workers-" + a.queue, queue_url)
    farm.start_controller()
    if a.queue == "sqlite" and not wait_for(os.path.join(farm.state, "queue.db"), 60):
        return farm, ["the controller made no queue"]
    for _ in range(2):
        farm.start_worker()
    t0 = time.monotonic()
    next_kill = t0 + rng.uniform(0.5, 1.5) * a.kill_every
    while farm.ctl.poll() is None:
        if time.monotonic() - t0 > a.deadline:
            farm.ctl.kill()
            farm.stop_workers()
            return farm, ["no completion within %d s" % a.deadline]
        time.sleep(0.05)
        farm.reap()
        # the first kill as soon as a worker is busy, so even a fast build
        # sees one
        due = time.monotonic() >= next_kill or (farm.kills == 0 and farm.busy())
        if due and farm.results_recorded() < jobs:
            farm.kill_worker(rng)
            next_kill = time.monotonic() + rng.uniform(0.5, 1.5) * a.kill_every
        while len(farm.workers) < 2:
            farm.start_worker()
    farm.stop_workers()
    bad = [] if farm.ctl.returncode == 0 else ["controller exit %d" % farm.ctl.returncode]
    return farm, bad


def run_controller(a, ref, jobs, rng, queue_url):
    farm = Farm(a, "controller-" + a.queue, queue_url)
    farm.start_controller()
    if a.queue == "sqlite" and not wait_for(os.path.join(farm.state, "queue.db"), 60):
        return farm, ["the controller made no queue"]
    for _ in range(2):
        farm.start_worker()
    t0 = time.monotonic()
    marks = [jobs // 3, 2 * jobs // 3]
    while farm.ctl.poll() is None or marks:
        if time.monotonic() - t0 > a.deadline:
            if farm.ctl.poll() is None:
                farm.ctl.kill()
            farm.stop_workers()
            return farm, ["no completion within %d s" % a.deadline]
        time.sleep(0.05)
        if farm.ctl.poll() is not None and marks:
            break  # finished before the last kill: fewer kills, still checked
        if marks and farm.results_recorded() >= marks[0]:
            marks.pop(0)
            time.sleep(rng.uniform(0, 0.3))
            farm.ctl.send_signal(signal.SIGKILL)
            farm.ctl.wait()
            farm.kills += 1
            farm.start_controller()
    farm.ctl.wait()
    farm.stop_workers()
    bad = [] if farm.ctl.returncode == 0 else ["controller exit %d" % farm.ctl.returncode]
    return farm, bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cuvil")
    ap.add_argument("work")
    ap.add_argument("scenarios", nargs="+", choices=("workers", "controller"))
    ap.add_argument("--models", type=int, default=100)
    ap.add_argument("--kill-every", type=float, default=3.0)
    ap.add_argument("--lease", type=int, default=2)
    ap.add_argument("--max-attempts", type=int, default=3)
    ap.add_argument("--deadline", type=int, default=900)
    ap.add_argument("--queue", choices=("sqlite", "kafka"), default="sqlite")
    ap.add_argument("--kafka-mock")
    ap.add_argument("--kafka-config", default=KAFKA_CONF[1:],
                    help="librdkafka settings for the Kafka URL (K=V&K=V)")
    ap.add_argument("--static", action="store_true",
                    help="Kafka static membership; restarted workers reuse the killed ids")
    ap.add_argument("--seed", type=int, default=int(time.time()))
    a = ap.parse_args()
    a.repo = os.path.join(a.work, "repo")
    if not os.path.exists(a.repo):
        make_repo(a.repo, a.models)
    jobs = a.models * len(TARGETS)
    rng = random.Random(a.seed)
    t0 = time.monotonic()
    ref = reference(a, jobs)
    print("chaos: %d jobs; undisturbed build %.1f s (seed %d)" % (jobs, time.monotonic() - t0,
                                                                 a.seed))
    mock = None
    failed = False
    try:
        for sc in a.scenarios:
            url = None
            if a.queue == "kafka":
                if mock is None:
                    mock = subprocess.Popen([a.kafka_mock, "--exit-on-stdin-eof", "--brokers",
                                             "3", "--partitions", "6"] + ["c%d" % i for i in
                                                                          range(8)],
                                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                            text=True)
                    boot = mock.stdout.readline().strip()
                url = "kafka://%s?topic_prefix=c%d&%s%s" % (
                    boot, a.scenarios.index(sc), a.kafka_config,
                    "&static_membership=true" if a.static else "")
            t1 = time.monotonic()
            run = run_workers if sc == "workers" else run_controller
            farm, bad = run(a, ref, jobs, rng, url)
            if not bad:
                more, nres = check(farm, ref, jobs)
                bad += more
            else:
                nres = -1
            print("chaos %s (%s): %d kills, %d jobs, %d result rows, %.1f s: %s"
                  % (sc, a.queue, farm.kills, jobs, nres, time.monotonic() - t1,
                     "ok, artifacts identical, integrity ok" if not bad else "; ".join(bad)))
            failed = failed or bool(bad)
    finally:
        if mock:
            mock.stdin.close()
            mock.wait()
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
