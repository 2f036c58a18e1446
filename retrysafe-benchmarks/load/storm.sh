#!/usr/bin/env bash
# A duplicate storm against the payments service: REQUESTS concurrent POST /payments with one
# Idempotency-Key (DuplicateStorm), in transactional mode, with the Redis fast filter off and on.
#
# For each row, on a fresh JVM and a fresh database: WARMUP_STORMS storms, then STORMS measured ones,
# each with a new key; then the payments in the database are counted (must be one per storm). It
# prints one markdown table. It builds nothing; build and install first, as for compare.sh:
#
#   ./mvnw -q install -DskipTests -DskipITs -pl examples/payments-service,retrysafe-benchmarks -am
#   retrysafe-benchmarks/load/storm.sh                          # 1000 requests, 1 warmup + 3 storms
#   REQUESTS=1000 WARMUP_STORMS=3 STORMS=10 retrysafe-benchmarks/load/storm.sh
#
# or, without installing into ~/.m2, with the service's classpath taken from the reactor:
#
#   ./mvnw -q -pl examples/payments-service -am package dependency:build-classpath -DskipTests -DskipITs \
#       -Dmdep.includeScope=runtime -Dmdep.outputFile="$PWD/service.classpath"
#   ./mvnw -q -pl retrysafe-benchmarks -am package -DskipTests -DskipITs
#   SERVICE_CLASSPATH=service.classpath retrysafe-benchmarks/load/storm.sh
#
# Settings (environment):
#   REQUESTS                  concurrent requests per storm (default 1000)
#   STORMS, WARMUP_STORMS     measured and warmup storms per row (default 3 and 1)
#   ROWS                      which rows: "off on" (default), "off" or "on" (the fast filter)
#   REDIS_URI                 the fast filter's Redis (default redis://127.0.0.1:6379)
#   PG_HOST, PG_PORT, PG_USER, PGPASSWORD
#                             the PostgreSQL server (default 127.0.0.1, 5432, postgres); each row gets its
#                             own database rs_storm_<pid>, created before and dropped after the row
#   SERVICE_JAVA_OPTS, LOAD_JAVA_OPTS, SERVICE_ARGS
#                             JVM options of the service and of the storm client, more service arguments
#   SERVICE_CLASSPATH         a file holding the service's runtime classpath (default: derived from ~/.m2)
#   OUT                       where logs, JSON results and table.md go (default a new temporary directory)
#   READY_TIMEOUT             seconds to wait for the service to start (default 180)
#
# A storm opens REQUESTS connections at once: the client's open-files limit must allow it (ulimit -n).
# The service holds up to 20 PostgreSQL connections (its Hikari pool): max_connections must leave room.
# The first storm on a fresh JVM is slow (nothing compiled yet, the fast filter's Redis connection not
# yet up): keep WARMUP_STORMS at 1 or more.
set -euo pipefail

cd "$(dirname "$0")/../.."
ROOT=$(pwd)

