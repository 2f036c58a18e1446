#!/usr/bin/env bash
# The payments service with and without RetrySafe, side by side, under the closed-loop HttpLoad.
#
# For each thread count (default: 1 and 8) it runs, each time on a fresh JVM and a fresh database:
#   (a) RetrySafe on,  a new Idempotency-Key per request   (HttpLoad --mode new-key)
#   (b) RetrySafe off (--retrysafe.enabled=false), no key  (HttpLoad --mode no-key)
#   (c) RetrySafe on,  one key replayed by every request   (HttpLoad --mode replay)
# and prints one markdown table. It builds nothing; build and install first (the service's classpath
# comes from ~/.m2, through dependency:build-classpath, plus examples/payments-service/target/classes):
#
#   ./mvnw -q install -DskipTests -DskipITs -pl examples/payments-service,retrysafe-benchmarks -am
#   retrysafe-benchmarks/load/compare.sh                       # warmup 5s, duration 15s, threads "1 8"
#   WARMUP=10s DURATION=60s retrysafe-benchmarks/load/compare.sh
#
# Settings (environment):
#   WARMUP, DURATION    per run (default 5s, 15s): short, for a first check
#   THREADS             thread counts (default "1 8")
#   ACCOUNTS            accounts the new-key and no-key runs spread over (default acc-1,acc-2;
#                       the replay run always sends the first)
#   PG_HOST, PG_PORT, PG_USER, PGPASSWORD
#                       the PostgreSQL server (default 127.0.0.1, 5432, postgres); each run gets its
#                       own database rs_load_<pid>, created before and dropped after the run
#   SERVICE_JAVA_OPTS, LOAD_JAVA_OPTS
#                       JVM options of the service and of the load generator (default none)
#   SERVICE_ARGS        more arguments for every service start, e.g. --retrysafe.fast-filter.enabled=true
#                       (default none: the service as application.yml configures it)
#   OUT                 where logs, JSON results and table.md go (default a new temporary directory)
#   READY_TIMEOUT       seconds to wait for the service to start (default 180)
#
# Replays from PostgreSQL alone vs with the Redis fast filter, side by side: replay-fast-filter.sh.
#
# Balances: schema.sql gives acc-1 and acc-2 100000 cents each; at 1 cent per payment a long run would
# drain them and turn into 402s, so after the service starts each run sets both balances to 10^12.
set -euo pipefail

cd "$(dirname "$0")/../.."
ROOT=$(pwd)

WARMUP=${WARMUP:-5s}
DURATION=${DURATION:-15s}
THREADS=${THREADS:-"1 8"}
ACCOUNTS=${ACCOUNTS:-acc-1,acc-2}
PG_HOST=${PG_HOST:-127.0.0.1}
PG_PORT=${PG_PORT:-5432}
PG_USER=${PG_USER:-postgres}
READY_TIMEOUT=${READY_TIMEOUT:-180}
SERVICE_JAVA_OPTS=${SERVICE_JAVA_OPTS:-}
SERVICE_ARGS=${SERVICE_ARGS:-}
LOAD_JAVA_OPTS=${LOAD_JAVA_OPTS:-}
OUT=${OUT:-$(mktemp -d -t retrysafe-load.XXXXXX)}
DB="rs_load_$$"
USER_NAME=alice
USER_PASSWORD=alice-secret
BALANCE=1000000000000

LOAD_CLASSES="$ROOT/retrysafe-benchmarks/target/classes"
SERVICE_CLASSES="$ROOT/examples/payments-service/target/classes"
SERVICE_MAIN=io.retrysafe.examples.paymentsservice.PaymentsServiceApplication

mkdir -p "$OUT"
say() { printf '%s\n' "compare.sh: $*" >&2; }
die() { say "$*"; exit 1; }

psql_admin() { psql -h "$PG_HOST" -p "$PG_PORT" -U "$PG_USER" -d postgres -v ON_ERROR_STOP=1 -qAtX "$@"; }
psql_db() { psql -h "$PG_HOST" -p "$PG_PORT" -U "$PG_USER" -d "$DB" -v ON_ERROR_STOP=1 -qAtX "$@"; }

# --- prerequisites -------------------------------------------------------------------------------
command -v psql >/dev/null || die "psql is needed (to create and drop the run's database)"
[[ -f "$LOAD_CLASSES/io/retrysafe/benchmarks/load/HttpLoad.class" ]] \
    || die "HttpLoad is not built: ./mvnw -q -pl retrysafe-benchmarks -am install -DskipTests"
[[ -f "$SERVICE_CLASSES/${SERVICE_MAIN//.//}.class" ]] \
    || die "the payments service is not built: ./mvnw -q -pl examples/payments-service -am install -DskipTests -DskipITs"
psql_admin -c "SELECT 1" >/dev/null || die "cannot reach PostgreSQL as $PG_USER at $PG_HOST:$PG_PORT"

