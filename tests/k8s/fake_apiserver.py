#!/usr/bin/env python3
"""A fake Kubernetes API server for the operator's tests (no real API server
runs here).  It serves the endpoints the operator and kubectl use, with the
semantics fake_store.py describes, over HTTP/1.1 with chunked watch streams:

  GET    /api/v1/..., /apis/G/V/...   list (?labelSelector=k=v), get, watch
                                      (?watch=1&resourceVersion=N
                                      &timeoutSeconds=S&allowWatchBookmarks=1)
  POST   collection                   create
  PUT    object[/status]              replace (resourceVersion required)
  PATCH  object[/status]              application/merge-patch+json only
  DELETE object                       delete, with the owned objects (GC)
  GET    /api, /apis, /api/v1, /apis/G/V, /version   discovery (for kubectl)

Test controls (no authentication):
  GET  /fake/stats          {"writes", "lists", "gets", "watches", "requests": [...]}
  POST /fake/compact        drop the event history: older watches get 410
  POST /fake/drop-watches   end every open watch stream
  POST /fake/fail           {"method", "prefix", "code", "count"}: the next
                            count matching requests fail with code

Options: --token T (require "Authorization: Bearer T"), --tls-cert/--tls-key
(serve HTTPS), --client-ca (require a client certificate it signed).
Prints "listening PORT" once ready; stops when its stdin closes.
"""
import argparse
import json
import os
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fake_store import RESOURCES, ApiError, Store  # noqa: E402

MAX_BODY = 8 << 20
WATCH_MAX_S = 1800
STORE = Store()
OPTS = None


def parse_path(path):
    """(group, plural, namespace, name, subresource) or None."""
    parts = [p for p in path.split("/") if p]
    if parts[:2] == ["api", "v1"]:
        group, rest = "", parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, rest = parts[1], parts[3:]
    else:
        return None
    ns = ""
    if len(rest) >= 3 and rest[0] == "namespaces":
        ns, rest = rest[1], rest[2:]
    if not rest or (group, rest[0]) not in RESOURCES or len(rest) > 3:
        return None
    return (group, rest[0], ns, rest[1] if len(rest) > 1 else None,
            rest[2] if len(rest) > 2 else None)


