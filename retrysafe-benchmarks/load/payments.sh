#!/usr/bin/env bash
# POST /payments with a new key per request, the variants below side by side, under the closed-loop HttpLoad:
#   off  RetrySafe switched off (--retrysafe.enabled=false), no key: the bare service
#   tx   transactional mode (the default): key, payment and stored response in one transaction
#   tl   transactional mode, the key written last (--retrysafe.store.key-order=last)
#   tn   the key written last without a look-up (--retrysafe.store.key-order=last-no-lookup)
#   to   transactional mode without RetrySafe's observation (--management.observations.enable.retrysafe.request=false)
#   sa   standalone mode (--retrysafe.mode=standalone): key committed first, outcome stored after
#   ff   transactional mode with the Redis fast filter in front (--retrysafe.fast-filter.enabled=true)
# All the services run at the same time, each on a database of its own; for each thread count and
# each of ROUNDS rounds HttpLoad runs against each in turn (the order rotates per round, so drift in
# the machine's load hits all alike). The table shows per variant the median of the rounds (rps, p50,
# p99), the ratio to off, and the CPU time per request of the variant's service and of the database
# server's processes serving its pool (when the server runs on this machine). It builds nothing; build
# and install first:
#
#   ./mvnw -q install -DskipTests -DskipITs -pl examples/payments-service,retrysafe-benchmarks -am
#   retrysafe-benchmarks/load/payments.sh                       # a first check: 3 rounds of 3s + 10s
#   ROUNDS=5 WARMUP=10s DURATION=20s retrysafe-benchmarks/load/payments.sh
#
# Settings (environment):
#   WARMUP, DURATION    per run (default 3s, 10s)
#   ROUNDS              runs per variant and thread count (default 3)
#   THREADS             thread counts (default "1 8")
#   VARIANTS            which of them (default "off tx tl sa ff"; tn as well on request; off is always run,
#                       as the baseline)
#   POOL                each service's connection pool (default 10: the services share the server)
#   JVM_WARMUP, SETTLE_ROUND, SETTLE_SHARE, SETTLE_MAX
#                       before the first run, each service gets at least JVM_WARMUP (default 20s) of load
#                       at 8 clients, not measured, then more in rounds of SETTLE_ROUND (default 10s) until
#                       its JIT compilers ran less than SETTLE_SHARE (default 0.05) of a round, or
#                       SETTLE_MAX (default 180s) in all (warm_until_settled in lib.sh)
#   REDIS_URI           the fast filter's Redis (default redis://127.0.0.1:6379); the run's keys are
#                       under rs-load-<pid>:ff: and deleted at the end (with redis-cli, if installed)
#   PG_HOST, PG_PORT, PG_USER, PGPASSWORD
#                       the PostgreSQL server (default 127.0.0.1, 5432, postgres); the databases
#                       rs_load_<pid>_<variant> are created and dropped by the run
#   SERVICE_JAVA_OPTS, LOAD_JAVA_OPTS, SERVICE_ARGS, OUT, READY_TIMEOUT   as in compare.sh
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh"

