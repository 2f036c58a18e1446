#!/usr/bin/env bash
# The servlet and the reactive payments services, each with RetrySafe on and off, side by side in one run,
# under the closed-loop HttpLoad (POST /payments):
#   servlet-off   examples/payments-service (Spring MVC, JDBC), --retrysafe.enabled=false, no key
#   servlet-on    the same service, transactional mode (its default), a new Idempotency-Key per request
#   reactive-off  examples/payments-reactive (WebFlux, R2DBC), RETRYSAFE_ENABLED=false, no key
#   reactive-on   the same service, RetrySafe on as the example wires it, a new Idempotency-Key per request
# All four run throughout, on one database of one PostgreSQL server: the same tables, so every variant
# meets the same table sizes, but each variant pays from two accounts of its own (<variant>-1 and -2,
# made by the run with a balance of 10^12), so that work one service still has in flight after its run
# holds no row lock the next run waits for. Each first gets JVM_WARMUP of load, not measured (a fresh JVM runs its first
# requests interpreted). Then for each client count and each of ROUNDS rounds HttpLoad runs against each
# in turn, the order rotating per round so that drift in the machine's load hits all alike. The table
# gives per variant the median over the rounds and its range (rps, p50, p99), and per stack the ratio
# of RetrySafe on to bare, taken within each round (the two runs of a pair are minutes apart at most)
# and given as the median and range of the rounds' ratios. It builds nothing; build and install first:
#
#   ./mvnw -q install -DskipTests -DskipITs -pl examples/payments-service,examples/payments-reactive,retrysafe-benchmarks -am
#   retrysafe-benchmarks/load/stacks.sh                      # 3 rounds of 3s + 10s at 8 and 64 clients
#   ROUNDS=5 WARMUP=10s DURATION=30s retrysafe-benchmarks/load/stacks.sh
#
# or, without installing into ~/.m2, with each service's classpath written from the reactor:
#
#   for m in payments-service payments-reactive; do
#       ./mvnw -q -pl examples/$m -am package dependency:build-classpath -DskipTests -DskipITs \
#           -Dmdep.includeScope=runtime -Dmdep.outputFile="$PWD/$m.classpath"
#   done
#   ./mvnw -q -pl retrysafe-benchmarks -am package -DskipTests -DskipITs
#   SERVICE_CLASSPATH=payments-service.classpath REACTIVE_CLASSPATH=payments-reactive.classpath \
#       retrysafe-benchmarks/load/stacks.sh
#
# Settings (environment):
#   WARMUP, DURATION    per run (default 3s, 10s)
#   JVM_WARMUP          before round 1, each service gets this much closed-loop load at the largest client
#                       count, not measured (default 20s)
#   ROUNDS              runs per variant and client count (default 3)
#   THREADS             client counts, one connection each (default "8 64")
#   POOL                each service's connection pool, Hikari and R2DBC alike (default 10: the four
#                       services share the server)
#   DB                  the database all four use (default: rs_load_<pid>_stacks, created before and
#                       dropped after the run); an existing database given here is neither created nor
#                       dropped: the services create their tables if missing, and the run's payments stay
#   SERVICE_CLASSPATH, REACTIVE_CLASSPATH
#                       files holding each service's runtime classpath (default: derived from ~/.m2)
#   SERVICE_ARGS        more arguments for every service start, servlet and reactive (default none)
#   PG_HOST, PG_PORT, PG_USER, PGPASSWORD, SERVICE_JAVA_OPTS, LOAD_JAVA_OPTS, OUT, READY_TIMEOUT
#                       as in compare.sh
#
# The reactive service takes its port from PORT and has no ready-file: it is started on a free port and
# is ready when it answers HTTP there (curl).
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh"

