#!/usr/bin/env bash
# Replays from PostgreSQL alone vs with the Redis fast filter, side by side, under the closed-loop HttpLoad.
#
# Two instances of the payments service run at the same time, each on a database of its own:
#   pg  RetrySafe on PostgreSQL (transactional store), as application.yml configures it
#   ff  the same, with --retrysafe.fast-filter.enabled=true on REDIS_URI (under a key prefix of this run)
# For each thread count and each of ROUNDS rounds, HttpLoad --mode replay runs against one, then the
# other (the order alternates per round, so drift in the machine's load hits both alike); each run
# stores KEYS fresh keys and then replays them. The table shows per variant the median of the rounds
# (rps, p50, p99) and the ratio ff/pg, and the replays' time in the service itself: the p99 and the share
# within 1 ms of its own http.server.requests histogram, from the round's keys stored to its end. It builds nothing; build and install first (as for compare.sh):
#
#   ./mvnw -q install -DskipTests -DskipITs -pl examples/payments-service,retrysafe-benchmarks -am
#   retrysafe-benchmarks/load/replay-fast-filter.sh                       # a first check: 3 rounds of 3s + 10s
#   ROUNDS=5 WARMUP=10s DURATION=30s retrysafe-benchmarks/load/replay-fast-filter.sh
#
# Settings (environment):
#   WARMUP, DURATION    per run (default 3s, 10s)
#   ROUNDS              runs per variant and thread count, alternating (default 3)
#   THREADS             thread counts (default "1 8")
#   KEYS                keys each run replays (default "1 64"): 1 = every replay of one key, which in
#                       PostgreSQL queue on the key's record; 64 = replays that do not contend
#   JVM_WARMUP, SETTLE_ROUND, SETTLE_SHARE, SETTLE_MAX
#                       before the first run, each service replays under load at 8 clients, not measured,
#                       until its JIT compilers settled, as in payments.sh (warm_until_settled in lib.sh)
#   REDIS_URI           the fast filter's Redis (default redis://127.0.0.1:6379); the run's keys are
#                       under rs-load-<pid>:ff: and deleted at the end (with redis-cli, if installed;
#                       otherwise they expire with the replay TTL, 1 h)
#   PG_HOST, PG_PORT, PG_USER, PGPASSWORD
#                       the PostgreSQL server (default 127.0.0.1, 5432, postgres); the databases
#                       rs_load_<pid>_pg and rs_load_<pid>_ff are created and dropped by the run
#   SERVICE_JAVA_OPTS, LOAD_JAVA_OPTS, SERVICE_ARGS, OUT, READY_TIMEOUT   as in compare.sh
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh"

