#!/usr/bin/env python3
"""A scriptable HTTP proxy in front of a real cluster, for fault tests.

    tests/faultproxy.py --listen 19290 --upstream http://127.0.0.1:19200 \
        [--forbid PREFIX]... [--unreachable-nodes] [--pidfile F] [--max-seconds N] \
        [--max-body N] [--fail-first N:STATUS[:KIND]] [--fail-every K:STATUS[:KIND]] \
        [--skip-bulk N] [--drop-after-send N] [--garbage N] [--require-auth VALUE] \
        [--require-header "NAME: VALUE"]... \
        [--tls CERT KEY] [--slow-meta SECONDS] [--stall-file F] [--log FILE]

--forbid PREFIX        answer 403 (security_exception) to paths starting with PREFIX
--unreachable-nodes    rewrite every publish_address in /_nodes answers to
                       127.0.0.1:1, as a cluster behind NAT or in containers looks
--max-seconds N        exit by itself after N seconds (default 900)
--pidfile F            write the proxy's pid to F once it listens

Faults (checked in this order; a request gets at most one):
--require-auth VALUE   answer 401 (security_exception) to any request whose
                       Authorization header is not exactly VALUE ("Basic dTpw",
                       "ApiKey abc", "Bearer tok")
--require-header "NAME: VALUE"
                       answer 403 (security_exception) to any request that does
                       not carry header NAME exactly once, with exactly VALUE
                       (empty: an empty value); repeatable
--max-body N           answer 413 with nginx's HTML page to any request whose body
                       is larger than N bytes (the body is read first)
--skip-bulk N          the first N _bulk requests (path contains "_bulk") pass
                       untouched; the _bulk faults below count from the next one
--fail-first N:STATUS[:KIND]
                       the first N _bulk requests get STATUS without being
                       forwarded. KIND is the body: json (an Elasticsearch-shaped
                       error), html (an nginx page) or empty; default json for 429,
                       html otherwise
--fail-every K:STATUS[:KIND]
                       every K-th _bulk request gets STATUS (1: all of them)
--drop-after-send N    the first N _bulk requests (not failed above) are forwarded,
                       applied by the cluster, and the client connection is then
                       closed without an answer: "the node died after the request
                       was sent"
--garbage N            the first N _bulk answers (not dropped above) are forwarded
                       cut to half their bytes, Content-Length adjusted
--tls CERT KEY         serve HTTPS with that certificate chain and key (PEM)
--slow-meta SECONDS    hold every request that is not a _bulk (GET /, /_nodes,
                       /_cluster/state, /_alias, /_data_stream, /_resolve,
                       /_settings, /_search_shards, ...) for SECONDS (a
                       fraction allowed, at most 600) before forwarding it;
                       _bulk requests pass at once. Each connection has its own
                       thread, so a held request delays nothing else. Logged
                       with FAULT slow-meta (when no other fault applies)
--stall-file F         while the file F exists, hold every request (read in
                       full, not forwarded) until F is removed (or --max-seconds
                       ends the proxy): a cluster that stalls every answer.
                       Logged with FAULT stall (when no other fault applies)
--log FILE             append one line per request:
                       METHOD PATH BODY_BYTES STATUS FAULT ACCEPT_ENCODING
                       (STATUS 0 when no answer was sent; FAULT is one of
                       forwarded, auth, max-body, forbid, fail-first, fail-every,
                       drop, garbage, slow-meta, bad-request; ACCEPT_ENCODING is the
                       request's header without blanks, "-" when absent. The
                       header itself is not passed on: answers are never
                       compressed)

Only loopback addresses are accepted for --upstream and the listener.
"""
import argparse
import http.client
import http.server
import json
import os
import re
import ssl
import sys
import threading
import time
import urllib.parse

FORBIDDEN = json.dumps({
    "error": {"root_cause": [{"type": "security_exception", "reason": "no permissions"}],
              "type": "security_exception", "reason": "no permissions (fault proxy)"},
    "status": 403}).encode()

UNAUTHORIZED = json.dumps({
    "error": {"type": "security_exception", "reason": "missing authentication credentials"},
    "status": 401}).encode()

MISSING_HEADER = json.dumps({
    "error": {"type": "security_exception",
              "reason": "a required header is missing or wrong (fault proxy)"},
    "status": 403}).encode()

# nginx's wording of its error pages
NGINX_TEXT = {
    413: "Request Entity Too Large",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Temporarily Unavailable",
    504: "Gateway Time-out",
}


