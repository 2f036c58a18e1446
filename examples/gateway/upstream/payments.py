#!/usr/bin/env python3
"""The payments service of the gateway example: POST /payments as examples/payments-service answers it,
in Python 3 with the standard library only. The RetrySafe gateway in front of it gives it the
Idempotency-Key semantics: retries replayed, duplicates in flight refused, reused keys refused.

The one thing the gateway cannot know is whether a request it forwarded was booked when it never got
the answer (the gateway, or this service, died in between). It then keeps the key in progress until
its lease ends and sends the retry again. So this service keeps the key of every payment it books,
unique per payer, as the last guard: a payment already booked under (payer, key) is answered again, not
booked twice.

Settings (environment):
  UPSTREAM_PORT       the port, on 127.0.0.1 (default 8081; 0: any free port)
  PAYMENTS_DB         the SQLite database file (default payments.db in the working directory)
  PAYMENTS_TEST_HOOKS 1: a request with X-Test-Hold: NAME waits, after it arrived and before it books
                      anything, until POST /test/holds/NAME/release; GET /test/holds/NAME/arrived
                      waits until it arrived. For tests only: off by default.

Every execution of POST /payments is a row of `execution`, and every payment booked a row of `payment`:
a test counts there how often the operation ran.
"""
import datetime
import json
import os
import re
import signal
import sqlite3
import sys
import threading
import uuid
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ACCOUNT = re.compile(r"[A-Za-z0-9-]{1,64}")
MAX_AMOUNT = 1_000_000_000_000
MAX_BODY = 16 * 1024 * 1024
HOLD_BOUND_SECONDS = 60

SCHEMA = """
CREATE TABLE IF NOT EXISTS account (
    id      TEXT    PRIMARY KEY,
    label   TEXT    NOT NULL,
    balance INTEGER NOT NULL CHECK (balance >= 0)
);
CREATE TABLE IF NOT EXISTS payment (
    id         TEXT    PRIMARY KEY,
    payer      TEXT    NOT NULL,
    account    TEXT    NOT NULL REFERENCES account,
    amount     INTEGER NOT NULL CHECK (amount > 0),
    balance    INTEGER NOT NULL,
    created_at TEXT    NOT NULL,
    idempotency_key TEXT,
    UNIQUE (payer, idempotency_key)
);
CREATE INDEX IF NOT EXISTS payment_account_idx ON payment (account);
-- One row per execution of POST /payments that reached the booking, whatever it answered: how often
-- the operation ran (a payment is booked at most once per key; see the module's docstring).
CREATE TABLE IF NOT EXISTS execution (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,
    payer   TEXT    NOT NULL,
    account TEXT    NOT NULL,
    amount  INTEGER NOT NULL,
    status  INTEGER NOT NULL,
    idempotency_key TEXT
);
CREATE INDEX IF NOT EXISTS execution_account_idx ON execution (account);
INSERT OR IGNORE INTO account (id, label, balance) VALUES
    ('acc-1', 'Current account', 100000),
    ('acc-2', 'Shared account', 100000),
    ('acc-3', 'Savings', 500);
"""


def connect(path):
    connection = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA synchronous=NORMAL")
    connection.execute("PRAGMA foreign_keys=ON")
    return connection


class Holds:
    """Test hook: requests held by name until a test releases them."""

    def __init__(self):
        self._lock = threading.Lock()
        self._holds = {}

    def _get(self, name):
        with self._lock:
            return self._holds.setdefault(name, (threading.Event(), threading.Event()))

    def hold(self, name):
        arrived, released = self._get(name)
        arrived.set()
        ok = released.wait(HOLD_BOUND_SECONDS)
        with self._lock:
            self._holds.pop(name, None)
        return ok

    def await_arrived(self, name, seconds):
        return self._get(name)[0].wait(seconds)

    def release(self, name):
        self._get(name)[1].set()


def now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def problem(status, slug, title, detail, **extra):
    body = {"type": "/problems/" + slug, "title": title, "status": status, "detail": detail}
    body.update(extra)
    return status, {"Content-Type": "application/problem+json"}, body


class Payments:
    def __init__(self, path):
        self.path = path
        self.local = threading.local()
        with connect(path) as c:
            c.executescript(SCHEMA)

    def db(self):
        c = getattr(self.local, "connection", None)
        if c is None:
            c = self.local.connection = connect(self.path)
        return c

    def pay(self, payer, account, amount, key):
        """Locks the database, checks the balance, debits it and records the payment, in one transaction."""
        c = self.db()
        c.execute("BEGIN IMMEDIATE")
        try:
            booked = None if key is None else c.execute(
                "SELECT id, account, amount, balance, created_at FROM payment WHERE payer = ? AND idempotency_key = ?",
                (payer, key)).fetchone()
            row = c.execute("SELECT balance FROM account WHERE id = ?", (account,)).fetchone()
            if booked is not None:
                answer = self.booked_again(booked, account, amount)
            elif row is None:
                answer = problem(404, "unknown-account", "Unknown account", "there is no account " + account)
            elif row[0] < amount:
                answer = problem(402, "insufficient-funds", "Insufficient funds",
                                 "account %s has %d, the payment needs %d" % (account, row[0], amount),
                                 instance="/payments", balance=row[0])
            else:
                after = row[0] - amount
                pid, created = str(uuid.uuid4()), now()
                c.execute("UPDATE account SET balance = ? WHERE id = ?", (after, account))
                c.execute("INSERT INTO payment (id, payer, account, amount, balance, created_at, idempotency_key)"
                          " VALUES (?, ?, ?, ?, ?, ?, ?)", (pid, payer, account, amount, after, created, key))
                answer = created_answer((pid, account, amount, after, created))
            c.execute("INSERT INTO execution (payer, account, amount, status, idempotency_key) VALUES (?, ?, ?, ?, ?)",
                      (payer, account, amount, answer[0], key))
            c.execute("COMMIT")
            return answer
        except BaseException:
            c.execute("ROLLBACK")
            raise

    @staticmethod
    def booked_again(booked, account, amount):
        """The answer to a key whose payment is booked already: the same 201, if it is the same payment."""
        if (booked[1], booked[2]) != (account, amount):
            return problem(422, "key-reused", "Idempotency-Key reused with a different request",
                           "this Idempotency-Key was already used with a different request; use a new key for a new intent")
        return created_answer(booked)

    def find(self, payer, pid):
        row = self.db().execute("SELECT id, account, amount, created_at FROM payment WHERE id = ? AND payer = ?",
                                (pid, payer)).fetchone()
        if row is None:
            return problem(404, "not-found", "Not found", "there is no payment " + pid)
        return 200, {"Content-Type": "application/json"}, {
            "id": row[0], "account": row[1], "amount": row[2], "createdAt": row[3]}