WARMUP=${WARMUP:-3s}
DURATION=${DURATION:-10s}
ROUNDS=${ROUNDS:-3}
THREADS=${THREADS:-"1 8"}
KEYS=${KEYS:-"1 64"}
REDIS_URI=${REDIS_URI:-redis://127.0.0.1:6379}
OUT=${OUT:-$(mktemp -d -t retrysafe-replay.XXXXXX)}
KEY_PREFIX="rs-load-$$:ff:"
mkdir -p "$OUT"
db() { printf 'rs_load_%s_%s' "$$" "$1"; }

check_prerequisites HttpLoad
require_local_redis
derive_classpath
take_snapshot
cleanup_on_exit

# --- two services, both running throughout --------------------------------------------------------
# Each service times its own requests in a histogram (Spring's http.server.requests), so that a replay's
# latency is also read where the client's own waits for a CPU are not in it; its buckets start at 50 µs,
# not at Micrometer's 1 ms, so that a time under 1 ms is told apart.
SERVED_HISTOGRAM=(--management.metrics.distribution.percentiles-histogram.http.server.requests=true
    --management.metrics.distribution.minimum-expected-value.http.server.requests=50us)
start_service pg "$(db pg)" "${SERVED_HISTOGRAM[@]}"
start_service ff "$(db ff)" "${SERVED_HISTOGRAM[@]}" --retrysafe.fast-filter.enabled=true --retrysafe.fast-filter.redis-uri="$REDIS_URI" \
    --retrysafe.fast-filter.key-prefix="$KEY_PREFIX"
await_ready pg acc-1
await_ready ff acc-1
say "pg: pid ${PID[pg]} on port ${PORT[pg]}; ff: pid ${PID[ff]} on port ${PORT[ff]}"
for v in pg ff; do
    warm_until_settled "$v" "${PID[$v]}" "${PORT[$v]}" --mode replay --keys 64 --threads 8 --accounts acc-1
done

# served VARIANT: the service's histogram of its POST answers, one "upper-bound count" line per bucket. Not by
# its uri tag, which a build from before the starter tagged its own answers with their route left "UNKNOWN" on
# a replay; the load sends nothing but POST /payments.
served() {
    curl -s --max-time 10 "http://127.0.0.1:${PORT[$1]}/actuator/prometheus" | awk '
        /^http_server_requests_seconds_bucket\{/ && /method="POST"/ {
            match($0, /le="[^"]*"/); le = substr($0, RSTART + 4, RLENGTH - 5); n[le] += $NF }
        END { for (le in n) printf "%s %.0f\n", le, n[le] }' | sort -g
}

# served_count HISTOGRAM: how many requests it counts
served_count() { awk '$1 == "+Inf" { n = $2 } END { print n + 0 }' <<<"$1"; }

# after_priming VARIANT COUNT FILE: once the service has counted COUNT POST answers (those before the run and
# the run's priming requests, which store its keys), its histogram, in FILE
after_priming() {
    local h
    while h=$(served "$1"); (( $(served_count "$h") < $2 )); do sleep 0.05; done
    echo "$h" >"$3"
}

# served_p99 BEFORE AFTER: from two histograms of one service, what it served in between: its p99 in ms (the
# upper bound of the bucket the 99th percentile falls in) and the share it served within 1 ms
served_p99() {
    awk -v before="$1" '
        BEGIN { n = split(before, lines, "\n"); for (i = 1; i <= n; i++) { split(lines[i], f, " "); was[f[1]] = f[2] } }
        { le[NR] = $1; d[NR] = $2 - was[$1] } $1 == "+Inf" { total = $2 - was[$1] }
        END {
            if (total <= 0) { print "p99_served=n/a within_1ms=n/a"; exit }
            for (i = 1; i <= NR; i++) {
                if (le[i] != "+Inf" && le[i] + 0 <= 0.001) within = d[i]
                if (p99 == "" && d[i] >= 0.99 * total) p99 = (le[i] == "+Inf" ? "inf" : sprintf("%.3f", le[i] * 1000))
            }
            printf "p99_served=%s within_1ms=%.4f\n", p99, within / total
        }' <<<"$2"
}

# run VARIANT THREADS KEYS ROUND: one HttpLoad run, one line in rows.txt
run() {
    local v=$1 threads=$2 keys=$3 round=$4 before
    local name="$v-t$threads-k$keys-r$round"
    # Plans as autovacuum would keep them: a statement the service server-prepared while its tables
    # were empty keeps a sequential scan until the next ANALYZE (with autovacuum off, never).
    psql_db "$(db "$v")" -c "ANALYZE" >/dev/null
    # The service's own count starts once the run's keys are stored: replays only, the warm-up's included
    rm -f "$OUT/$name.primed"
    after_priming "$v" $(( $(served_count "$(served "$v")") + keys )) "$OUT/$name.primed" &
    local waiting=$!
    http_load "$name" "${PORT[$v]}" --mode replay --keys "$keys" --threads "$threads" --accounts acc-1
    wait "$waiting"
    RESULT="$RESULT $(served_p99 "$(cat "$OUT/$name.primed")" "$(served "$v")")"
    printf '%s|%s|%s|%s|%s\n' "$v" "$threads" "$keys" "$round" "$RESULT" >>"$OUT/rows.txt"
}

: >"$OUT/rows.txt"
say "results in $OUT; $ROUNDS rounds of warmup $WARMUP + duration $DURATION; threads $THREADS; keys $KEYS;" \
    "$(machine)"
for t in $THREADS; do
    for k in $KEYS; do
        for r in $(seq 1 "$ROUNDS"); do
            if (( r % 2 == 1 )); then order=(pg ff); else order=(ff pg); fi
            for v in "${order[@]}"; do run "$v" "$t" "$k" "$r"; done
        done
    done
done
payments_pg=$(psql_db "$(db pg)" -c "SELECT count(*) FROM payment")
payments_ff=$(psql_db "$(db ff)" -c "SELECT count(*) FROM payment")

# --- the table ------------------------------------------------------------------------------------
{
    echo "| replays from | threads | keys | rounds | rps (median) | rps ff/pg | p50 ms | p50 ff/pg | p99 ms | p99 ff/pg | p99 ms served | served within 1 ms | statuses (all rounds) |"
    echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
    for t in $THREADS; do
        for k in $KEYS; do
            pg_rps=$(values "pg|$t|$k" rps | median %.1f)
            pg_p50=$(values "pg|$t|$k" p50 | median %.2f)
            pg_p99=$(values "pg|$t|$k" p99 | median %.2f)
            for v in pg ff; do
                rps=$(values "$v|$t|$k" rps | median %.1f)
                p50=$(values "$v|$t|$k" p50 | median %.2f)
                p99=$(values "$v|$t|$k" p99 | median %.2f)
                served=$(values "$v|$t|$k" p99_served | median %.3f)
                within=$(values "$v|$t|$k" within_1ms | median %.4f)
                label="PostgreSQL alone"
                [[ "$v" == ff ]] && label="Redis fast filter"
                st=$(statuses "$v|$t|$k")
                errs=$(errors "$v|$t|$k")
                [[ "$errs" != 0 ]] && st="$st, errors:$errs"
                printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$label" "$t" "$k" \
                    "$ROUNDS" "$rps" "$(ratio "$rps" "$pg_rps")" "$p50" "$(ratio "$p50" "$pg_p50")" \
                    "$p99" "$(ratio "$p99" "$pg_p99")" "$served" "$within" "$st"
            done
        done
    done
    echo
    echo "Closed loop over loopback HTTP/1.1, HttpLoad --mode replay; before the first round each service replayed under"
    echo "load until its JIT compilers settled (at least ${JVM_WARMUP:-20s}, at most ${SETTLE_MAX:-180s}); per round warmup"
    echo "$WARMUP, then $DURATION measured;"
    echo "both services ran throughout, rounds alternated between them (pg first in odd rounds); medians of the rounds."
    echo "Served: each service's own http.server.requests histogram of its replays, from the moment the round's keys"
    echo "were stored to its end (the warm-up included): the p99's bucket bound, and the share within 1 ms."
    echo "Payments made (one per stored key): pg $payments_pg, ff $payments_ff. Redis: $REDIS_URI."
    echo "Source: $SOURCE. Service arguments: ${SERVICE_ARGS:-none}."
    echo "Machine: $(machine) at the end; $(java -version 2>&1 | head -n 1)."
} | tee "$OUT/table.md"
say "table: $OUT/table.md"
