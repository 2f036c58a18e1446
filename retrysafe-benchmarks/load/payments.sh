#!/usr/bin/env bash
# POST /payments with a new key per request, four ways side by side, under the closed-loop HttpLoad:
#   off  RetrySafe switched off (--retrysafe.enabled=false), no key: the bare service
#   tx   transactional mode (the default): key, payment and stored response in one transaction
#   sa   standalone mode (--retrysafe.mode=standalone): key committed first, outcome stored after
#   ff   transactional mode with the Redis fast filter in front (--retrysafe.fast-filter.enabled=true)
# All four services run at the same time, each on a database of its own; for each thread count and
# each of ROUNDS rounds HttpLoad runs against each in turn (the order rotates per round, so drift in
# the machine's load hits all alike). The table shows per variant the median of the rounds (rps, p50,
# p99) and the ratio to off. It builds nothing; build and install first:
#
#   ./mvnw -q install -DskipTests -DskipITs -pl examples/payments-service,retrysafe-benchmarks -am
#   retrysafe-benchmarks/load/payments.sh                       # a first check: 3 rounds of 3s + 10s
#   ROUNDS=5 WARMUP=10s DURATION=20s retrysafe-benchmarks/load/payments.sh
#
# Settings (environment):
#   WARMUP, DURATION    per run (default 3s, 10s)
#   ROUNDS              runs per variant and thread count (default 3)
#   THREADS             thread counts (default "1 8")
#   POOL                each service's connection pool (default 10: four services share the server)
#   REDIS_URI           the fast filter's Redis (default redis://127.0.0.1:6379); the run's keys are
#                       under rs-load-<pid>:ff: and deleted at the end (with redis-cli, if installed)
#   PG_HOST, PG_PORT, PG_USER, PGPASSWORD
#                       the PostgreSQL server (default 127.0.0.1, 5432, postgres); the databases
#                       rs_load_<pid>_<variant> are created and dropped by the run
#   SERVICE_JAVA_OPTS, LOAD_JAVA_OPTS, SERVICE_ARGS, OUT, READY_TIMEOUT   as in compare.sh
set -euo pipefail

cd "$(dirname "$0")/../.."
ROOT=$(pwd)

WARMUP=${WARMUP:-3s}
DURATION=${DURATION:-10s}
ROUNDS=${ROUNDS:-3}
THREADS=${THREADS:-"1 8"}
POOL=${POOL:-10}
REDIS_URI=${REDIS_URI:-redis://127.0.0.1:6379}
PG_HOST=${PG_HOST:-127.0.0.1}
PG_PORT=${PG_PORT:-5432}
PG_USER=${PG_USER:-postgres}
READY_TIMEOUT=${READY_TIMEOUT:-180}
SERVICE_JAVA_OPTS=${SERVICE_JAVA_OPTS:-}
SERVICE_ARGS=${SERVICE_ARGS:-}
LOAD_JAVA_OPTS=${LOAD_JAVA_OPTS:-}
OUT=${OUT:-$(mktemp -d -t retrysafe-payments.XXXXXX)}
KEY_PREFIX="rs-load-$$:ff:"
USER_NAME=alice
USER_PASSWORD=alice-secret
BALANCE=1000000000000
VARIANTS=(off tx sa ff)

LOAD_CLASSES="$ROOT/retrysafe-benchmarks/target/classes"
SERVICE_CLASSES="$ROOT/examples/payments-service/target/classes"
SERVICE_MAIN=io.retrysafe.examples.paymentsservice.PaymentsServiceApplication

mkdir -p "$OUT"
say() { printf '%s\n' "payments.sh: $*" >&2; }
die() { say "$*"; exit 1; }
db() { printf 'rs_load_%s_%s' "$$" "$1"; }

psql_admin() { psql -h "$PG_HOST" -p "$PG_PORT" -U "$PG_USER" -d postgres -v ON_ERROR_STOP=1 -qAtX "$@"; }
psql_db() { local d=$1; shift; psql -h "$PG_HOST" -p "$PG_PORT" -U "$PG_USER" -d "$d" -v ON_ERROR_STOP=1 -qAtX "$@"; }

# --- prerequisites -------------------------------------------------------------------------------
command -v psql >/dev/null || die "psql is needed (to create and drop the run's databases)"
[[ -f "$LOAD_CLASSES/io/retrysafe/benchmarks/load/HttpLoad.class" ]] \
    || die "HttpLoad is not built: ./mvnw -q -pl retrysafe-benchmarks -am install -DskipTests"
[[ -f "$SERVICE_CLASSES/${SERVICE_MAIN//.//}.class" ]] \
    || die "the payments service is not built: ./mvnw -q -pl examples/payments-service -am install -DskipTests -DskipITs"
psql_admin -c "SELECT 1" >/dev/null || die "cannot reach PostgreSQL as $PG_USER at $PG_HOST:$PG_PORT"
case $REDIS_URI in
    redis://127.0.0.1[:/]* | redis://localhost[:/]* | redis://127.0.0.1 | redis://localhost) ;;
    *) die "REDIS_URI must be a Redis on this machine (redis://127.0.0.1:PORT), but was $REDIS_URI" ;;