WARMUP=${WARMUP:-3s}
DURATION=${DURATION:-10s}
JVM_WARMUP=${JVM_WARMUP:-20s}
ROUNDS=${ROUNDS:-3}
THREADS=${THREADS:-"8 64"}
POOL=${POOL:-10}
OUT=${OUT:-$(mktemp -d -t retrysafe-stacks.XXXXXX)}
REACTIVE_CLASSES="$ROOT/examples/payments-reactive/target/classes"
REACTIVE_MAIN=io.retrysafe.examples.paymentsreactive.PaymentsReactiveApplication
VARIANTS=(servlet-off servlet-on reactive-off reactive-on)
declare -A STACK_LABEL=([servlet]="servlet (MVC, JDBC)" [reactive]="reactive (WebFlux, R2DBC)")
mkdir -p "$OUT"

check_prerequisites HttpLoad
[[ -f "$REACTIVE_CLASSES/${REACTIVE_MAIN//.//}.class" ]] \
    || die "the reactive payments service is not built: ./mvnw -q -pl examples/payments-reactive -am install -DskipTests -DskipITs"
command -v curl >/dev/null || die "curl is needed (to see when the reactive service answers)"
command -v python3 >/dev/null || die "python3 is needed (to find a free port for the reactive service)"
derive_classpath
derive_classpath examples/payments-reactive reactive.classpath "${REACTIVE_CLASSPATH:-}"
take_snapshot
snapshot_service reactive "$REACTIVE_CLASSES" "$OUT/reactive.classpath"
REACTIVE_CP=$SNAPSHOT_CP
cleanup_on_exit

if [[ -n "${DB:-}" ]]; then
    psql_db "$DB" -c "SELECT 1" >/dev/null || die "cannot reach the database $DB"
else
    DB="rs_load_$$_stacks"
    DATABASES[$DB]=1
    drop_db "$DB"
    psql_admin -c "CREATE DATABASE \"$DB\"" >/dev/null
fi

# --- the services, all running throughout, started one after the other (each creates its tables) -----
# launch_reactive NAME ENABLED: the reactive service on a free port, RetrySafe on (true) or off (false)
launch_reactive() {
    local name=$1
    DB_OF[$name]=$DB
    PORT[$name]=$(free_port)
    # shellcheck disable=SC2086 # SERVICE_JAVA_OPTS and SERVICE_ARGS are lists
    env PORT="${PORT[$name]}" RETRYSAFE_ENABLED="$2" \
        RETRYSAFE_R2DBC_URL="r2dbc:postgresql://$PG_HOST:$PG_PORT/$DB" RETRYSAFE_R2DBC_USER="$PG_USER" \
        RETRYSAFE_R2DBC_PASSWORD="${PGPASSWORD:-}" \
        java $SERVICE_JAVA_OPTS -cp "$REACTIVE_CP" "$REACTIVE_MAIN" \
        --spring.r2dbc.pool.initial-size="$POOL" --spring.r2dbc.pool.max-size="$POOL" $SERVICE_ARGS \
        >"$OUT/$name.service.log" 2>&1 &
    PID[$name]=$!
}
for v in "${VARIANTS[@]}"; do
    case $v in
        servlet-off) launch_service "$v" "$DB" --retrysafe.enabled=false --spring.datasource.hikari.maximum-pool-size="$POOL" ;;
        servlet-on) launch_service "$v" "$DB" --spring.datasource.hikari.maximum-pool-size="$POOL" ;;
        reactive-off) launch_reactive "$v" false ;;
        reactive-on) launch_reactive "$v" true ;;
    esac
    await_ready "$v"
    say "$v: pid ${PID[$v]} on port ${PORT[$v]}"
    psql_db "$DB" -c "INSERT INTO account (id, label, balance) VALUES ('$v-1', 'load', $BALANCE), ('$v-2', 'load', $BALANCE)
        ON CONFLICT (id) DO UPDATE SET balance = EXCLUDED.balance" >/dev/null
done
mode_of() { if [[ "$1" == *-off ]]; then echo no-key; else echo new-key; fi; }

