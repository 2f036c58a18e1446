#!/usr/bin/env bash
# Heap bytes allocated per request by the payments service, RetrySafe off and on, side by side:
#   off  RetrySafe switched off (--retrysafe.enabled=false), no key: the bare service
#   tx   transactional mode (the default), a new key per request
#   to   transactional mode without RetrySafe's observation (--management.observations.enable.retrysafe.request=false)
#   sa   standalone mode (--retrysafe.mode=standalone)
#   ff   transactional mode with the Redis fast filter in front
# Each round loads each service in turn (the order rotates): a full GC (jcmd GC.run), the service's
# jvm_gc_memory_allocated_bytes counter read from /actuator/prometheus, DURATION of closed-loop POST
# /payments with no warmup, another full GC and read. The counter grows by the young generation's
# usage at each collection, so between two full GCs it is every byte the service allocated, the two
# scrapes included (a few kB against thousands of requests). Allocation does not depend on the
# machine's load, unlike time: this can run beside other work. It builds nothing; see payments.sh.
#
#   ROUNDS=3 DURATION=20s retrysafe-benchmarks/load/allocation.sh
#
# Settings (environment):
#   WARMUP              a first unmeasured load per service, for the JIT (default 20s)
#   DURATION            per measured run (default 10s)
#   ROUNDS              measured runs per variant (default 3)
#   THREADS             HttpLoad threads (default 4)
#   VARIANTS            default "off tx sa"; off is always run, as the baseline
#   POOL, REDIS_URI, PG_HOST, PG_PORT, PG_USER, PGPASSWORD, SERVICE_JAVA_OPTS, LOAD_JAVA_OPTS,
#   SERVICE_ARGS, OUT, READY_TIMEOUT   as in payments.sh
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh"

WARMUP_LOAD=${WARMUP:-20s}
DURATION=${DURATION:-10s}
ROUNDS=${ROUNDS:-3}
THREADS=${THREADS:-4}
POOL=${POOL:-10}
REDIS_URI=${REDIS_URI:-redis://127.0.0.1:6379}
OUT=${OUT:-$(mktemp -d -t retrysafe-allocation.XXXXXX)}
KEY_PREFIX="rs-load-$$:ff:"
read -ra VARIANTS <<<"${VARIANTS:-off tx sa}"
[[ " ${VARIANTS[*]} " == *" off "* ]] || VARIANTS=(off "${VARIANTS[@]}")
mkdir -p "$OUT"
command -v jcmd >/dev/null || die "jcmd (from the JDK) is needed to collect before and after each run"

check_prerequisites HttpLoad
if [[ " ${VARIANTS[*]} " == *" ff "* ]]; then require_local_redis; fi
derive_classpath
take_snapshot
cleanup_on_exit
start_variants "${VARIANTS[@]}"

# allocated VARIANT: a full collection, then the service's allocation counter, in bytes
allocated() {
    jcmd "${PID[$1]}" GC.run >/dev/null
    curl -s --max-time 10 "http://127.0.0.1:${PORT[$1]}/actuator/prometheus" \
        | awk '$1 ~ /^jvm_gc_memory_allocated_bytes_total/ { printf "%.0f\n", $2 }'
}

say "results in $OUT; warmup $WARMUP_LOAD per service, then $ROUNDS rounds of $DURATION; $THREADS threads; $(machine)"
for v in "${VARIANTS[@]}"; do
    WARMUP=0s DURATION=$WARMUP_LOAD http_load "$v-warmup" "${PORT[$v]}" --mode "$(variant_mode "$v")" \
        --threads "$THREADS" --accounts acc-1,acc-2
done
: >"$OUT/rows.txt"
for r in $(seq 1 "$ROUNDS"); do
    order=()
    n=${#VARIANTS[@]}
    for ((i = 0; i < n; i++)); do order+=("${VARIANTS[$(( (i + r - 1) % n ))]}"); done
    for v in "${order[@]}"; do
        before=$(allocated "$v")
        WARMUP=0s http_load "$v-r$r" "${PORT[$v]}" --mode "$(variant_mode "$v")" --threads "$THREADS" \
            --accounts acc-1,acc-2
        after=$(allocated "$v")
        requests=$(field requests "$RESULT")
        [[ -n "$before" && -n "$after" && "$requests" -gt 0 ]] || die "no allocation counter or no requests ($v)"
        perRequest=$(awk -v a="$before" -v b="$after" -v n="$requests" 'BEGIN { printf "%.0f", (b - a) / n }')
        say "$v round $r: $requests requests, $perRequest bytes each"
        printf '%s|%s|%s bytes=%s\n' "$v" "$r" "$RESULT" "$perRequest" >>"$OUT/rows.txt"
    done
done

{
    echo "| variant | rounds | bytes per request (median, min–max) | added over bare |"
    echo "| --- | ---: | ---: | ---: |"
    off=$(values off bytes | median %.0f)
    for v in "${VARIANTS[@]}"; do
        bytes=$(values "$v" bytes | median %.0f)
        printf '| %s | %s | %s | %s |\n' "${VARIANT_LABEL[$v]}" "$ROUNDS" "$(values "$v" bytes | range %.0f)" \
            "$(awk -v a="$bytes" -v b="$off" 'BEGIN { printf "%+.0f", a - b }')"
    done
    echo
    echo "Heap bytes allocated by the service per POST /payments (HttpLoad --mode new-key, bare: no-key), $THREADS"
    echo "closed-loop threads, $DURATION per round after a $WARMUP_LOAD warmup; between two full GCs, from"
    echo "jvm_gc_memory_allocated_bytes_total. Source: $SOURCE. Machine: $(machine); $(java -version 2>&1 | head -n 1)."
} | tee "$OUT/table.md"
say "table: $OUT/table.md"