def discovery(path):
    groups = {}
    for (g, plural), (v, kind, namespaced, has_status) in sorted(RESOURCES.items()):
        res = groups.setdefault((g, v), [])
        verbs = ["create", "delete", "get", "list", "patch", "update", "watch"]
        res.append({"name": plural, "singularName": kind.lower(), "namespaced": namespaced,
                    "kind": kind, "verbs": verbs})
        if has_status:
            res.append({"name": plural + "/status", "singularName": "", "namespaced": namespaced,
                        "kind": kind, "verbs": ["get", "patch", "update"]})
    if path == "/version":
        return {"major": "1", "minor": "30", "gitVersion": "v1.30.0-fake", "platform": "linux"}
    if path == "/api":
        return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}
    if path == "/apis":
        out = []
        for (g, v) in sorted(groups):
            if g:
                gv = {"groupVersion": "%s/%s" % (g, v), "version": v}
                out.append({"name": g, "versions": [gv], "preferredVersion": gv})
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": out}
    for (g, v), res in groups.items():
        if path == ("/api/%s" % v if not g else "/apis/%s/%s" % (g, v)):
            return {"kind": "APIResourceList", "apiVersion": "v1",
                    "groupVersion": "%s/%s" % (g, v) if g else v, "resources": res}
    if path.startswith("/apis/") and path.count("/") == 2:
        g = path.split("/")[2]
        for (gg, v) in groups:
            if gg == g:
                gv = {"groupVersion": "%s/%s" % (g, v), "version": v}
                return {"kind": "APIGroup", "apiVersion": "v1", "name": g, "versions": [gv],
                        "preferredVersion": gv}
    return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-apiserver"

    def log_message(self, fmt, *args):
        pass

    # ------------------------------------------------------------ replies
    def reply(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def chunk(self, obj):
        data = (json.dumps(obj) + "\n").encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def read_body(self):
        """Reads the whole body first, so that no answer (an error before the
        body is looked at) leaves it in the connection."""
        n = int(self.headers.get("Content-Length") or 0)
        if n > MAX_BODY:
            self.close_connection = True
            raise ApiError(413, "RequestEntityTooLarge", "the request is too large")
        self.raw_body = self.rfile.read(n) if n else b""

    def body(self):
        try:
            return json.loads(self.raw_body) if self.raw_body else None
        except ValueError as e:
            raise ApiError(400, "BadRequest", "the body is not JSON: %s" % e)

    # ------------------------------------------------------------ dispatch
    def handle_any(self, method):
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        self.raw_body = b""
        try:
            self.read_body()
            if url.path.startswith("/fake/"):
                return self.fake(method, url.path)
            self.authorize()
            with STORE.lock:
                STORE.stats["requests"].append([method, self.path,
                                                self.headers.get("Content-Type", "")])
                del STORE.stats["requests"][:-2000]
                self.inject_failure(method, url.path)
                if method != "GET":
                    STORE.stats["writes"] += 1
            if method == "GET":
                d = discovery(url.path)
                if d is not None:
                    return self.reply(200, d)
            target = parse_path(url.path)
            if target is None:
                raise ApiError(404, "NotFound", "the server could not find the requested "
                               "resource")
            return self.resource(method, target, query)
        except ApiError as e:
            self.reply(e.code, e.status())
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def authorize(self):
        if OPTS.token and self.headers.get("Authorization") != "Bearer " + OPTS.token:
            raise ApiError(401, "Unauthorized", "Unauthorized")

    def inject_failure(self, method, path):
        for f in STORE.failures:
            if f["count"] > 0 and f.get("method", method) == method and \
                    path.startswith(f.get("prefix", "/")):
                f["count"] -= 1
                raise ApiError(f["code"], "InternalError", "injected failure")

    def resource(self, method, target, query):
        group, plural, ns, name, sub = target
        if sub not in (None, "status"):
            raise ApiError(404, "NotFound", "no such subresource")
        if method == "GET" and name is None:
            if query.get("watch") in ("1", "true"):
                return self.watch(group, plural, ns, query)
            return self.reply(200, STORE.list(group, plural, ns, query.get("labelSelector")))
        if method == "GET":
            return self.reply(200, STORE.get(group, plural, ns, name))
        if method == "POST" and name is None:
            return self.reply(201, STORE.create(group, plural, ns, self.body()))
        if method == "PUT" and name:
            return self.reply(200, STORE.update(group, plural, ns, name, sub, self.body(), False))
        if method == "PATCH" and name:
            ctype = self.headers.get("Content-Type", "").split(";")[0].strip()
            if ctype != "application/merge-patch+json":
                raise ApiError(415, "UnsupportedMediaType",
                               "the body of the request was in an unknown format - accepted "
                               "media types include: application/merge-patch+json")
            return self.reply(200, STORE.update(group, plural, ns, name, sub, self.body(), True))
        if method == "DELETE" and name and sub is None:
            return self.reply(200, STORE.delete(group, plural, ns, name))
        raise ApiError(405, "MethodNotAllowed", "the server does not allow this method")

    def watch(self, group, plural, ns, query):
        rv = query.get("resourceVersion")
        rv = int(rv) if rv not in (None, "", "0") else None
        timeout = min(int(query.get("timeoutSeconds") or WATCH_MAX_S), WATCH_MAX_S)
        bookmarks = query.get("allowWatchBookmarks") in ("1", "true")
        try:
            events, rv, epoch = STORE.watch_start(group, plural, ns, rv)
        except ApiError as e:
            events, epoch = [("ERROR", e.status())], None
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        kind = RESOURCES[(group, plural)][1]
        api = "%s/%s" % (group, RESOURCES[(group, plural)][0]) if group else "v1"
        deadline = time.monotonic() + timeout
        open_ = epoch is not None
        while True:
            for etype, obj in events:
                self.chunk({"type": etype, "object": obj})
            if not open_:
                break
            events, rv, open_ = STORE.watch_wait(group, plural, ns, rv, epoch, deadline)
            if not open_ and not events and bookmarks and time.monotonic() >= deadline:
                events = [("BOOKMARK", {"kind": kind, "apiVersion": api,
                                        "metadata": {"resourceVersion": str(rv)}})]
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def fake(self, method, path):
        if method == "GET" and path == "/fake/stats":
            with STORE.lock:
                return self.reply(200, json.loads(json.dumps(STORE.stats)))
        if method == "POST" and path == "/fake/compact":
            self.body()
            return self.reply(200, {"compacted": STORE.compact()})
        if method == "POST" and path == "/fake/drop-watches":
            self.body()
            STORE.drop_watches()
            return self.reply(200, {})
        if method == "POST" and path == "/fake/fail":
            f = self.body()
            with STORE.lock:
                STORE.failures.append(f)
            return self.reply(200, {})
        raise ApiError(404, "NotFound", "no such test control")

    def do_GET(self):
        self.handle_any("GET")

    def do_POST(self):
        self.handle_any("POST")

    def do_PUT(self):
        self.handle_any("PUT")

    def do_PATCH(self):
        self.handle_any("PATCH")

    def do_DELETE(self):
        self.handle_any("DELETE")


def main():
    global OPTS
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--token")
    ap.add_argument("--tls-cert")
    ap.add_argument("--tls-key")
    ap.add_argument("--client-ca")
    OPTS = ap.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", OPTS.port), Handler)
    server.daemon_threads = True
    if OPTS.tls_cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(OPTS.tls_cert, OPTS.tls_key)
        if OPTS.client_ca:
            ctx.verify_mode = ssl.CERT_REQUIRED
            ctx.load_verify_locations(OPTS.client_ca)
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                     daemon=True).start()
    print("listening %d" % server.server_address[1], flush=True)
    sys.stdin.read()            # the test closes our stdin to stop us
    STORE.drop_watches()
    server.shutdown()


if __name__ == "__main__":
    main()
