#!/usr/bin/env python3
"""A scriptable HTTP proxy in front of a real cluster, for fault tests.

    tests/faultproxy.py --listen 19290 --upstream http://127.0.0.1:19200 \
        [--forbid PREFIX]... [--unreachable-nodes] [--pidfile F] [--max-seconds N] \
        [--max-body N] [--fail-first N:STATUS[:KIND]] [--fail-every K:STATUS[:KIND]] \
        [--skip-bulk N] [--drop-after-send N] [--garbage N] [--require-auth VALUE] \
        [--require-sigv4 AKID:SECRET:REGION:SERVICE[:SESSION_TOKEN]] \
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
--require-sigv4 ACCESS_KEY_ID:SECRET:REGION:SERVICE[:SESSION_TOKEN]
                       answer 403 with Amazon OpenSearch Service's body shape,
                       {"message": "<why>"} (application/json), to any request
                       (any method and path) that does not carry a valid AWS
                       Signature Version 4: Authorization "AWS4-HMAC-SHA256
                       Credential=AKID/DATE/REGION/SERVICE/aws4_request,
                       SignedHeaders=..., Signature=<64 hex>" for these
                       credentials; X-Amz-Date within 5 minutes of the proxy's
                       clock; host and x-amz-date signed (SignedHeaders
                       lowercase, sorted, each present once);
                       X-Amz-Security-Token equal to SESSION_TOKEN and signed
                       when one is given, absent otherwise; X-Amz-Content-Sha256
                       signed and the lowercase hex SHA-256 of the body bytes as
                       received (gzip bodies: of the compressed bytes); a query
                       string already in SigV4's canonical encoding (unreserved
                       bytes or %XX, uppercase hex); and the signature that
                       botocore computes. SESSION_TOKEN is everything after the
                       4th colon; the secret has none. Needs botocore (Debian's
                       python3-botocore; run with /usr/bin/python3); exits with
                       status 2 without it. Not with --require-auth. Logged as
                       fault sigv4, plus a line "FAULT sigv4 METHOD PATH: WHY"
                       (on a signature mismatch WHY holds the canonical request
                       and string to sign botocore built, JSON-quoted, token
                       redacted; never the secret, the token or the signature)
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
--running-tasks N      the first N GET /_tasks/ID?wait_for_completion=true
                       requests are not forwarded: each is answered, after the
                       request's timeout (its timeout=Ns, 1 s without one, at
                       most 30 s), as OpenSearch answers while the task still
                       runs: 500 with a timeout_exception. A merge or any task
                       the client waits for seems to run on. Logged with
                       FAULT running-task
--stall-file F         while the file F exists, hold every request (read in
                       full, not forwarded) until F is removed (or --max-seconds
                       ends the proxy): a cluster that stalls every answer.
                       Logged with FAULT stall (when no other fault applies)
--log FILE             append one line per request:
                       METHOD PATH BODY_BYTES STATUS FAULT ACCEPT_ENCODING
                       (STATUS 0 when no answer was sent; FAULT is one of
                       forwarded, auth, sigv4, header, max-body, forbid,
                       fail-first, fail-every, drop, garbage, slow-meta, stall,
                       running-task, bad-request; ACCEPT_ENCODING is the
                       request's header without blanks, "-" when absent. The
                       header itself is not passed on: answers are never
                       compressed)

Only loopback addresses are accepted for --upstream and the listener.
"""
import argparse
import calendar
import hashlib
import hmac
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


SIGV4_MISMATCH = ("The request signature we calculated does not match the signature you "
                  "provided. Check your AWS Secret Access Key and signing method. Consult "
                  "the service documentation for details.")
SIGV4_AUTH_RE = re.compile(
    r"AWS4-HMAC-SHA256 Credential=([^/\s,]+)/([0-9]{8})/([^/\s,]+)/([^/\s,]+)/aws4_request,"
    r" *SignedHeaders=([^\s,]+), *Signature=([0-9a-f]{64})")
