#!/usr/bin/python3
"""Chaos tests of the stores: a full disk under the cache, a remote cache
killed in the middle of uploads.

    store_chaos.py CUVIL WORKDIR [--models N] SCENARIO...

Scenarios:
  diskfull  the farm's cache directory is a small tmpfs (root only; skipped
            otherwise).  A cold build must end with every job ok or infra
            (no failed, ice or hang), the cache must verify clean (nothing
            corrupt or partial left), and after the tmpfs is enlarged a
            rebuild must succeed with artifacts identical to an undisturbed
            build.
  remote    `cuvil cache serve` is killed with SIGKILL in the middle of PUTs
            of large blobs, and restarted on the same directory: no partial
            blob is ever served (GET/HEAD answer 404, or bytes that hash to
            the name); a PUT whose bytes do not hash to the name is refused;
            a byte flipped in a stored blob is never served.  Then a farm
            build with the remote is run while the server is killed and
            restarted twice: every job ok, and every blob the server holds
            verifies.
"""
import argparse
import hashlib
import http.client
import os
import random
import re
import signal
import socket
import subprocess
import sys
import time

sys.dont_write_bytecode = True   # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import farm_chaos  # noqa: E402  (repository and artifact helpers)


def farm_up(a, state, cache, remote=None, check=False):
    env = dict(os.environ, CUVIL_CACHE_DIR=cache, CUVIL_REMOTE_CACHE=remote or "")
    cmd = [a.cuvil, "farm", "up", a.repo, "--once", "--workers", "2", "--state", state,
           "--cache", cache]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=a.deadline)
    if check and p.returncode != 0:
        raise SystemExit("chaos: farm up failed:\n%s%s" % (p.stdout, p.stderr[-2000:]))
    return p


def job_states(state):
    c = farm_chaos.sqlite3.connect("file:%s?mode=ro" % os.path.join(state, "build.db"), uri=True)
    rows = dict(c.execute("SELECT state, COUNT(*) FROM jobs GROUP BY state").fetchall())
    c.close()
    return rows


def verify_cache(a, d):
    p = subprocess.run([a.cuvil, "cache", "verify", "--dir", d], capture_output=True, text=True)
    return p.returncode, (p.stdout + p.stderr).strip().splitlines()[-1:] or [""]


# ------------------------------------------------------------------ disk full

def diskfull(a, ref, jobs):
    if os.geteuid() != 0:
        return [], "skipped (needs root for a tmpfs mount)"
    mnt = os.path.join(a.work, "small-cache")
    os.makedirs(mnt, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%dk" % a.tmpfs_kb, "tmpfs", mnt],
                   check=True)
    bad, summary = [], ""
    try:
        st1 = os.path.join(a.work, "full-state")
        p = farm_up(a, st1, mnt)
        states = job_states(st1)
        if set(states) - {"ok", "hit", "infra"}:
            bad.append("jobs on a full disk: %r (want only ok and infra)" % states)
        if not states.get("infra"):
            bad.append("the disk never filled (%r): make the tmpfs smaller" % states)
        subprocess.run(["mount", "-o", "remount,size=256m", mnt], check=True)
        rc, last = verify_cache(a, mnt)   # (verify writes the index: after the remount)
        if rc != 0:
            bad.append("cache verify after the full disk: rc %d %s" % (rc, last))
        st2 = os.path.join(a.work, "resumed-state")
        p = farm_up(a, st2, mnt)
        states2 = job_states(st2)
        if p.returncode != 0 or set(states2) - {"ok", "hit"}:
            bad.append("rebuild once space returned: rc %d, %r" % (p.returncode, states2))
        elif farm_chaos.artifact_diff(ref, farm_chaos.artifact_set(st2), farm_chaos.same_files_fn(
                a.cuvil, a.work, (a.ref_state, a.ref_cache), (st2, mnt))):
            bad.append("artifacts after the full disk differ from the undisturbed build")
        rc, last = verify_cache(a, mnt)
        if rc != 0:
            bad.append("cache verify at the end: rc %d %s" % (rc, last))
        summary = "full disk: %s; after space returned: %s" % (
            ", ".join("%s %d" % kv for kv in sorted(states.items())),
            ", ".join("%s %d" % kv for kv in sorted(states2.items())))
    finally:
        subprocess.run(["umount", "-l", mnt])
    return bad, summary


# ------------------------------------------------------------------ remote

