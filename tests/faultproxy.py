#!/usr/bin/env python3
"""A scriptable HTTP proxy in front of a real cluster, for fault tests.

    tests/faultproxy.py --listen 19290 --upstream http://127.0.0.1:19200 \
        [--forbid PREFIX]... [--unreachable-nodes] [--pidfile F] [--max-seconds N]

--forbid PREFIX        answer 403 (security_exception) to paths starting with PREFIX
--unreachable-nodes    rewrite every publish_address in /_nodes answers to
                       127.0.0.1:1, as a cluster behind NAT or in containers looks
--max-seconds N        exit by itself after N seconds (default 900)

Only loopback addresses are accepted for --upstream and the listener.
"""
import argparse
import http.client
import http.server
import json
import os
import re
import sys
import threading
import urllib.parse

FORBIDDEN = json.dumps({
    "error": {"root_cause": [{"type": "security_exception", "reason": "no permissions"}],
              "type": "security_exception", "reason": "no permissions (fault proxy)"},
    "status": 403}).encode()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--listen", type=int, required=True)
    ap.add_argument("--upstream", required=True)
    ap.add_argument("--forbid", action="append", default=[])
    ap.add_argument("--unreachable-nodes", action="store_true")
    ap.add_argument("--pidfile")
    ap.add_argument("--max-seconds", type=int, default=900)
    args = ap.parse_args()
    up = urllib.parse.urlsplit(args.upstream)
    if up.hostname not in ("127.0.0.1", "localhost", "::1"):
        sys.exit("faultproxy: upstream must be on loopback")

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *a):
            pass

        def handle_any(self):
            n = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(n) if n else None
            path = self.path
            if any(path.startswith(p) for p in args.forbid):
                return self.reply(403, FORBIDDEN, "application/json")
            conn = http.client.HTTPConnection(up.hostname, up.port, timeout=120)
            headers = {k: v for k, v in self.headers.items()
                       if k.lower() not in ("host", "content-length", "accept-encoding",
                                            "connection")}
            conn.request(self.command, path, body=body, headers=headers)
            r = conn.getresponse()
            data = r.read()
            ctype = r.getheader("Content-Type", "application/json")
            conn.close()
            if args.unreachable_nodes and path.startswith("/_nodes"):
                data = re.sub(rb'"publish_address"\s*:\s*"[^"]*"',
                              b'"publish_address":"127.0.0.1:1"', data)
            self.reply(r.status, data, ctype)

        def reply(self, status, data, ctype):
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = handle_any

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", args.listen), Handler)
    srv.daemon_threads = True
    if args.pidfile:
        with open(args.pidfile, "w") as f:
            f.write(str(os.getpid()))
    threading.Timer(args.max_seconds, lambda: os._exit(0)).start()
    srv.serve_forever()


if __name__ == "__main__":
    main()
