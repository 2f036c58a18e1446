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
#   SERVICE_CLASSPATH   a file holding the service's runtime classpath (default: derived from ~/.m2; to write
#                       it from the reactor without installing, see storm.sh)
#   SERVICE_ARGS        more arguments for every service start, e.g. --retrysafe.fast-filter.enabled=true
#                       (default none: the service as application.yml configures it)
#   OUT                 where logs, JSON results and table.md go (default a new temporary directory)
#   READY_TIMEOUT       seconds to wait for the service to start (default 180)
#   JVM_WARMUP, SETTLE_ROUND, SETTLE_SHARE, SETTLE_MAX
#                       before its row, each service under the row's load at 8 clients for at least JVM_WARMUP
#                       (default 20s), then in rounds of SETTLE_ROUND (default 10s) until its JIT compilers ran
#                       less than SETTLE_SHARE (default 0.05) of a round, or SETTLE_MAX (default 180s) in all
#                       (warm_until_settled in lib.sh); WARMUP is then the row's own, at its thread count
#
# Replays from PostgreSQL alone vs with the Redis fast filter, side by side: replay-fast-filter.sh.
#
# Balances: schema.sql gives acc-1 and acc-2 100000 cents each; at 1 cent per payment a long run would
# drain them and turn into 402s, so after the service starts each run sets both balances to 10^12.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh"

WARMUP=${WARMUP:-5s}
DURATION=${DURATION:-15s}
THREADS=${THREADS:-"1 8"}
ACCOUNTS=${ACCOUNTS:-acc-1,acc-2}
OUT=${OUT:-$(mktemp -d -t retrysafe-load.XXXXXX)}
DB="rs_load_$$"
mkdir -p "$OUT"

check_prerequisites HttpLoad
derive_classpath
take_snapshot
cleanup_on_exit

# --- one service at a time, each on a fresh database ----------------------------------------------
# run LABEL THREADS MODE [service args...]: one row
run() {
    local label=$1 threads=$2 mode=$3; shift 3
    local name="$label-t$threads"
    start_service "$name" "$DB" "$@"
    await_ready "$name" acc-1 acc-2
    local accounts=()
    [[ "$mode" == replay ]] || accounts=(--accounts "$ACCOUNTS")
    # At 8 clients whatever the row's threads, until the compilers settle: a JVM still compiling measures them.
    warm_until_settled "$name" "${PID[$name]}" "${PORT[$name]}" --mode "$mode" --threads 8 "${accounts[@]}"
    say "$name: service pid ${PID[$name]} on port ${PORT[$name]}, HttpLoad --mode $mode --threads $threads"
    http_load "$name" "${PORT[$name]}" --mode "$mode" --threads "$threads" "${accounts[@]}"
    local payments
    payments=$(psql_db "$DB" -c "SELECT count(*) FROM payment")
    stop_service "$name"
    drop_db "$DB"
    printf '%s|%s|%s|%s\n' "$label" "$threads" "$payments" "$RESULT" >>"$OUT/rows.txt"
}

: >"$OUT/rows.txt"
say "results in $OUT; warmup $WARMUP, duration $DURATION, threads $THREADS; $(machine)"
for t in $THREADS; do
    run on-new-key "$t" new-key
    run off-no-key "$t" no-key --retrysafe.enabled=false
    run on-replay "$t" replay
done

# --- the table ------------------------------------------------------------------------------------
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
            ratio=$(ratio "$rps" "$off_rps")
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
    echo "Closed loop over loopback HTTP/1.1; each service first under its row's load at 8 clients until its JIT"
    echo "compilers settled (at least ${JVM_WARMUP:-20s}, at most ${SETTLE_MAX:-180s}), then warmup $WARMUP and $DURATION"
    echo "measured; one fresh JVM and one fresh database per row; statuses as status:count of the measured requests;"
    echo "payments in DB includes the warmups."
    echo "Source: $SOURCE. Service arguments: ${SERVICE_ARGS:-none}."
    echo "Machine: $(machine) at the end; $(java -version 2>&1 | head -n 1)."
} | tee "$OUT/table.md"
say "table: $OUT/table.md"
