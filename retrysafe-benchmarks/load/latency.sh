#!/usr/bin/env bash
# Latency as users see it: POST /payments at a fixed arrival rate (HttpLoad --rate, open loop, latency
# from each request's due time, so a stall is not hidden by a slower client), at 50 % and 80 % of each
# variant's own maximum throughput, RetrySafe off and on, side by side:
#   off  RetrySafe switched off (--retrysafe.enabled=false), no key: the bare service
#   tx   transactional mode (the default)
#   tl   transactional mode, the key written last (--retrysafe.store.key-order=last)
#   sa   standalone mode (--retrysafe.mode=standalone)
#   ff   transactional mode with the Redis fast filter in front
# First, per variant, a closed-loop run with MAX_THREADS threads measures its maximum (rps); then, for
# each of ROUNDS rounds and each load share, an open-loop run at that share of the variant's maximum
# with LOAD_THREADS threads (the order of the variants rotates per round). The table gives per variant
# and share the median and the range over the rounds of the answers per second achieved, p50, p99 and
# p99.9, and the requests sent late or never sent (a service that did not keep up says so there, and
# HttpLoad's log line says so in $OUT/<run>.load.log). It builds nothing; build and install first, as
# for payments.sh:
#
#   ./mvnw -q install -DskipTests -DskipITs -pl examples/payments-service,retrysafe-benchmarks -am
#   retrysafe-benchmarks/load/latency.sh                          # 3 rounds of 3s + 10s
#   ROUNDS=5 WARMUP=10s DURATION=30s retrysafe-benchmarks/load/latency.sh
#
# Settings (environment):
#   WARMUP, DURATION    per run (default 3s, 10s)
#   ROUNDS              open-loop runs per variant and share (default 3)
#   SHARES              shares of the maximum, in percent (default "50 80")
#   MAX_THREADS         closed-loop threads of the maximum's run (default 8)
#   LOAD_THREADS        open-loop threads, each with one connection; enough that the rate fits (default 32)
#   VARIANTS            which of them (default "off tx"; off is always run, as the baseline)
#   POOL, REDIS_URI, PG_HOST, PG_PORT, PG_USER, PGPASSWORD, SERVICE_JAVA_OPTS, LOAD_JAVA_OPTS,
#   SERVICE_ARGS, OUT, READY_TIMEOUT, JVM_WARMUP, SETTLE_ROUND, SETTLE_SHARE, SETTLE_MAX   as in payments.sh
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh"

WARMUP=${WARMUP:-3s}
DURATION=${DURATION:-10s}
ROUNDS=${ROUNDS:-3}
SHARES=${SHARES:-"50 80"}
MAX_THREADS=${MAX_THREADS:-8}
LOAD_THREADS=${LOAD_THREADS:-32}
POOL=${POOL:-10}
REDIS_URI=${REDIS_URI:-redis://127.0.0.1:6379}
OUT=${OUT:-$(mktemp -d -t retrysafe-latency.XXXXXX)}
KEY_PREFIX="rs-load-$$:ff:"
read -ra VARIANTS <<<"${VARIANTS:-off tx}"
[[ " ${VARIANTS[*]} " == *" off "* ]] || VARIANTS=(off "${VARIANTS[@]}")
mkdir -p "$OUT"

check_prerequisites HttpLoad
require_local_redis
derive_classpath
take_snapshot
cleanup_on_exit

start_variants "${VARIANTS[@]}"
settle_variants "${VARIANTS[@]}"

: >"$OUT/rows.txt"
say "results in $OUT; warmup $WARMUP + duration $DURATION; shares $SHARES; $(machine)"
declare -A MAX
for v in "${VARIANTS[@]}"; do
    psql_db "$(variant_db "$v")" -c "ANALYZE" >/dev/null
    http_load "$v-max" "${PORT[$v]}" --mode "$(variant_mode "$v")" --threads "$MAX_THREADS" --accounts acc-1,acc-2
    MAX[$v]=$(field rps "$RESULT")
done
for r in $(seq 1 "$ROUNDS"); do
    order=()
    n=${#VARIANTS[@]}
    for ((i = 0; i < n; i++)); do order+=("${VARIANTS[$(( (i + r - 1) % n ))]}"); done
    for share in $SHARES; do
        for v in "${order[@]}"; do
            rate=$(awk -v m="${MAX[$v]}" -v s="$share" 'BEGIN { printf "%.1f", m * s / 100 }')
            psql_db "$(variant_db "$v")" -c "ANALYZE" >/dev/null
            http_load "$v-s$share-r$r" "${PORT[$v]}" --mode "$(variant_mode "$v")" --threads "$LOAD_THREADS" \
                --rate "$rate" --accounts acc-1,acc-2
            printf '%s|%s|%s|%s\n' "$v" "$share" "$r" "$RESULT" >>"$OUT/rows.txt"
        done
    done
done

{
    echo "| variant | max rps (closed loop) | load | rate | achieved rps | p50 ms | p99 ms | p99.9 ms | late | unsent | statuses (all rounds) |"
    echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
    for share in $SHARES; do
        for v in "${VARIANTS[@]}"; do
            late=0 unsent=0
            for l in $(values "$v|$share" late); do late=$((late + l)); done
            for u in $(values "$v|$share" unsent); do unsent=$((unsent + u)); done
            st=$(statuses "$v|$share")
            errs=$(errors "$v|$share")
            [[ "$errs" != 0 ]] && st="$st, errors:$errs"
            printf '| %s | %s | %s %% | %s | %s | %s | %s | %s | %s | %s | %s |\n' "${VARIANT_LABEL[$v]}" "${MAX[$v]}" \
                "$share" "$(values "$v|$share" rate | head -n 1)" "$(spread "$v|$share" achieved)" \
                "$(spread "$v|$share" p50)" "$(spread "$v|$share" p99)" "$(spread "$v|$share" p99.9)" "$late" "$unsent" "$st"
        done
    done
    echo
    echo "Open loop over loopback HTTP/1.1 (HttpLoad --rate, $LOAD_THREADS threads), latency from each request's due"
    echo "time; the rate is the share of the variant's own closed-loop maximum ($MAX_THREADS threads); achieved: answers"
    echo "per second during the measured window; late: sent over one interval after due; unsent: not sent in the drain."
    echo "Per run warmup $WARMUP, then $DURATION measured; $ROUNDS rounds, the order rotated per round; median (min–max)."
    echo "Pool: $POOL per service. Source: $SOURCE. Service arguments: ${SERVICE_ARGS:-none}."
    echo "Machine: $(machine) at the end; $(java -version 2>&1 | head -n 1)."
} | tee "$OUT/table.md"
say "table: $OUT/table.md"