def created_answer(payment):
    pid, account, amount, balance, created = payment
    return (201, {"Content-Type": "application/json", "Location": "/payments/" + pid},
            {"id": pid, "account": account, "amount": amount, "balance": balance, "createdAt": created})


def invalid_reason(request):
    if not isinstance(request, dict):
        return "the body must be a JSON object"
    account, amount = request.get("account"), request.get("amount")
    if not isinstance(account, str) or not ACCOUNT.fullmatch(account):
        return "account must be 1 to 64 letters, digits or '-', but was %s" % (
            "missing" if account is None else account)
    if isinstance(amount, bool) or not isinstance(amount, int) or not 0 < amount <= MAX_AMOUNT:
        return "amount must be a whole number of cents from 1 to %d, but was %s" % (
            MAX_AMOUNT, "missing" if amount is None else json.dumps(amount))
    return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Status line, headers and body leave in one write (flushed after each request), and without Nagle's
    # delay: written separately, a keep-alive client's delayed ACK holds the body back for ~40 ms.
    wbufsize = 64 * 1024
    disable_nagle_algorithm = True
    server_version = "payments-upstream"
    sys_version = ""

    def version_string(self):
        return self.server_version

    def log_message(self, fmt, *args):  # quiet: one line per request is too much under load
        pass

    def answer(self, status, headers, body):
        data = json.dumps(body, separators=(",", ":")).encode() if body is not None else b""
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def payer(self):
        """The caller the gateway checked, from the header only the gateway sets (it drops a client's own). This
        service listens on 127.0.0.1 only, behind the gateway, so it trusts that header and nothing else: never a
        user name from the Authorization header, which the gateway passes on but which a client could fill with
        anyone's name. None when the gateway named no caller (a public path)."""
        caller = self.headers.get("X-RetrySafe-Caller")
        return caller if caller else None

    def unauthenticated(self):
        return problem(401, "unauthenticated", "Unauthenticated", "no caller checked by the gateway")

    def read_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            return None
        return self.rfile.read(length)

    def do_GET(self):
        if self.path == "/health":
            return self.answer(200, {"Content-Type": "application/json"}, {"status": "UP"})
        m = re.fullmatch(r"/test/holds/([^/]+)/arrived", self.path)
        if m and self.server.holds:
            arrived = self.server.holds.await_arrived(m.group(1), 30)
            return self.answer(200 if arrived else 504, {"Content-Type": "application/json"}, {"arrived": arrived})
        m = re.fullmatch(r"/payments/([^/?]+)", self.path)
        if m:
            if self.payer() is None:
                return self.answer(*self.unauthenticated())
            return self.answer(*self.server.payments.find(self.payer(), m.group(1)))
        self.answer(*problem(404, "not-found", "Not found", "there is nothing at " + self.path))

    def do_POST(self):
        m = re.fullmatch(r"/test/holds/([^/]+)/release", self.path)
        if m and self.server.holds:
            self.read_body()
            self.server.holds.release(m.group(1))
            return self.answer(204, {}, None)
        if self.path != "/payments":
            self.read_body()
            return self.answer(*problem(404, "not-found", "Not found", "there is nothing at " + self.path))
        raw = self.read_body()
        if self.payer() is None:
            return self.answer(*self.unauthenticated())
        if raw is None:
            self.close_connection = True
            return self.answer(*problem(413, "request-too-large", "Request too large",
                                        "the body is over %d bytes" % MAX_BODY))
        try:
            request = json.loads(raw)
        except ValueError as e:
            return self.answer(*problem(400, "malformed-json", "Malformed JSON body", str(e)))
        reason = invalid_reason(request)
        if reason:
            return self.answer(*problem(400, "invalid-request", "Invalid request", reason))
        hold = self.headers.get("X-Test-Hold")
        if hold and self.server.holds and not self.server.holds.hold(hold):
            return self.answer(*problem(500, "test-hold", "Test hold", "the hold was not released in time"))
        self.answer(*self.server.payments.pay(self.payer(), request["account"], request["amount"],
                                              self.headers.get("Idempotency-Key")))


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128


def main():
    port = int(os.environ.get("UPSTREAM_PORT", "8081"))
    server = Server(("127.0.0.1", port), Handler)
    server.payments = Payments(os.environ.get("PAYMENTS_DB", "payments.db"))
    server.holds = Holds() if os.environ.get("PAYMENTS_TEST_HOOKS") == "1" else None
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    # Once it listens, it says where: tests and scripts wait for this line.
    print("payments upstream on 127.0.0.1:%d, database %s" % (server.server_address[1], server.payments.path),
          file=sys.stderr, flush=True)
    server.serve_forever()
    server.server_close()


if __name__ == "__main__":
    main()
