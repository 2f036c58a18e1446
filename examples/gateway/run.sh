#!/usr/bin/env bash
# The example in one command: the Python payments service on 127.0.0.1:8081 and the RetrySafe gateway
# in front of it on PORT (default 8080), until Ctrl-C. The gateway keeps its keys in the PostgreSQL at
# 127.0.0.1:5432 (gateway.yaml, store); the payments in target/payments.db (PAYMENTS_DB) beside this script.
#
#   examples/gateway/run.sh              # builds the gateway's jar first if it is not there
#   PORT=9090 examples/gateway/run.sh
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$(cd ../.. && pwd)
JAR="$ROOT/retrysafe-gateway/target/retrysafe-gateway.jar"
UPSTREAM_PORT=8081   # gateway.yaml's upstream.url

say() { printf 'run.sh: %s\n' "$*" >&2; }
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

command -v python3 >/dev/null || { say "python3 is needed (the payments service)"; exit 1; }
command -v java >/dev/null || { say "java (17 or later) is needed (the gateway)"; exit 1; }
listening 5432 || { say "no PostgreSQL at 127.0.0.1:5432: start one, or point gateway.yaml's store elsewhere"; exit 1; }
! listening "$UPSTREAM_PORT" || { say "port $UPSTREAM_PORT is taken: the payments service listens there"; exit 1; }
if [[ ! -f "$JAR" ]]; then
    say "building the gateway (once)"
    (cd "$ROOT" && ./mvnw -q -pl retrysafe-gateway -am package -DskipTests -DskipITs)
fi

mkdir -p target
UPSTREAM_PORT=$UPSTREAM_PORT PAYMENTS_DB="${PAYMENTS_DB:-target/payments.db}" python3 upstream/payments.py &
upstream=$!
trap 'kill "$upstream" 2>/dev/null || true; wait "$upstream" 2>/dev/null || true' EXIT
trap 'exit 130' INT TERM
for _ in $(seq 1 100); do
    listening "$UPSTREAM_PORT" && break
    kill -0 "$upstream" 2>/dev/null || { say "the payments service exited"; exit 1; }
    sleep 0.1
done

say "the gateway on port ${PORT:-8080}, in front of the payments service on $UPSTREAM_PORT; Ctrl-C stops both"
java ${GATEWAY_JAVA_OPTS:-} -jar "$JAR" --config gateway.yaml
