#!/usr/bin/env python3
"""The first requests after the gateway starts: CLIENTS clients, all with the same Basic credentials, send one
POST /payments each (a new Idempotency-Key each) at the same moment, as clients do when a gateway is started or
restarted under load. Each jar given is started fresh for each of ROUNDS rounds (the jars take turns) in front of
the Python payments service of examples/gateway, on Redis; the answer times are taken from the moment the
requests are released (their connections are already open). It builds nothing:

  ./mvnw -q -pl retrysafe-gateway -am package -DskipTests -DskipITs
  retrysafe-benchmarks/load/gateway_cold_start.py retrysafe-gateway/target/retrysafe-gateway.jar OTHER.jar

Settings (environment): CLIENTS (default 32), ROUNDS (default 5), REDIS_URI (default redis://127.0.0.1:6379;
the run's keys are under rs-cold-<pid>: and expire with their records).
"""
import base64
import http.client
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "examples", "gateway")
CLIENTS = int(os.environ.get("CLIENTS", "32"))
ROUNDS = int(os.environ.get("ROUNDS", "5"))
REDIS_URI = os.environ.get("REDIS_URI", "redis://127.0.0.1:6379")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def await_port(port, process, name):
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            sys.exit(f"{name} exited with {process.returncode} before it listened")
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.02)
    sys.exit(f"{name} did not listen on port {port} within 60 s")


def first_requests(port):
    """Each client's answer time in ms and status, all released at once on connections already open."""
    auth = "Basic " + base64.b64encode(b"alice:alice-secret").decode()
    results = [None] * CLIENTS
    ready = threading.Barrier(CLIENTS + 1)

    def client(i):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        c.connect()
        ready.wait()
        start = time.perf_counter()
        c.request("POST", "/payments", body='{"account":"acc-1","amount":1}', headers={
            "Authorization": auth, "Idempotency-Key": str(uuid.uuid4()), "Content-Type": "application/json"})
        r = c.getresponse()
        r.read()
        results[i] = (r.status, (time.perf_counter() - start) * 1000)
        c.close()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
    for t in threads:
        t.start()
    ready.wait()
    for t in threads:
        t.join()
    return results


def main(jars):
    if not jars:
        sys.exit(__doc__)
    work = tempfile.mkdtemp(prefix="rs-cold-")
    upstream_port = free_port()
    upstream = subprocess.Popen([sys.executable, os.path.join(EXAMPLE, "upstream", "payments.py")],
                                env=dict(os.environ, UPSTREAM_PORT=str(upstream_port),
                                         PAYMENTS_DB=os.path.join(work, "payments.db")),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    config = os.path.join(work, "gateway.yaml")
    with open(config, "w") as f:
        f.write(f"""listen:
  host: 127.0.0.1
admin:
  port: 0
upstream:
  url: http://127.0.0.1:{upstream_port}
scope:
  basic:
    users-file: {os.path.join(EXAMPLE, "users.txt")}
store:
  type: redis
  url: {REDIS_URI}
  key-prefix: "rs-cold-{os.getpid()}:"
routes:
  - method: POST
    path: /payments
    fingerprint:
      json-members: [/account, /amount]
""")
    rows = {jar: [] for jar in jars}
    try:
        await_port(upstream_port, upstream, "the upstream")
        for r in range(ROUNDS):
            for jar in jars[r % len(jars):] + jars[:r % len(jars)]:
                port = free_port()
                gateway = subprocess.Popen(["java", "-jar", jar, "--config", config],
                                           env=dict(os.environ, PORT=str(port)),
                                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                try:
                    await_port(port, gateway, jar)
                    results = first_requests(port)
                finally:
                    gateway.send_signal(signal.SIGTERM)
                    gateway.wait()
                times = sorted(ms for _, ms in results)
                statuses = sorted({status for status, _ in results})
                rows[jar].append((statistics.median(times), times[-1], statuses))
                print(f"round {r + 1} {jar}: median {statistics.median(times):.0f} ms, max {times[-1]:.0f} ms, "
                      f"statuses {statuses}", file=sys.stderr)
    finally:
        upstream.send_signal(signal.SIGTERM)
        upstream.wait()

    def spread(values):
        return f"{statistics.median(values):,.0f} ({min(values):,.0f}–{max(values):,.0f})"

    print(f"| jar | {CLIENTS} first requests: median ms | slowest ms | statuses |")
    print("| --- | ---: | ---: | --- |")
    for jar, runs in rows.items():
        print(f"| {jar} | {spread([m for m, _, _ in runs])} | {spread([x for _, x, _ in runs])} | "
              f"{sorted({s for _, _, st in runs for s in st})} |")


if __name__ == "__main__":
    main(sys.argv[1:])