WARMUP=${WARMUP:-3s}
DURATION=${DURATION:-10s}
ROUNDS=${ROUNDS:-3}
THREADS=${THREADS:-"1 8"}
POOL=${POOL:-10}
REDIS_URI=${REDIS_URI:-redis://127.0.0.1:6379}
OUT=${OUT:-$(mktemp -d -t retrysafe-payments.XXXXXX)}
KEY_PREFIX="rs-load-$$:ff:"
read -ra VARIANTS <<<"${VARIANTS:-off tx tl sa ff}"
[[ " ${VARIANTS[*]} " == *" off "* ]] || VARIANTS=(off "${VARIANTS[@]}")
mkdir -p "$OUT"

check_prerequisites HttpLoad
require_local_redis
derive_classpath
take_snapshot
cleanup_on_exit

# --- the services, all running throughout ---------------------------------------------------------
start_variants "${VARIANTS[@]}"
settle_variants "${VARIANTS[@]}"

# run VARIANT THREADS ROUND: one HttpLoad run, one line in rows.txt
run() {
    local v=$1 threads=$2 round=$3
    local name="$v-t$threads-r$round" mode=new-key
    [[ "$v" == off ]] && mode=no-key
    # Plans as autovacuum would keep them: a statement the service server-prepared while its tables
    # were empty keeps a sequential scan until the next ANALYZE (with autovacuum off, never).
    psql_db "$(variant_db "$v")" -c "ANALYZE" >/dev/null
    local backends service_ticks db_ticks rps db
    read -ra backends <<<"$(process_backends "${PID[$v]}")"
    service_ticks=$(cpu_ticks "${PID[$v]}")
    db_ticks=$(cpu_ticks "${backends[@]}")
    http_load "$name" "${PORT[$v]}" --mode "$mode" --threads "$threads" --accounts acc-1,acc-2
    rps=$(field rps "$RESULT")
    db=nan # a server on another machine: not measured
    [[ ${#backends[@]} -gt 0 ]] && db=$(cpu_us_per_request "$(( $(cpu_ticks "${backends[@]}") - db_ticks ))" "$rps")
    printf '%s|%s|%s|%s service_us=%s db_us=%s\n' "$v" "$threads" "$round" "$RESULT" \
        "$(cpu_us_per_request "$(( $(cpu_ticks "${PID[$v]}") - service_ticks ))" "$rps")" "$db" >>"$OUT/rows.txt"
}

: >"$OUT/rows.txt"
say "results in $OUT; $ROUNDS rounds of warmup $WARMUP + duration $DURATION; threads $THREADS; $(machine)"
for t in $THREADS; do
    for r in $(seq 1 "$ROUNDS"); do
        # rotate the order: round 1 off tx tl sa ff, round 2 tx tl sa ff off, ...
        order=()
        n=${#VARIANTS[@]}
        for ((i = 0; i < n; i++)); do order+=("${VARIANTS[$(( (i + r - 1) % n ))]}"); done
        for v in "${order[@]}"; do run "$v" "$t" "$r"; done
    done
done
declare -A PAYMENTS
for v in "${VARIANTS[@]}"; do PAYMENTS[$v]=$(psql_db "$(variant_db "$v")" -c "SELECT count(*) FROM payment"); done

# --- the table ------------------------------------------------------------------------------------
{
    echo "| variant | threads | rounds | rps (median) | rps / bare | p50 ms | p99 ms | service CPU µs / request | database CPU µs / request | statuses (all rounds) |"
    echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
    for t in $THREADS; do
        off_rps=$(values "off|$t" rps | median %.1f)
        for v in "${VARIANTS[@]}"; do
            rps=$(values "$v|$t" rps | median %.1f)
            p50=$(values "$v|$t" p50 | median %.2f)
            p99=$(values "$v|$t" p99 | median %.2f)
            st=$(statuses "$v|$t")
            errs=$(errors "$v|$t")
            [[ "$errs" != 0 ]] && st="$st, errors:$errs"
            printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "${VARIANT_LABEL[$v]}" "$t" "$ROUNDS" \
                "$rps" "$(ratio "$rps" "$off_rps")" "$p50" "$p99" "$(values "$v|$t" service_us | range %.0f)" \
                "$(values "$v|$t" db_us | range %.0f)" "$st"
        done
    done
    echo
    echo "Closed loop over loopback HTTP/1.1, HttpLoad --mode new-key (bare: no-key); before round 1 each service"
    echo "under load until its JIT compilers settled (at least ${JVM_WARMUP:-20s}, at most ${SETTLE_MAX:-180s}); per round"
    echo "warmup $WARMUP, then $DURATION measured; all the services ran throughout, the order rotated per round;"
    echo "medians of the rounds. CPU per request: the service's process and its database's server processes (its"
    echo "pool's connections; not the server's shared writers), over each round's warmup and measurement, median (range)."
    made=""
    for v in "${VARIANTS[@]}"; do made+="${made:+, }$v ${PAYMENTS[$v]}"; done
    echo "Payments made: $made. Pool: $POOL per service."
    echo "Source: $SOURCE. Service arguments: ${SERVICE_ARGS:-none}."
    echo "Machine: $(machine) at the end; $(java -version 2>&1 | head -n 1)."
} | tee "$OUT/table.md"
say "table: $OUT/table.md"