say "deriving the payments service's classpath"
./mvnw -q -o -pl examples/payments-service dependency:build-classpath -Dmdep.includeScope=runtime \
    -Dmdep.outputFile="$OUT/service.classpath" >"$OUT/classpath.log" 2>&1 \
    || die "dependency:build-classpath failed (see $OUT/classpath.log); is the reactor installed in ~/.m2?"

# A snapshot of what is measured, taken once: the service's classes, RetrySafe's own jars and the load
# generator, so that a rebuild in the working tree during the run cannot change (or break) later rows.
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
        */io/retrysafe/*)
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
        RETRYSAFE_JDBC_PASSWORD="${PGPASSWORD:-}" \
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

# run LABEL THREADS MODE [service args...]: one row
run() {
    local label=$1 threads=$2 mode=$3; shift 3
    local name="$label-t$threads"
    start_service "$name" "$@"
    say "$name: service pid $SERVICE_PID on port $PORT, HttpLoad --mode $mode --threads $threads"
    local accounts=()
    [[ "$mode" == replay ]] || accounts=(--accounts "$ACCOUNTS")
    local line
    # shellcheck disable=SC2086 # LOAD_JAVA_OPTS is a list of options
    line=$(java $LOAD_JAVA_OPTS -cp "$LOAD_CP" io.retrysafe.benchmarks.load.HttpLoad \
        --url "http://127.0.0.1:$PORT/payments" --user "$USER_NAME" --password "$USER_PASSWORD" \
        --mode "$mode" --threads "$threads" --warmup "$WARMUP" --duration "$DURATION" "${accounts[@]}" \
        --json "$OUT/$name.json" 2>"$OUT/$name.load.log") \
        || { cat "$OUT/$name.load.log" >&2; die "HttpLoad failed ($name)"; }
    [[ -s "$OUT/$name.load.log" ]] && sed "s/^/  /" "$OUT/$name.load.log" >&2
    say "$name: $line"
    local payments
    payments=$(psql_db -c "SELECT count(*) FROM payment")
    stop_service
    drop_db
    printf '%s|%s|%s|%s\n' "$label" "$threads" "$payments" "$line" >>"$OUT/rows.txt"
}

: >"$OUT/rows.txt"
say "results in $OUT; warmup $WARMUP, duration $DURATION, threads $THREADS; $(nproc) CPUs,$(uptime | sed 's/.*load average/ load average/')"
for t in $THREADS; do
    run on-new-key "$t" new-key
    run off-no-key "$t" no-key --retrysafe.enabled=false
    run on-replay "$t" replay
done

# --- the table ------------------------------------------------------------------------------------
field() { sed -n "s/.*[[:space:]]$1=\([^[:space:]]*\).*/\1/p" <<<" $2"; }
row_line() { # row_line LABEL THREADS: HttpLoad's line of that run
    local lab thr payments line
    while IFS='|' read -r lab thr payments line; do
        if [[ "$lab" == "$1" && "$thr" == "$2" ]]; then printf '%s\n' "$line"; fi
    done <"$OUT/rows.txt"
}
row_payments() {
    local lab thr payments line
    while IFS='|' read -r lab thr payments line; do
        if [[ "$lab" == "$1" && "$thr" == "$2" ]]; then printf '%s\n' "$payments"; fi
    done <"$OUT/rows.txt"
}
{
    echo "| RetrySafe | requests carry | threads | requests | rps | rps vs off | p50 ms | p90 ms | p99 ms | max ms | statuses | payments in DB |"
    echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |"
    for t in $THREADS; do
        off_rps=$(field rps "$(row_line off-no-key "$t")")
        for label in on-new-key off-no-key on-replay; do
            line=$(row_line "$label" "$t")
            case $label in
                on-new-key) on=on; carry="a new key each" ;;
                off-no-key) on=off; carry="no key" ;;
                on-replay) on=on; carry="one key, replayed" ;;
            esac
            rps=$(field rps "$line")
            ratio=$(awk -v a="$rps" -v b="$off_rps" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }')
            statuses=$(field statuses "$line")
            errors=$(field errors "$line")
            if [[ "$errors" != 0 ]]; then statuses="$statuses, errors:$errors"; fi
            printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' \
                "$on" "$carry" "$t" "$(field requests "$line")" "$rps" "$ratio" \
                "$(field p50 "$line")" "$(field p90 "$line")" "$(field p99 "$line")" "$(field max "$line")" \
                "${statuses//,/, }" "$(row_payments "$label" "$t")"
        done
    done
    echo
    echo "Closed loop over loopback HTTP/1.1; warmup $WARMUP, then $DURATION measured; one fresh JVM and one fresh"
    echo "database per row; statuses as status:count of the measured requests; payments in DB includes the warmup."
    echo "Source: $SOURCE. Service arguments: ${SERVICE_ARGS:-none}."
    echo "Machine: $(nproc) CPUs,$(uptime | sed 's/.*load average/ load average/') at the end; $(java -version 2>&1 | head -n 1)."
} | tee "$OUT/table.md"
say "table: $OUT/table.md"