def html_page(status):
    text = NGINX_TEXT.get(status)
    if text is None:
        try:
            text = http.HTTPStatus(status).phrase
        except ValueError:
            text = "Error"
    return ("<html>\r\n<head><title>%d %s</title></head>\r\n<body>\r\n"
            "<center><h1>%d %s</h1></center>\r\n<hr><center>nginx</center>\r\n"
            "</body>\r\n</html>\r\n" % (status, text, status, text)).encode()


def json_error(status):
    if status == 429:
        kind = "es_rejected_execution_exception"
        reason = ("rejected execution of coordinating operation [coordinating_and_primary_bytes"
                  "=0, max_coordinating_and_primary_bytes=0] (fault proxy: HTTP 429)")
    else:
        kind = "fault_proxy_exception"
        reason = "fault proxy: HTTP %d" % status
    return json.dumps({"error": {"root_cause": [{"type": kind, "reason": reason}],
                                 "type": kind, "reason": reason},
                       "status": status}).encode()


def fault_spec(text):
    """N:STATUS[:KIND] -> (N, STATUS, KIND)"""
    parts = text.split(":")
    try:
        if len(parts) not in (2, 3):
            raise ValueError
        n, status = int(parts[0]), int(parts[1])
        kind = parts[2] if len(parts) == 3 else ("json" if status == 429 else "html")
        if n < 1 or not 100 <= status <= 599 or kind not in ("json", "html", "empty"):
            raise ValueError
    except ValueError:
        raise argparse.ArgumentTypeError("expected N:STATUS[:json|html|empty], got %r" % text)
    return n, status, kind