largest=0
for t in $THREADS; do if (( t > largest )); then largest=$t; fi; done
say "results in $OUT; JVM warm-up $JVM_WARMUP each at $largest clients; $ROUNDS rounds of $WARMUP + $DURATION"
say "clients $THREADS; database $DB; $(machine)"
for v in "${VARIANTS[@]}"; do
    WARMUP=$JVM_WARMUP DURATION=1s http_load "$v-jvm" "${PORT[$v]}" --mode "$(mode_of "$v")" --threads "$largest" \
        --accounts "$v-1,$v-2"
done

# run VARIANT THREADS ROUND: one HttpLoad run, one line in rows.txt
run() {
    local v=$1 threads=$2 round=$3
    # Plans as autovacuum would keep them (see payments.sh).
    psql_db "$DB" -c "ANALYZE" >/dev/null
    http_load "$v-t$threads-r$round" "${PORT[$v]}" --mode "$(mode_of "$v")" --threads "$threads" --accounts "$v-1,$v-2"
    printf '%s|%s|%s|%s\n' "$v" "$threads" "$round" "$RESULT" >>"$OUT/rows.txt"
}

: >"$OUT/rows.txt"
for t in $THREADS; do
    for r in $(seq 1 "$ROUNDS"); do
        n=${#VARIANTS[@]}
        for ((i = 0; i < n; i++)); do run "${VARIANTS[$(( (i + r - 1) % n ))]}" "$t" "$r"; done
    done
done
PAYMENTS=$(psql_db "$DB" -c "SELECT count(*) FROM payment")

# --- the table ------------------------------------------------------------------------------------
# round_value VARIANT THREADS ROUND FIELD: that field of that one run
round_value() {
    local v t r line
    while IFS='|' read -r v t r line; do
        if [[ "$v" == "$1" && "$t" == "$2" && "$r" == "$3" ]]; then field "$4" "$line"; fi
    done <"$OUT/rows.txt"
}
# round_ratios STACK THREADS: rps on / rps bare of each round, one per line
round_ratios() {
    local r
    for r in $(seq 1 "$ROUNDS"); do
        ratio "$(round_value "$1-on" "$2" "$r" rps)" "$(round_value "$1-off" "$2" "$r" rps)"
        echo
    done
}
{
    echo "| stack | RetrySafe | clients | rps: median (min–max) | on / bare, per round: median (min–max) | p50 ms | p99 ms | statuses (all rounds) |"
    echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |"
    for t in $THREADS; do
        for v in "${VARIANTS[@]}"; do
            stack=${v%-*}
            on=off rel="(bare)"
            if [[ "$v" == *-on ]]; then on=on rel=$(round_ratios "$stack" "$t" | { grep -v n/a || true; } | range %.2f); fi
            st=$(statuses "$v|$t")
            [[ -n "$st" ]] || st="no answer"
            errs=$(errors "$v|$t")
            [[ "$errs" != 0 ]] && st="$st, errors:$errs"
            printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "${STACK_LABEL[$stack]}" "$on" "$t" \
                "$(values "$v|$t" rps | range %.1f)" "$rel" "$(spread "$v|$t" p50)" "$(spread "$v|$t" p99)" "$st"
        done
    done
    echo
    echo "Closed loop over loopback HTTP/1.1, HttpLoad --mode new-key (off: no-key); per run warmup $WARMUP, then"
    echo "$DURATION measured; all four services ran throughout on one database, the order rotated per round;"
    echo "$ROUNDS rounds, median (min–max) over them; the ratio is taken within each round. JVM warm-up: $JVM_WARMUP each."
    echo "Payments made: $PAYMENTS (all four services, warm-ups included). Pool: $POOL per service."
    echo "Source: $SOURCE. Service arguments: ${SERVICE_ARGS:-none}."
    echo "Machine: $(machine) at the end; $(java -version 2>&1 | head -n 1)."
} | tee "$OUT/table.md"
say "table: $OUT/table.md"