SIGV4_DATE_RE = re.compile(r"[0-9]{8}T[0-9]{6}Z")
# one name or value of a query string in SigV4's canonical encoding
SIGV4_QUERY_PART = r"(?:[A-Za-z0-9_.~-]|%[0-9A-F]{2})"
SIGV4_QUERY_PAIR_RE = re.compile(r"%s+(?:=%s*)?" % (SIGV4_QUERY_PART, SIGV4_QUERY_PART))
SIGV4_SKEW = 300
# a Host header value that can stand in a URL's authority
SIGV4_HOST_RE = re.compile(r"[A-Za-z0-9._~%!$&'()*+,;=:\[\]-]+")


def sigv4_spec(text):
    """AKID:SECRET:REGION:SERVICE[:SESSION_TOKEN] -> (akid, secret, region, service, token)"""
    parts = text.split(":", 4)
    if len(parts) < 4 or not all(parts[:4]) or (len(parts) == 5 and not parts[4]):
        # never echo the text: it holds the secret
        raise argparse.ArgumentTypeError(
            "expected ACCESS_KEY_ID:SECRET:REGION:SERVICE[:SESSION_TOKEN], none empty")
    return parts[0], parts[1], parts[2], parts[3], (parts[4] if len(parts) == 5 else None)


def wire_text(value):
    """A header value as http.server decoded it (ISO-8859-1) -> the text whose UTF-8
    encoding is the bytes on the wire, or None when those bytes are not UTF-8."""
    try:
        return value.encode("latin-1").decode("utf-8")
    except UnicodeError:
        return None