REQUESTS=${REQUESTS:-1000}
STORMS=${STORMS:-3}
WARMUP_STORMS=${WARMUP_STORMS:-1}
ROWS=${ROWS:-"off on"}
REDIS_URI=${REDIS_URI:-redis://127.0.0.1:6379}
PG_HOST=${PG_HOST:-127.0.0.1}
PG_PORT=${PG_PORT:-5432}
PG_USER=${PG_USER:-postgres}
READY_TIMEOUT=${READY_TIMEOUT:-180}
SERVICE_JAVA_OPTS=${SERVICE_JAVA_OPTS:-}
SERVICE_ARGS=${SERVICE_ARGS:-}
LOAD_JAVA_OPTS=${LOAD_JAVA_OPTS:-}
OUT=${OUT:-$(mktemp -d -t retrysafe-storm.XXXXXX)}
DB="rs_storm_$$"
USER_NAME=alice
USER_PASSWORD=alice-secret
BALANCE=1000000000000

LOAD_CLASSES="$ROOT/retrysafe-benchmarks/target/classes"
SERVICE_CLASSES="$ROOT/examples/payments-service/target/classes"
SERVICE_MAIN=io.retrysafe.examples.paymentsservice.PaymentsServiceApplication

mkdir -p "$OUT"
say() { printf '%s\n' "storm.sh: $*" >&2; }
die() { say "$*"; exit 1; }

psql_admin() { psql -h "$PG_HOST" -p "$PG_PORT" -U "$PG_USER" -d postgres -v ON_ERROR_STOP=1 -qAtX "$@"; }
psql_db() { psql -h "$PG_HOST" -p "$PG_PORT" -U "$PG_USER" -d "$DB" -v ON_ERROR_STOP=1 -qAtX "$@"; }

# --- prerequisites -------------------------------------------------------------------------------
command -v psql >/dev/null || die "psql is needed (to create and drop the run's database)"
[[ -f "$LOAD_CLASSES/io/retrysafe/benchmarks/load/DuplicateStorm.class" ]] \
    || die "DuplicateStorm is not built: ./mvnw -q -pl retrysafe-benchmarks -am install -DskipTests -DskipITs"
[[ -f "$SERVICE_CLASSES/${SERVICE_MAIN//.//}.class" ]] \
    || die "the payments service is not built: ./mvnw -q -pl examples/payments-service -am install -DskipTests -DskipITs"
psql_admin -c "SELECT 1" >/dev/null || die "cannot reach PostgreSQL as $PG_USER at $PG_HOST:$PG_PORT"
(( $(ulimit -n) > REQUESTS + 100 )) || die "open-files limit $(ulimit -n) is too low for $REQUESTS connections: ulimit -n $((REQUESTS * 2))"

if [[ -n "${SERVICE_CLASSPATH:-}" ]]; then
    [[ -s "$SERVICE_CLASSPATH" ]] || die "SERVICE_CLASSPATH=$SERVICE_CLASSPATH is not a non-empty file"
    cp "$SERVICE_CLASSPATH" "$OUT/service.classpath"
else
    say "deriving the payments service's classpath"
    ./mvnw -q -o -pl examples/payments-service dependency:build-classpath -Dmdep.includeScope=runtime \
        -Dmdep.outputFile="$OUT/service.classpath" >"$OUT/classpath.log" 2>&1 \
        || die "dependency:build-classpath failed (see $OUT/classpath.log); is the reactor installed in ~/.m2?"
fi

# A snapshot of what is measured, as in compare.sh: a rebuild during the run cannot change later rows.
SNAP="$OUT/snapshot"
rm -rf "$SNAP"
mkdir -p "$SNAP/lib" "$SNAP/load/io/retrysafe/benchmarks"
cp -r "$SERVICE_CLASSES" "$SNAP/service-classes"
cp -r "$LOAD_CLASSES/io/retrysafe/benchmarks/load" "$SNAP/load/io/retrysafe/benchmarks/"
IFS=: read -ra entries <"$OUT/service.classpath" || true  # the file has no final newline
SERVICE_CP="$SNAP/service-classes"
CORE_JAR=""
for entry in "${entries[@]}"; do
    case $entry in
        */io/retrysafe/*|*/target/retrysafe-*.jar)
            cp "$entry" "$SNAP/lib/"
            entry="$SNAP/lib/$(basename "$entry")"
            case $entry in */retrysafe-core-*.jar) CORE_JAR=$entry ;; esac
            ;;
    esac
    SERVICE_CP="$SERVICE_CP:$entry"
done
[[ -n "$CORE_JAR" ]] || die "retrysafe-core is not on the service's classpath ($OUT/service.classpath)"
LOAD_CP="$SNAP/load:$CORE_JAR"
SOURCE="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
if [[ -n "$(git status --porcelain 2>/dev/null | head -n 1)" ]]; then SOURCE="$SOURCE + uncommitted changes"; fi

# --- one service at a time -----------------------------------------------------------------------
SERVICE_PID=""

stop_service() {
    [[ -n "$SERVICE_PID" ]] || return 0
    if kill -0 "$SERVICE_PID" 2>/dev/null; then
        kill -TERM "$SERVICE_PID" 2>/dev/null || true
        for _ in $(seq 1 60); do
            kill -0 "$SERVICE_PID" 2>/dev/null || break
            sleep 0.5
        done
        if kill -0 "$SERVICE_PID" 2>/dev/null; then
            say "service $SERVICE_PID did not stop within 30 s of SIGTERM: SIGKILL"
            kill -KILL "$SERVICE_PID" 2>/dev/null || true
        fi
    fi
    wait "$SERVICE_PID" 2>/dev/null || true
    SERVICE_PID=""
}

drop_db() { psql_admin -c "DROP DATABASE IF EXISTS \"$DB\" WITH (FORCE)" >/dev/null 2>&1 || true; }

cleanup() { stop_service; drop_db; }
trap cleanup EXIT
trap 'exit 130' INT TERM