class Server:
    def __init__(self, a, d):
        self.a, self.d, self.p, self.port = a, d, None, 0

    def start(self):
        self.p = subprocess.Popen([self.a.cuvil, "cache", "serve", "--listen",
                                   "127.0.0.1:%d" % self.port, "--dir", self.d],
                                  stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        line = self.p.stderr.readline()
        m = re.search(r"port (\d+)", line)
        if not m:
            raise SystemExit("chaos: cache serve did not start: %s" % line)
        self.port = int(m.group(1))

    def kill(self):
        self.p.send_signal(signal.SIGKILL)
        self.p.wait()

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        self.p.wait()


def request(port, method, path, body=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request(method, path, body=body)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


def partial_put(port, name, blob, frac, on_sent):
    """Sends headers and part of the body, then calls on_sent (the kill)."""
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(("PUT /cas/%s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n"
               % (name, len(blob))).encode())
    s.sendall(blob[:int(len(blob) * frac)])
    time.sleep(0.1)
    on_sent()
    s.close()


def served_ok(port, name):
    """True when the server never serves bytes that do not hash to name."""
    st, data = request(port, "GET", "/cas/" + name)
    if st == 404:
        return True
    return st == 200 and hashlib.sha256(data).hexdigest() == name


def remote(a, ref, jobs):
    rng = random.Random(a.seed)
    d = os.path.join(a.work, "remote-store")
    srv = Server(a, d)
    srv.start()
    bad = []
    kills = 0
    names = []
    for i in range(a.uploads):
        blob = os.urandom(rng.randint(1, 8) << 20)
        name = hashlib.sha256(blob).hexdigest()
        names.append((name, blob))
        partial_put(srv.port, name, blob, rng.uniform(0.1, 0.95), srv.kill)
        kills += 1
        srv.start()
        for n, _ in names:
            if not served_ok(srv.port, n):
                bad.append("a partial upload of %s.. was served" % n[:12])
        st, _ = request(srv.port, "HEAD", "/cas/" + name)
        if st != 404:
            bad.append("HEAD of a killed upload answered %d" % st)
    # a whole PUT now works, and a PUT under the wrong name is refused
    name, blob = names[0]
    st, _ = request(srv.port, "PUT", "/cas/" + name, blob)
    if st != 200 or not served_ok(srv.port, name) or request(srv.port, "GET", "/cas/" + name)[0] != 200:
        bad.append("a complete PUT after the kills failed (%d)" % st)
    st, _ = request(srv.port, "PUT", "/cas/" + names[1][0], blob)
    if st != 400 or request(srv.port, "GET", "/cas/" + names[1][0])[0] != 404:
        bad.append("a PUT whose bytes do not hash to the name answered %d" % st)
    # a byte flipped on disk is never served (the server checks XXH3 on read)
    path = os.path.join(d, "cas", name[:2], name)
    with open(path, "r+b") as f:
        f.seek(os.path.getsize(path) // 2)
        c = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([c[0] ^ 0x5a]))
    if request(srv.port, "GET", "/cas/" + name)[0] != 404:
        bad.append("a blob with a flipped byte was served")
    srv.stop()
    # a farm build with the remote, the server killed and restarted twice
    srv.start()
    url = "http://127.0.0.1:%d" % srv.port
    state, cache = os.path.join(a.work, "remote-state"), os.path.join(a.work, "remote-cache")
    env = dict(os.environ, CUVIL_CACHE_DIR=cache, CUVIL_REMOTE_CACHE=url)
    p = subprocess.Popen([a.cuvil, "farm", "up", a.repo, "--once", "--workers", "2", "--state",
                          state, "--cache", cache, "--remote-cache", url], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for mark in (jobs // 3, 2 * jobs // 3):
        while p.poll() is None:
            try:
                c = farm_chaos.sqlite3.connect("file:%s?mode=ro" % os.path.join(state, "build.db"),
                                               uri=True, timeout=10)
                done = c.execute("SELECT COUNT(*) FROM jobs WHERE state != 'queued'").fetchone()[0]
                c.close()
            except farm_chaos.sqlite3.Error:
                done = 0
            if done >= mark:
                break
            time.sleep(0.05)
        if p.poll() is None:
            srv.kill()
            kills += 1
            time.sleep(0.5)
            srv.start()
    out, _ = p.communicate(timeout=a.deadline)
    states = job_states(state)
    if p.returncode != 0 or set(states) - {"ok", "hit"}:
        bad.append("farm build with a killed remote: rc %d, %r" % (p.returncode, states))
    elif farm_chaos.artifact_diff(ref, farm_chaos.artifact_set(state), farm_chaos.same_files_fn(
            a.cuvil, a.work, (a.ref_state, a.ref_cache), (state, cache))):
        bad.append("artifacts with a killed remote differ from the undisturbed build")
    srv.stop()
    rc, last = verify_cache(a, d)
    if rc != 0:
        bad.append("the remote's store does not verify: %s" % last)
    summary = "%d server kills (%d mid-upload), %d partial uploads never served; farm build " \
              "with the remote killed twice: %s" % (kills, a.uploads, a.uploads,
                                                   ", ".join("%s %d" % kv for kv in
                                                             sorted(states.items())))
    return bad, summary


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cuvil")
    ap.add_argument("work")
    ap.add_argument("scenarios", nargs="+", choices=("diskfull", "remote"))
    ap.add_argument("--models", type=int, default=30)
    ap.add_argument("--tmpfs-kb", type=int, default=1200)
    ap.add_argument("--uploads", type=int, default=5)
    ap.add_argument("--deadline", type=int, default=900)
    ap.add_argument("--seed", type=int, default=int(time.time()))
    a = ap.parse_args()
    a.repo = os.path.join(a.work, "repo")
    if not os.path.exists(a.repo):
        farm_chaos.make_repo(a.repo, a.models)
    jobs = a.models * len(farm_chaos.TARGETS)
    a.ref_state, a.ref_cache = os.path.join(a.work, "ref-state"), os.path.join(a.work, "ref-cache")
    if not os.path.exists(a.ref_state):
        farm_up(a, a.ref_state, a.ref_cache, check=True)
    ref = farm_chaos.artifact_set(a.ref_state)
    failed = False
    for sc in a.scenarios:
        t0 = time.monotonic()
        bad, summary = diskfull(a, ref, jobs) if sc == "diskfull" else remote(a, ref, jobs)
        print("chaos %s: %d jobs, %.1f s: %s" % (sc, jobs, time.monotonic() - t0,
                                               "ok: " + summary if not bad else
                                               "FAILED: " + "; ".join(bad) + " (" + summary + ")"))
        failed = failed or bool(bad)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
