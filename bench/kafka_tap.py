"""A pass-through HTTP proxy for bench/kafka.py's rebalance figure: forwards
every request to one cluster node and, for each _bulk request, notes when
its answer came back and how many documents of each partition it held (the
"p" field of the benchmark's documents; items that failed are not counted).
That gives documents indexed per partition per 100 ms without asking the
cluster anything while it works.
"""
import http.client
import http.server
import json
import re
import threading
import time
import urllib.parse

P_FIELD = re.compile(rb'"p":(\d+)')


class Tap:
    def __init__(self, upstream, port=0):
        u = urllib.parse.urlsplit(upstream)
        self.host, self.uport = u.hostname, u.port
        self.events = []      # (monotonic time of the answer, {partition: docs})
        self.lock = threading.Lock()
        tap = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_a):
                pass

            def do_any(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else None
                hdrs = {k: v for k, v in self.headers.items()
                        if k.lower() not in ("host", "content-length", "connection",
                                             "accept-encoding")}
                conn = http.client.HTTPConnection(tap.host, tap.uport, timeout=300)
                try:
                    conn.request(self.command, self.path, body=body, headers=hdrs)
                    r = conn.getresponse()
                    data = r.read()
                    status, rh = r.status, r.getheaders()
                finally:
                    conn.close()
                if body and "_bulk" in self.path and status == 200:
                    tap.note(body, data)
                self.send_response(status)
                for k, v in rh:
                    if k.lower() not in ("content-length", "connection", "transfer-encoding"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_HEAD = do_DELETE = do_any

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.t = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.t.start()

    def note(self, body, answer):
        t = time.monotonic()
        lines = body.split(b"\n")
        try:
            items = json.loads(answer).get("items", [])
        except ValueError:
            return
        # action and source lines alternate (the benchmark only indexes)
        sources = [ln for k, ln in enumerate(lines) if k % 2 == 1 and ln]
        per = {}
        for src, item in zip(sources, items):
            res = next(iter(item.values()), {})
            if res.get("status", 500) >= 300:
                continue
            m = P_FIELD.search(src)
            if m:
                p = int(m.group(1))
                per[p] = per.get(p, 0) + 1
        with self.lock:
            self.events.append((t, per))

    def snapshot(self):
        with self.lock:
            return list(self.events)

    def close(self):
        self.server.shutdown()
        self.server.server_close()