# start_service LABEL [service args...]: a fresh database, the service on a free port; sets PORT
start_service() {
    local label=$1; shift
    drop_db
    psql_admin -c "CREATE DATABASE \"$DB\"" >/dev/null
    local ready="$OUT/$label.ready"
    rm -f "$ready"
    # shellcheck disable=SC2086 # SERVICE_JAVA_OPTS and SERVICE_ARGS are lists
    RETRYSAFE_JDBC_URL="jdbc:postgresql://$PG_HOST:$PG_PORT/$DB" RETRYSAFE_JDBC_USER="$PG_USER" \
        RETRYSAFE_JDBC_PASSWORD="${PGPASSWORD:-}" RETRYSAFE_REDIS_URI="$REDIS_URI" \
        java $SERVICE_JAVA_OPTS -cp "$SERVICE_CP" "$SERVICE_MAIN" \
        --server.port=0 --payments.ready-file="$ready" $SERVICE_ARGS "$@" >"$OUT/$label.service.log" 2>&1 &
    SERVICE_PID=$!
    local waited=0
    while [[ ! -s "$ready" ]]; do
        if ! kill -0 "$SERVICE_PID" 2>/dev/null; then
            tail -n 30 "$OUT/$label.service.log" >&2
            die "the service ($label) exited before it was ready; log: $OUT/$label.service.log"
        fi
        if (( waited >= READY_TIMEOUT * 2 )); then
            tail -n 30 "$OUT/$label.service.log" >&2
            die "the service ($label) was not ready after ${READY_TIMEOUT}s; log: $OUT/$label.service.log"
        fi
        sleep 0.5
        waited=$((waited + 1))
    done
    PORT=$(cat "$ready")
    psql_db -c "UPDATE account SET balance = $BALANCE WHERE id IN ('acc-1', 'acc-2')" >/dev/null
}

# run LABEL [service args...]: one row
run() {
    local label=$1; shift
    start_service "$label" "$@"
    say "$label: service pid $SERVICE_PID on port $PORT; $WARMUP_STORMS warmup + $STORMS storms of $REQUESTS requests"
    local line status=0
    # shellcheck disable=SC2086 # LOAD_JAVA_OPTS is a list of options
    line=$(java $LOAD_JAVA_OPTS -cp "$LOAD_CP" io.retrysafe.benchmarks.load.DuplicateStorm \
        --url "http://127.0.0.1:$PORT/payments" --user "$USER_NAME" --password "$USER_PASSWORD" \
        --requests "$REQUESTS" --storms "$STORMS" --warmup-storms "$WARMUP_STORMS" \
        --json "$OUT/$label.json" 2>"$OUT/$label.load.log") || status=$?
    sed "s/^/  /" "$OUT/$label.load.log" >&2
    (( status == 0 || status == 3 )) || die "DuplicateStorm failed ($label), exit $status"
    local payments
    payments=$(psql_db -c "SELECT count(*) FROM payment")
    say "$label: $line; payments in DB: $payments (expected $((STORMS + WARMUP_STORMS)))"
    stop_service
    drop_db
    printf '%s|%s|%s\n' "$label" "$payments" "$line" >>"$OUT/rows.txt"
}

: >"$OUT/rows.txt"
say "results in $OUT; $REQUESTS requests per storm, $WARMUP_STORMS warmup + $STORMS storms; $(nproc) CPUs,$(uptime | sed 's/.*load average/ load average/')"
for row in $ROWS; do
    case $row in
        off) run filter-off --retrysafe.fast-filter.enabled=false ;;
        on) run filter-on --retrysafe.fast-filter.enabled=true ;;
        *) die "ROWS may hold off and on, but had $row" ;;
    esac
done

# --- the table ------------------------------------------------------------------------------------
field() { sed -n "s/.*[[:space:]]$1=\([^[:space:]]*\).*/\1/p" <<<" $2"; }
{
    echo "| fast filter | storms | requests each | all answered, median ms | all answered, max ms | p50 ms | p99 ms | max ms | statuses | errors | one 201 and one payment named (held) | broken | payments in DB |"
    echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | --- | ---: | ---: |"
    while IFS='|' read -r label payments line; do
        statuses=$(field statuses "$line")
        printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s of %s expected |\n' \
            "${label#filter-}" "$(field storms "$line")" "$(field requests "$line")" \
            "$(field all-answered-median "$line")" "$(field all-answered-max "$line")" "$(field p50 "$line")" \
            "$(field p99 "$line")" "$(field max "$line")" "${statuses//,/, }" "$(field errors "$line")" \
            "$(field held "$line")" "$(field broken "$line")" "$payments" "$((STORMS + WARMUP_STORMS))"
    done <"$OUT/rows.txt"
    echo
    echo "Each storm: $REQUESTS requests with one new Idempotency-Key, released together, one connection each, over"
    echo "loopback HTTP/1.1; times from the release. Statuses summed over the measured storms; payments in DB"
    echo "include the warmup storms. Transactional mode. Source: $SOURCE. Service arguments: ${SERVICE_ARGS:-none}."
    echo "Machine: $(nproc) CPUs,$(uptime | sed 's/.*load average/ load average/') at the end; $(java -version 2>&1 | head -n 1)."
} | tee "$OUT/table.md"
say "table: $OUT/table.md"