def fault_body(status, kind):
    if kind == "json":
        return json_error(status), "application/json; charset=UTF-8"
    if kind == "html":
        return html_page(status), "text/html"
    return b"", "text/plain"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--listen", type=int, required=True)
    ap.add_argument("--upstream", required=True)
    ap.add_argument("--forbid", action="append", default=[])
    ap.add_argument("--unreachable-nodes", action="store_true")
    ap.add_argument("--pidfile")
    ap.add_argument("--max-seconds", type=int, default=900)
    ap.add_argument("--max-body", type=int)
    ap.add_argument("--skip-bulk", type=int, default=0)
    ap.add_argument("--fail-first", type=fault_spec)
    ap.add_argument("--fail-every", type=fault_spec)
    ap.add_argument("--drop-after-send", type=int, default=0)
    ap.add_argument("--garbage", type=int, default=0)
    ap.add_argument("--require-auth")
    ap.add_argument("--require-header", action="append", default=[])
    ap.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"))
    ap.add_argument("--slow-meta", type=float, default=0.0)
    ap.add_argument("--stall-file")
    ap.add_argument("--log")
    args = ap.parse_args()
    up = urllib.parse.urlsplit(args.upstream)
    if up.hostname not in ("127.0.0.1", "localhost", "::1"):
        sys.exit("faultproxy: upstream must be on loopback")
    if args.max_seconds < 1 or args.max_seconds > 86400:
        sys.exit("faultproxy: --max-seconds must be 1..86400")
    if not 0 <= args.slow_meta <= 600:
        sys.exit("faultproxy: --slow-meta must be 0..600 seconds")

    tls_ctx = None
    if args.tls:
        tls_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls_ctx.load_cert_chain(args.tls[0], args.tls[1])

    lock = threading.Lock()
    # _bulk requests seen past --skip-bulk; drops and garbage answers done
    state = {"bulk": 0, "skipped": 0, "dropped": 0, "garbled": 0}
    log_file = open(args.log, "a", buffering=1) if args.log else None

    def log(method, path, nbytes, status, fault, headers=None):
        if log_file is None:
            return
        ae = (headers.get("Accept-Encoding") if headers is not None else None) or "-"
        with lock:
            log_file.write("%s %s %d %d %s %s\n" % (method, path.replace(" ", "%20"), nbytes,
                                                    status, fault, "".join(ae.split()) or "-"))

    def bulk_fault():
        """The fault for a _bulk request: None or one of the names below."""
        with lock:
            if state["skipped"] < args.skip_bulk:
                state["skipped"] += 1
                return None
            state["bulk"] += 1
            n = state["bulk"]
            if args.fail_first and n <= args.fail_first[0]:
                return "fail-first"
            if args.fail_every and n % args.fail_every[0] == 0:
                return "fail-every"
            if state["dropped"] < args.drop_after_send:
                state["dropped"] += 1
                return "drop"
            if state["garbled"] < args.garbage:
                state["garbled"] += 1
                return "garbage"
        return None

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *a):
            pass

        def setup(self):
            if tls_ctx is not None:
                # the handshake runs here, on the connection's own thread
                self.request.settimeout(10)
                self.request = tls_ctx.wrap_socket(self.request, server_side=True)
                self.request.settimeout(None)
            super().setup()

        def handle_any(self):
            te = (self.headers.get("Transfer-Encoding") or "").lower()
            if "chunked" in te:
                body = self.read_chunked()
            else:
                try:
                    n = int(self.headers.get("Content-Length") or 0)
                except ValueError:
                    n = -1
                if n < 0:
                    self.close_connection = True
                    log(self.command, self.path, 0, 400, "bad-request")
                    return self.reply(400, b"bad Content-Length\n", "text/plain")
                body = self.rfile.read(n) if n else None
            nbytes = len(body) if body else 0
            path = self.path
            stalled = False
            while args.stall_file and os.path.exists(args.stall_file):
                stalled = True
                time.sleep(0.05)
            if (args.require_auth is not None and
                    self.headers.get("Authorization") != args.require_auth):
                log(self.command, path, nbytes, 401, "auth")
                return self.reply(401, UNAUTHORIZED, "application/json; charset=UTF-8",
                                  {"WWW-Authenticate": 'Basic realm="security" charset="UTF-8"'})
            for want in args.require_header:
                name, _, value = want.partition(":")
                if self.headers.get_all(name.strip()) != [value.strip()]:
                    log(self.command, path, nbytes, 403, "header")
                    return self.reply(403, MISSING_HEADER, "application/json")
            if args.max_body is not None and nbytes > args.max_body:
                log(self.command, path, nbytes, 413, "max-body")
                return self.reply(413, html_page(413), "text/html")
            if any(path.startswith(p) for p in args.forbid):
                log(self.command, path, nbytes, 403, "forbid")
                return self.reply(403, FORBIDDEN, "application/json")
            fault = bulk_fault() if "_bulk" in path else None
            if fault in ("fail-first", "fail-every"):
                _, status, kind = args.fail_first if fault == "fail-first" else args.fail_every
                data, ctype = fault_body(status, kind)
                log(self.command, path, nbytes, status, fault)
                return self.reply(status, data, ctype)
            slow = args.slow_meta > 0 and "_bulk" not in path
            if slow:
                time.sleep(args.slow_meta)
            conn = http.client.HTTPConnection(up.hostname, up.port, timeout=120)
            headers = {k: v for k, v in self.headers.items()
                       if k.lower() not in ("host", "content-length", "accept-encoding",
                                            "connection", "transfer-encoding", "expect")}
            conn.request(self.command, path, body=body, headers=headers)
            r = conn.getresponse()
            data = r.read()
            ctype = r.getheader("Content-Type", "application/json")
            conn.close()
            if fault == "drop":
                # applied by the cluster; the client never hears of it
                log(self.command, path, nbytes, 0, fault)
                self.close_connection = True
                return
            if fault == "garbage":
                data = data[:len(data) // 2]
            if args.unreachable_nodes and path.startswith("/_nodes"):
                data = re.sub(rb'"publish_address"\s*:\s*"[^"]*"',
                              b'"publish_address":"127.0.0.1:1"', data)
            log(self.command, path, nbytes, r.status,
                fault or ("slow-meta" if slow else "stall" if stalled else "forwarded"),
                self.headers)
            self.reply(r.status, data, ctype)

        def read_chunked(self):
            out = []
            while True:
                line = self.rfile.readline(65537)
                size = int(line.split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(out)
                out.append(self.rfile.read(size))
                self.rfile.readline(65537)

        def reply(self, status, data, ctype, extra=None):
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            for k, v in (extra or {}).items():
                self.send_header(k, v)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = handle_any

    class Server(http.server.ThreadingHTTPServer):
        daemon_threads = True

        def handle_error(self, request, client_address):
            # a client that rejects our certificate or goes away is expected
            exc = sys.exc_info()[1]
            if isinstance(exc, (ssl.SSLError, ConnectionError, TimeoutError, OSError)):
                return
            super().handle_error(request, client_address)

    srv = Server(("127.0.0.1", args.listen), Handler)
    if args.pidfile:
        with open(args.pidfile, "w") as f:
            f.write(str(os.getpid()))
    timer = threading.Timer(args.max_seconds, lambda: os._exit(0))
    timer.daemon = True
    timer.start()
    srv.serve_forever()


if __name__ == "__main__":
    main()
