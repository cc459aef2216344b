#!/usr/bin/env python3
"""A fake upload backend for the tests: a real HTTP server on loopback that records every POST
and injects failures.

    fake_backend.py --log FILE [--script 503,429:2,200,...] [--fail-rate 0.3] [--drop-rate 0.1]
                    [--delay 0.05] [--seed 1] [--token SECRET]
                    [--tls-cert PEM --tls-key PEM [--tls-client-ca PEM]]

It prints "PORT <n>" on stdout once it listens on 127.0.0.1. Each request is answered from
--script first (a status, or status:retry-after, or "drop" to close the connection without a
reply), then by the random rates, else 200. Every request, answered or not, is appended to --log
as one JSON line: {"status", "key", "auth", "body"}.

It is as strict as a real server about what counts as a request: a POST whose body ends short of
its Content-Length is logged as "truncated" and never answered, and a POST whose Content-Digest
(RFC 9530, sha-256) is missing or does not match its body is answered 400 and logged as
"digest-missing" or "digest-mismatch". Neither is a delivery.

Fault steps for --script, after the body is read: "hang" accepts the request and never answers
(the connection stays open for --hang seconds), "partial" sends a 200 whose body ends after 10
of its 100 bytes and closes, "slow" sends a 200 whose 100-byte body trickles at one byte per
second. --always STEP answers every POST past the script with STEP (a status or a fault step):
"--always hang" is a backend that never answers, "--always slow" one that trickles. With --tls-cert/--tls-key it serves https; --tls-client-ca also requires a client
certificate signed by that CA (mutual TLS), and a handshake without one is refused.

With --serve-dir DIR it also answers GET: the file in DIR named by the request path's last
component (so /players/UNIT-1/player.json serves DIR/player.json), 404 when there is none.
--fail-path SUBSTR answers 503 to GETs whose path contains SUBSTR, and --get-barrier N holds
each GET until N GETs are in flight (up to 5 s, then 504), so a test can prove they run in
parallel. GETs are logged like POSTs, with the path as "body".
"""
import argparse
import json
import random
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def expected_digest(raw):
    """The Content-Digest field a body must carry: sha-256=:<base64>: (RFC 9530)."""
    import base64
    import hashlib
    return "sha-256=:" + base64.b64encode(hashlib.sha256(raw).digest()).decode() + ":"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--log", required=True)
    ap.add_argument("--script", default="")
    ap.add_argument("--fail-rate", type=float, default=0.0)
    ap.add_argument("--drop-rate", type=float, default=0.0)
    ap.add_argument("--delay", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--token", default=None)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--serve-dir", default=None)
    ap.add_argument("--fail-path", default=None)
    ap.add_argument("--get-barrier", type=int, default=0)
    ap.add_argument("--hang", type=float, default=120.0)
    ap.add_argument("--always", default=None)
    ap.add_argument("--tls-cert", default=None)
    ap.add_argument("--tls-key", default=None)
    ap.add_argument("--tls-client-ca", default=None)
    args = ap.parse_args()
    script = [s for s in args.script.split(",") if s]
    rng = random.Random(args.seed)
    lock = threading.Lock()
    gets = threading.Condition()
    in_flight = [0]

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def do_POST(self):
            length = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(length)
            if len(raw) < length:
                # The client went away mid-body (killed while sending): as any real server, treat
                # it as no request at all rather than a delivered one.
                self.record("truncated", raw.decode("utf-8", "replace"))
                self.close_connection = True
                return
            body = raw.decode("utf-8", "replace")
            digest = self.headers.get("Content-Digest")
            if digest is None or digest != expected_digest(raw):
                self.record("digest-missing" if digest is None else "digest-mismatch", body)
                self.send_response(400)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            with lock:
                step = script.pop(0) if script else args.always
                roll = rng.random()
            if args.delay:
                time.sleep(args.delay)
            status, retry_after = 200, None
            if step == "drop" or (step is None and roll < args.drop_rate):
                # Close without a reply: the client sees the connection end mid-request.
                self.record("drop", body)
                self.close_connection = True
                return
            if step in ("hang", "partial", "slow"):
                self.record(step, body)
                self.fault(step)
                return
            if step:
                parts = step.split(":")
                status = int(parts[0])
                retry_after = parts[1] if len(parts) > 1 else None
            elif roll < args.drop_rate + args.fail_rate:
                status = 503
            if args.token is not None and self.headers.get("Authorization") != "Bearer " + args.token:
                status = 401
            self.record(status, body)
            self.send_response(status)
            if retry_after:
                self.send_header("Retry-After", retry_after)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def fault(self, step):
            self.close_connection = True
            if step == "hang":
                time.sleep(args.hang)
                return
            self.send_response(200)
            self.send_header("Content-Length", "100")
            self.end_headers()
            try:
                if step == "partial":
                    self.wfile.write(b"x" * 10)
                    self.wfile.flush()
                    return
                for _ in range(100):
                    self.wfile.write(b"x")
                    self.wfile.flush()
                    time.sleep(1)
            except OSError:
                pass

        def do_GET(self):
            import os
            with gets:
                in_flight[0] += 1
                gets.notify_all()
                if args.get_barrier:
                    gets.wait_for(lambda: in_flight[0] >= args.get_barrier, timeout=5)
                reached = in_flight[0] >= args.get_barrier
            if args.delay:
                time.sleep(args.delay)
            path = self.path.split("?")[0]
            name = os.path.basename(path)
            body, status = b"", 200
            if not reached:
                status = 504
            elif args.fail_path and args.fail_path in path:
                status = 503
            elif args.token is not None and self.headers.get("Authorization") != "Bearer " + args.token:
                status = 401
            else:
                file = os.path.join(args.serve_dir or "", name)
                if args.serve_dir and name and os.path.isfile(file):
                    with open(file, "rb") as f:
                        body = f.read()
                else:
                    status = 404
            self.record(status, self.path)
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def record(self, status, body):
            try:
                parsed = json.loads(body)
            except ValueError:
                parsed = body
            line = json.dumps({"status": status, "key": self.headers.get("Idempotency-Key"),
                               "auth": self.headers.get("Authorization"), "body": parsed,
                               "digest": self.headers.get("Content-Digest")})
            with lock, open(args.log, "a") as f:
                f.write(line + "\n")

    ThreadingHTTPServer.allow_reuse_address = True
    ThreadingHTTPServer.daemon_threads = True
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.handle_error = lambda request, address: None  # a refused TLS handshake, a reset
    if args.tls_cert:
        import ssl
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.tls_cert, args.tls_key)
        if args.tls_client_ca:
            context.verify_mode = ssl.CERT_REQUIRED
            context.load_verify_locations(args.tls_client_ca)
        # The handshake runs in the request's thread, so a failing one does not stop the server.
        server.socket = context.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
    print("PORT", server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