def sigv4_check(spec, botocore, method, target, headers, body):
    """None when the request carries a valid SigV4 signature for spec, else
    (message for the client, reason for the log). Neither holds the secret, the
    session token or the signature."""
    akid, secret, region, service, token = spec

    def no(why, detail=None):
        return why, (why if detail is None else "%s; %s" % (why, detail))

    def once(name):
        values = headers.get_all(name) or []
        return values[0] if len(values) == 1 else None

    # 1. Authorization
    auths = headers.get_all("Authorization") or []
    if not auths:
        return no("Authorization header is missing")
    if len(auths) > 1:
        return no("Authorization header is given %d times" % len(auths))
    m = SIGV4_AUTH_RE.fullmatch(auths[0].strip())
    if m is None:
        return no("Authorization header is not of the form 'AWS4-HMAC-SHA256 "
                  "Credential=AKID/YYYYMMDD/REGION/SERVICE/aws4_request, SignedHeaders=a;b, "
                  "Signature=<64 lowercase hex>'")
    c_akid, c_date, c_region, c_service, signed_text, signature = m.groups()
    if c_akid != akid:
        return no("The security token included in the request is invalid: the Credential's "
                  "access key id %r is not the expected one" % c_akid)
    if c_region != region:
        return no("Credential should be scoped to a valid region, not %r (expected %r)"
                  % (c_region, region))
    if c_service != service:
        return no("Credential should be scoped to correct service: %r, not %r"
                  % (service, c_service))
    # 2. X-Amz-Date
    dates = headers.get_all("X-Amz-Date") or []
    if len(dates) != 1:
        return no("X-Amz-Date header is missing" if not dates else
                  "X-Amz-Date header is given %d times" % len(dates))
    amz_date = dates[0].strip()
    try:
        if SIGV4_DATE_RE.fullmatch(amz_date) is None:
            raise ValueError
        when = calendar.timegm(time.strptime(amz_date, "%Y%m%dT%H%M%SZ"))
    except ValueError:
        return no("X-Amz-Date %r is not of the form YYYYMMDD'T'HHMMSS'Z'" % amz_date)
    now = time.time()
    if abs(now - when) > SIGV4_SKEW:
        return no("Signature expired: X-Amz-Date %s is more than 5 min. from the server's "
                  "time %s" % (amz_date, time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))))
    if c_date != amz_date[:8]:
        return no("Credential should be scoped to a valid date: the Credential's date %s is "
                  "not X-Amz-Date's %s" % (c_date, amz_date[:8]))
    # 3. SignedHeaders
    signed = signed_text.split(";")
    if any(not n for n in signed):
        return no("SignedHeaders %r has an empty name" % signed_text)
    if signed_text != signed_text.lower():
        return no("SignedHeaders %r is not lowercase" % signed_text)
    if len(set(signed)) != len(signed):
        return no("SignedHeaders %r names a header twice" % signed_text)
    if signed != sorted(signed):
        return no("SignedHeaders %r is not sorted" % signed_text)
    for need in ("host", "x-amz-date"):
        if need not in signed:
            return no("SignedHeaders %r does not include %s" % (signed_text, need))
    if "authorization" in signed:
        return no("SignedHeaders %r includes authorization" % signed_text)
    for name in signed:
        n = len(headers.get_all(name) or [])
        if n != 1:
            return no("signed header %s is %s" % (name, "missing" if n == 0 else
                                                  "given %d times" % n))
    tokens = headers.get_all("X-Amz-Security-Token") or []
    if token is not None:
        if len(tokens) != 1:
            return no("X-Amz-Security-Token header is missing" if not tokens else
                      "X-Amz-Security-Token header is given %d times" % len(tokens))
        if not hmac.compare_digest(tokens[0].strip().encode("latin-1", "replace"),
                                   token.encode("utf-8")):
            return no("The security token included in the request is invalid: "
                      "X-Amz-Security-Token is not the expected session token")
        if "x-amz-security-token" not in signed:
            return no("X-Amz-Security-Token is not signed (not in SignedHeaders)")
    elif tokens:
        return no("X-Amz-Security-Token is given but no session token is expected")
    # 4. X-Amz-Content-Sha256
    payload = body or b""
    content_sha = once("X-Amz-Content-Sha256")
    if content_sha is None:
        return no("X-Amz-Content-Sha256 header is missing")
    if "x-amz-content-sha256" not in signed:
        return no("X-Amz-Content-Sha256 is not signed (not in SignedHeaders)")
    digest = hashlib.sha256(payload).hexdigest()
    if content_sha.strip() != digest:
        return no("X-Amz-Content-Sha256 is not the lowercase hex SHA-256 of the %d body bytes "
                  "received" % len(payload), "header %r, body %s" % (content_sha, digest))
    # 5. the query string, as sent, in canonical encoding
    if not target.startswith("/") or "#" in target or not all(
            0x21 <= ord(ch) <= 0x7e for ch in target):
        return no("the request target is not an origin-form path of printable ASCII")
    path, qmark, query = target.partition("?")
    if query:
        for pair in query.split("&"):
            if SIGV4_QUERY_PAIR_RE.fullmatch(pair) is None:
                return no("query parameter %r is not URI-encoded as SigV4 requires (every "
                          "byte unreserved, A-Z a-z 0-9 - _ . ~, or %%XX with uppercase hex)"
                          % pair)
    # 6. the signature, as botocore computes it
    host = once("Host")
    if SIGV4_HOST_RE.fullmatch(host.strip()) is None:
        return no("Host header %r cannot be part of a URL" % host)
    sign_headers = {}
    for name in signed:
        value = wire_text(headers.get_all(name)[0])
        if value is None:
            return no("signed header %s is not UTF-8" % name)
        sign_headers[name] = value
    request = botocore.AWSRequest(method=method, url="http://%s%s" % (host.strip(), target),
                                  data=payload, headers=sign_headers)
    request.context["timestamp"] = amz_date
    auth = botocore.SigV4Auth(botocore.Credentials(akid, secret, token), service, region)
    chosen = auth.signed_headers(auth.headers_to_sign(request))
    if chosen != signed_text:
        return no("botocore signs the headers %r, not SignedHeaders %r (it never signs %s)"
                  % (chosen, signed_text, ", ".join(botocore.UNSIGNABLE)))
    if auth.payload(request) != content_sha.strip():
        return no("botocore hashes the body differently from X-Amz-Content-Sha256")
    canonical = auth.canonical_request(request)
    string_to_sign = auth.string_to_sign(request, canonical)
    expected = auth.signature(string_to_sign, request)
    if hmac.compare_digest(expected.encode(), signature.encode()):
        return None
    shown = canonical
    if token is not None:
        shown = "\n".join("x-amz-security-token:<redacted>"
                          if line.startswith("x-amz-security-token:") else line
                          for line in canonical.split("\n"))
    return no(SIGV4_MISMATCH, "canonical request (botocore): %s; string to sign: %s"
              % (json.dumps(shown), json.dumps(string_to_sign)))