esac

say "deriving the payments service's classpath"
./mvnw -q -o -pl examples/payments-service dependency:build-classpath -Dmdep.includeScope=runtime \
    -Dmdep.outputFile="$OUT/service.classpath" >"$OUT/classpath.log" 2>&1 \
    || die "dependency:build-classpath failed (see $OUT/classpath.log); is the reactor installed in ~/.m2?"

# A snapshot of what is measured, taken once (see compare.sh): a rebuild during the run changes nothing.
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

# --- four services, all running throughout --------------------------------------------------------
declare -A PID PORT

stop_service() {
    local v=$1 pid=${PID[$1]:-}
    [[ -n "$pid" ]] || return 0
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 1 60); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.5
        done
        if kill -0 "$pid" 2>/dev/null; then
            say "service $v ($pid) did not stop within 30 s of SIGTERM: SIGKILL"
            kill -KILL "$pid" 2>/dev/null || true
        fi
    fi
    wait "$pid" 2>/dev/null || true
    PID[$v]=""
}

drop_db() { psql_admin -c "DROP DATABASE IF EXISTS \"$(db "$1")\" WITH (FORCE)" >/dev/null 2>&1 || true; }

delete_redis_keys() {
    command -v redis-cli >/dev/null || { say "no redis-cli: the run's keys ($KEY_PREFIX*) expire within 1 h"; return 0; }
    redis-cli -u "$REDIS_URI" --scan --pattern "$KEY_PREFIX*" 2>/dev/null \
        | xargs -r -n 100 redis-cli -u "$REDIS_URI" DEL >/dev/null 2>&1 || true
}

