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
#   JVM_WARMUP, SETTLE_ROUND, SETTLE_SHARE, SETTLE_MAX
#                             before its storms, each service under closed-loop load with new keys (HttpLoad,
#                             8 clients) for at least JVM_WARMUP (default 20s), then in rounds of SETTLE_ROUND
#                             (default 10s) until its JIT compilers ran less than SETTLE_SHARE (default 0.05)
#                             of a round, or SETTLE_MAX (default 180s) in all (warm_until_settled in lib.sh);
#                             the payments that load makes are not counted as the storms'
#
# A storm opens REQUESTS connections at once: the client's open-files limit must allow it (ulimit -n).
# The service holds up to 20 PostgreSQL connections (its Hikari pool): max_connections must leave room.
# The first storm on a fresh JVM is slow even after the settle (the storm's own paths, the fast filter's
# Redis connection not yet up): keep WARMUP_STORMS at 1 or more.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh"

REQUESTS=${REQUESTS:-1000}
STORMS=${STORMS:-3}
WARMUP_STORMS=${WARMUP_STORMS:-1}
ROWS=${ROWS:-"off on"}
REDIS_URI=${REDIS_URI:-redis://127.0.0.1:6379}
OUT=${OUT:-$(mktemp -d -t retrysafe-storm.XXXXXX)}
DB="rs_storm_$$"
mkdir -p "$OUT"

check_prerequisites DuplicateStorm
check_prerequisites HttpLoad
(( $(ulimit -n) > REQUESTS + 100 )) || die "open-files limit $(ulimit -n) is too low for $REQUESTS connections: ulimit -n $((REQUESTS * 2))"
derive_classpath
take_snapshot
cleanup_on_exit

# --- one service at a time, each on a fresh database ----------------------------------------------
# run LABEL [service args...]: one row
run() {
    local label=$1; shift
    # application.yml takes the fast filter's Redis from RETRYSAFE_REDIS_URI
    RETRYSAFE_REDIS_URI="$REDIS_URI" start_service "$label" "$DB" "$@"
    await_ready "$label" acc-1 acc-2
    # Ordinary load first, until the compilers settle: a storm on a JVM still compiling measures the compiler.
    warm_until_settled "$label" "${PID[$label]}" "${PORT[$label]}" --mode new-key --threads 8 --accounts acc-1,acc-2
    local settled
    settled=$(psql_db "$DB" -c "SELECT count(*) FROM payment")
    say "$label: service pid ${PID[$label]} on port ${PORT[$label]}; $WARMUP_STORMS warmup + $STORMS storms of $REQUESTS requests"
    local line status=0
    # shellcheck disable=SC2086 # LOAD_JAVA_OPTS is a list of options
    line=$(java $LOAD_JAVA_OPTS -cp "$LOAD_CP" io.retrysafe.benchmarks.load.DuplicateStorm \
        --url "http://127.0.0.1:${PORT[$label]}/payments" --user "$USER_NAME" --password "$USER_PASSWORD" \
        --requests "$REQUESTS" --storms "$STORMS" --warmup-storms "$WARMUP_STORMS" \
        --json "$OUT/$label.json" 2>"$OUT/$label.load.log") || status=$?
    sed "s/^/  /" "$OUT/$label.load.log" >&2
    (( status == 0 || status == 3 )) || die "DuplicateStorm failed ($label), exit $status"
    local payments
    payments=$(( $(psql_db "$DB" -c "SELECT count(*) FROM payment") - settled ))
    say "$label: $line; payments in DB: $payments (expected $((STORMS + WARMUP_STORMS)))"
    stop_service "$label"
    drop_db "$DB"
    printf '%s|%s|%s\n' "$label" "$payments" "$line" >>"$OUT/rows.txt"
}

: >"$OUT/rows.txt"
say "results in $OUT; $REQUESTS requests per storm, $WARMUP_STORMS warmup + $STORMS storms; $(machine)"
for row in $ROWS; do
    case $row in
        off) run filter-off --retrysafe.fast-filter.enabled=false ;;
        on) run filter-on --retrysafe.fast-filter.enabled=true ;;
        *) die "ROWS may hold off and on, but had $row" ;;
    esac
done

# --- the table ------------------------------------------------------------------------------------
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
    echo "loopback HTTP/1.1; times from the release. Each service first under ordinary load until its JIT compilers"
    echo "settled (at least ${JVM_WARMUP:-20s}, at most ${SETTLE_MAX:-180s}). Statuses summed over the measured storms;"
    echo "payments in DB include the warmup storms, not the settling load. Transactional mode. Source: $SOURCE. Service arguments: ${SERVICE_ARGS:-none}."
    echo "Machine: $(machine) at the end; $(java -version 2>&1 | head -n 1)."
} | tee "$OUT/table.md"
say "table: $OUT/table.md"
