#!/usr/bin/env python3
"""A stand-in for the Hugging Face Hub, for the tests of `-hf` (tests/hub/hub_test.cpp).

Usage: fake_hub.py ROOT PORT_FILE. Serves the repositories under ROOT/<org>/<name>/ on
127.0.0.1 (a free port, written to PORT_FILE once listening):

  GET  /api/models/<org>/<name>/tree/<rev>?recursive=true   the file list (JSON), .gguf files in
                                                            "LFS" with their SHA-256; 3 entries
                                                            a page, the next one in a Link header
  HEAD/GET /<org>/<name>/resolve/<rev>/<path>               302 to /cdn/<org>/<name>/<path>,
                                                            with X-Repo-Commit
  GET  /cdn/<org>/<name>/<path>                             the bytes; Range: bytes=N- → 206
  GET  /_stats                                              {"requests": n, "files": {path:
                                                            {"requests": n, "bytes": n}}}

ROOT/config.json sets misbehaviours by repository ("org/name"): "gated" (401 without
"Authorization: Bearer <token>"), "flaky" (the first download of each file stops halfway and
the connection closes), "bad_sha" (the listed SHA-256 is wrong), "stalled" (every download sends
half of the file, then holds the connection open without sending a byte for a minute).
"""
import hashlib
import http.server
import json
import os
import sys
import threading
import time
import urllib.parse

CHUNK = 64 * 1024
PAGE = 3  # tree entries per page
ROOT = ""
CONFIG = {}
LOCK = threading.Lock()
STATS = {"requests": 0, "files": {}}
DROPPED = set()
HASHES = {}


def file_hashes(path):
    with LOCK:
        if path in HASHES:
            return HASHES[path]
    data = open(path, "rb").read()
    sha256 = hashlib.sha256(data).hexdigest()
    git = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
    with LOCK:
        HASHES[path] = (sha256, git)
    return sha256, git


def commit_of(repo):
    return hashlib.sha1(repo.encode()).hexdigest()


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def send_json(self, status, obj, extra=None):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def authorized(self, repo):
        if repo not in CONFIG.get("gated", []):
            return True
        return self.headers.get("Authorization", "") == "Bearer " + CONFIG.get("token", "")

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        url = urllib.parse.urlparse(self.path)
        parts = [urllib.parse.unquote(p) for p in url.path.split("/") if p]
        if parts == ["_stats"]:
            with LOCK:
                return self.send_json(200, STATS)
        with LOCK:
            STATS["requests"] += 1
        if len(parts) >= 6 and parts[:2] == ["api", "models"] and parts[4] == "tree":
            query = urllib.parse.parse_qs(url.query)
            return self.tree(parts[2] + "/" + parts[3], int(query.get("cursor", ["0"])[0]))
        if len(parts) >= 5 and parts[2] == "resolve":
            return self.resolve(parts[0] + "/" + parts[1], parts[3], "/".join(parts[4:]))
        if len(parts) >= 4 and parts[0] == "cdn":
            return self.cdn(parts[1] + "/" + parts[2], "/".join(parts[3:]))
        self.send_json(404, {"error": "Not found"})

    def tree(self, repo, cursor):
        if not self.authorized(repo):
            return self.send_json(401, {"error": "Access to this repository is restricted"})
        base = os.path.join(ROOT, repo)
        if not os.path.isdir(base):
            return self.send_json(404, {"error": "Repository not found"})
        entries = []
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames.sort()
            for d in dirnames:
                rel = os.path.relpath(os.path.join(dirpath, d), base)
                entries.append({"type": "directory", "path": rel, "oid": "0" * 40, "size": 0})
            for f in sorted(filenames):
                full = os.path.join(dirpath, f)
                rel = os.path.relpath(full, base)
                size = os.path.getsize(full)
                sha256, git = file_hashes(full)
                e = {"type": "file", "path": rel, "size": size, "oid": git}
                if f.endswith(".gguf"):
                    if repo in CONFIG.get("bad_sha", []):
                        sha256 = hashlib.sha256(b"not these bytes").hexdigest()
                    e["lfs"] = {"oid": sha256, "size": size, "pointerSize": 134}
                entries.append(e)
        # Pages of PAGE entries linked by Link: <…>; rel="next", as the Hub paginates.
        extra = {}
        if cursor + PAGE < len(entries):
            host, port = self.server.server_address[:2]
            extra["Link"] = '<http://%s:%d%s?recursive=true&cursor=%d>; rel="next"' % (
                host, port, urllib.parse.urlparse(self.path).path, cursor + PAGE)
        self.send_json(200, entries[cursor:cursor + PAGE], extra)

    def resolve(self, repo, revision, path):
        if not self.authorized(repo):
            return self.send_json(401, {"error": "Access to this repository is restricted"})
        if not os.path.isfile(os.path.join(ROOT, repo, path)):
            return self.send_json(404, {"error": "Entry not found"})
        self.send_response(302)
        self.send_header("Location", "/cdn/" + repo + "/" + urllib.parse.quote(path))
        self.send_header("X-Repo-Commit", commit_of(repo))
        self.send_header("Content-Length", "0")
        self.end_headers()

    def cdn(self, repo, path):
        full = os.path.join(ROOT, repo, path)
        if not os.path.isfile(full):
            return self.send_json(404, {"error": "Entry not found"})
        data = open(full, "rb").read()
        start = 0
        rng = self.headers.get("Range", "")
        if rng.startswith("bytes=") and rng.endswith("-"):
            start = int(rng[len("bytes="):-1])
            if start >= len(data):
                return self.send_json(416, {"error": "Range not satisfiable"})
        body = data[start:]
        self.send_response(206 if start > 0 else 200)
        if start > 0:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, len(data) - 1, len(data)))
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        key = repo + "/" + path
        drop = False
        with LOCK:
            stats = STATS["files"].setdefault(key, {"requests": 0, "bytes": 0})
            stats["requests"] += 1
            if repo in CONFIG.get("flaky", []) and key not in DROPPED:
                DROPPED.add(key)
                drop = True
        stall = repo in CONFIG.get("stalled", [])
        limit = len(body) // 2 if drop or stall else len(body)
        sent = 0
        while sent < limit:
            n = min(CHUNK, limit - sent)
            self.wfile.write(body[sent:sent + n])
            sent += n
            with LOCK:
                stats["bytes"] += n
        if repo in CONFIG.get("stalled", []):
            self.wfile.flush()
            time.sleep(60)
            return
        if drop:
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(2)


def main():
    global ROOT, CONFIG
    ROOT = sys.argv[1]
    config = os.path.join(ROOT, "config.json")
    if os.path.exists(config):
        CONFIG = json.load(open(config))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    tmp = sys.argv[2] + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(tmp, sys.argv[2])
    server.serve_forever()


if __name__ == "__main__":
    main()