def load_botocore():
    """botocore's SigV4 pieces, imported only for --require-sigv4."""
    try:
        from botocore.auth import SigV4Auth, SIGNED_HEADERS_BLACKLIST
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials
    except ImportError as e:
        print("faultproxy: --require-sigv4 needs botocore (%s): install Debian's "
              "python3-botocore (apt-get install python3-botocore; scripts/install-deps.sh "
              "test) and run the proxy with /usr/bin/python3" % e, file=sys.stderr)
        sys.exit(2)
    return argparse.Namespace(SigV4Auth=SigV4Auth, AWSRequest=AWSRequest,
                              Credentials=Credentials,
                              UNSIGNABLE=list(SIGNED_HEADERS_BLACKLIST))


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
    ap.add_argument("--require-sigv4", type=sigv4_spec,
                    metavar="ACCESS_KEY_ID:SECRET:REGION:SERVICE[:SESSION_TOKEN]")
    ap.add_argument("--require-header", action="append", default=[])
    ap.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"))
    ap.add_argument("--slow-meta", type=float, default=0.0)
    ap.add_argument("--running-tasks", type=int, default=0)
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
    botocore = None
    if args.require_sigv4 is not None:
        if args.require_auth is not None:
            sys.exit("faultproxy: --require-auth and --require-sigv4 both decide Authorization")
        botocore = load_botocore()

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

    def log_fault(kind, method, path, why):
        if log_file is None:
            return
        with lock:
            log_file.write("FAULT %s %s %s: %s\n" % (kind, method, path.replace(" ", "%20"),
                                                    why.replace("\r", "\\r").replace("\n", "\\n")))

    def running_task():
        """Whether this wait for a task is answered as if the task ran on."""
        with lock:
            if state.get("tasks", 0) >= args.running_tasks:
                return False
            state["tasks"] = state.get("tasks", 0) + 1
            return True

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
            if args.require_sigv4 is not None:
                refused = sigv4_check(args.require_sigv4, botocore, self.command, path,
                                      self.headers, body)
                if refused is not None:
                    log(self.command, path, nbytes, 403, "sigv4", self.headers)
                    log_fault("sigv4", self.command, path, refused[1])
                    return self.reply(403, json.dumps({"message": refused[0]}).encode(),
                                      "application/json")
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
            if (self.command == "GET" and path.startswith("/_tasks/") and
                    "wait_for_completion=true" in path and running_task()):
                m = re.search(r"[?&]timeout=(\d+)s", path)
                time.sleep(min(int(m.group(1)), 30) if m else 1)
                why = ("Timed out waiting for completion of [the task %s, held running by "
                       "faultproxy]" % path.split("?")[0][len("/_tasks/"):])
                err = {"type": "timeout_exception", "reason": why}
                log(self.command, path, nbytes, 500, "running-task")
                return self.reply(500, json.dumps({"error": dict(err, root_cause=[err]),
                                                   "status": 500}).encode(),
                                  "application/json; charset=UTF-8")
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