cleanup() {
    for v in "${VARIANTS[@]}"; do stop_service "$v"; drop_db "$v"; done
    delete_redis_keys
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# start_service VARIANT [service args...]: a fresh database, the service on a free port, in the background
start_service() {
    local v=$1; shift
    drop_db "$v"
    psql_admin -c "CREATE DATABASE \"$(db "$v")\"" >/dev/null
    rm -f "$OUT/$v.ready"
    # shellcheck disable=SC2086 # SERVICE_JAVA_OPTS and SERVICE_ARGS are lists
    RETRYSAFE_JDBC_URL="jdbc:postgresql://$PG_HOST:$PG_PORT/$(db "$v")" RETRYSAFE_JDBC_USER="$PG_USER" \
        RETRYSAFE_JDBC_PASSWORD="${PGPASSWORD:-}" \
        java $SERVICE_JAVA_OPTS -cp "$SERVICE_CP" "$SERVICE_MAIN" \
        --server.port=0 --payments.ready-file="$OUT/$v.ready" $SERVICE_ARGS "$@" >"$OUT/$v.service.log" 2>&1 &
    PID[$v]=$!
}

await_ready() {
    local v=$1 waited=0
    while [[ ! -s "$OUT/$v.ready" ]]; do
        if ! kill -0 "${PID[$v]}" 2>/dev/null; then
            tail -n 30 "$OUT/$v.service.log" >&2
            die "the service ($v) exited before it was ready; log: $OUT/$v.service.log"
        fi
        if (( waited >= READY_TIMEOUT * 2 )); then
            tail -n 30 "$OUT/$v.service.log" >&2
            die "the service ($v) was not ready after ${READY_TIMEOUT}s; log: $OUT/$v.service.log"
        fi
        sleep 0.5
        waited=$((waited + 1))
    done
    PORT[$v]=$(cat "$OUT/$v.ready")
    psql_db "$(db "$v")" -c "UPDATE account SET balance = $BALANCE WHERE id IN ('acc-1', 'acc-2')" >/dev/null
}

start_service off --retrysafe.enabled=false --spring.datasource.hikari.maximum-pool-size="$POOL"
start_service tx --spring.datasource.hikari.maximum-pool-size="$POOL"
start_service sa --retrysafe.mode=standalone --spring.datasource.hikari.maximum-pool-size="$POOL"
start_service ff --retrysafe.fast-filter.enabled=true --retrysafe.fast-filter.redis-uri="$REDIS_URI" \
    --retrysafe.fast-filter.key-prefix="$KEY_PREFIX" --spring.datasource.hikari.maximum-pool-size="$POOL"
for v in "${VARIANTS[@]}"; do
    await_ready "$v"
    say "$v: pid ${PID[$v]} on port ${PORT[$v]}"
done

# run VARIANT THREADS ROUND: one HttpLoad run, one line in rows.txt
run() {
    local v=$1 threads=$2 round=$3
    local name="$v-t$threads-r$round" line mode=new-key
    [[ "$v" == off ]] && mode=no-key
    # Plans as autovacuum would keep them: a statement the service server-prepared while its tables
    # were empty keeps a sequential scan until the next ANALYZE (with autovacuum off, never).
    psql_db "$(db "$v")" -c "ANALYZE" >/dev/null
    # shellcheck disable=SC2086 # LOAD_JAVA_OPTS is a list of options
    line=$(java $LOAD_JAVA_OPTS -cp "$LOAD_CP" io.retrysafe.benchmarks.load.HttpLoad \
        --url "http://127.0.0.1:${PORT[$v]}/payments" --user "$USER_NAME" --password "$USER_PASSWORD" \
        --mode "$mode" --threads "$threads" --warmup "$WARMUP" --duration "$DURATION" \
        --accounts acc-1,acc-2 --json "$OUT/$name.json" 2>"$OUT/$name.load.log") \
        || { cat "$OUT/$name.load.log" >&2; die "HttpLoad failed ($name)"; }
    [[ -s "$OUT/$name.load.log" ]] && sed "s/^/  /" "$OUT/$name.load.log" >&2
    say "$name: $line"
    printf '%s|%s|%s|%s\n' "$v" "$threads" "$round" "$line" >>"$OUT/rows.txt"
}

: >"$OUT/rows.txt"
say "results in $OUT; $ROUNDS rounds of warmup $WARMUP + duration $DURATION; threads $THREADS;" \
    "$(nproc) CPUs,$(uptime | sed 's/.*load average/ load average/')"
for t in $THREADS; do
    for r in $(seq 1 "$ROUNDS"); do
        # rotate the order: round 1 off tx sa ff, round 2 tx sa ff off, ...
        order=()
        for i in 0 1 2 3; do order+=("${VARIANTS[$(( (i + r - 1) % 4 ))]}"); done
        for v in "${order[@]}"; do run "$v" "$t" "$r"; done
    done
done
declare -A PAYMENTS
for v in "${VARIANTS[@]}"; do PAYMENTS[$v]=$(psql_db "$(db "$v")" -c "SELECT count(*) FROM payment"); done

# --- the table ------------------------------------------------------------------------------------
field() { sed -n "s/.*[[:space:]]$1=\([^[:space:]]*\).*/\1/p" <<<" $2"; }
# values V T FIELD: that field of every round, one per line
values() {
    local v t r line
    while IFS='|' read -r v t r line; do
        if [[ "$v" == "$1" && "$t" == "$2" ]]; then field "$3" "$line"; fi
    done <"$OUT/rows.txt"
}
median() { sort -g | awk -v f="$1\n" '{ a[NR] = $1 } END { if (NR == 0) print "n/a"; else if (NR % 2) printf f, a[(NR + 1) / 2]; else printf f, (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
statuses() {
    values "$1" "$2" statuses | tr ',' '\n' | awk -F: 'NF == 2 { n[$1] += $2 } END { for (s in n) printf "%s%s:%d", (c++ ? ", " : ""), s, n[s] }'
}
errors() { values "$1" "$2" errors | awk '{ n += $1 } END { print n + 0 }'; }
declare -A LABEL=([off]="bare (RetrySafe off)" [tx]="transactional" [sa]="standalone" [ff]="transactional + fast filter")
{
    echo "| variant | threads | rounds | rps (median) | rps / bare | p50 ms | p99 ms | statuses (all rounds) |"
    echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
    for t in $THREADS; do
        off_rps=$(values off "$t" rps | median %.1f)
        for v in "${VARIANTS[@]}"; do
            rps=$(values "$v" "$t" rps | median %.1f)
            p50=$(values "$v" "$t" p50 | median %.2f)
            p99=$(values "$v" "$t" p99 | median %.2f)
            st=$(statuses "$v" "$t")
            errs=$(errors "$v" "$t")
            [[ "$errs" != 0 ]] && st="$st, errors:$errs"
            printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "${LABEL[$v]}" "$t" "$ROUNDS" \
                "$rps" "$(ratio "$rps" "$off_rps")" "$p50" "$p99" "$st"
        done
    done
    echo
    echo "Closed loop over loopback HTTP/1.1, HttpLoad --mode new-key (bare: no-key); per round warmup $WARMUP,"
    echo "then $DURATION measured; all four services ran throughout, the order rotated per round; medians of the rounds."
    echo "Payments made: off ${PAYMENTS[off]}, tx ${PAYMENTS[tx]}, sa ${PAYMENTS[sa]}, ff ${PAYMENTS[ff]}. Pool: $POOL per service."
    echo "Source: $SOURCE. Service arguments: ${SERVICE_ARGS:-none}."
    echo "Machine: $(nproc) CPUs,$(uptime | sed 's/.*load average/ load average/') at the end; $(java -version 2>&1 | head -n 1)."
} | tee "$OUT/table.md"
say "table: $OUT/table.md"
