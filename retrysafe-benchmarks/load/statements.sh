#!/usr/bin/env bash
# Statements the payments service sends to PostgreSQL per POST /payments, by variant (see lib.sh):
# the service's database logs every statement (ALTER DATABASE ... SET log_statement = 'all'), N
# payments are sent one after another after 5 unmeasured ones, and the lines the server logged for
# that database in between are counted, by statement. It needs the server's log file (PG_LOG; the
# server must log to a file this user can read). It builds nothing; see payments.sh.
#
#   PG_LOG=<the server's log file> VARIANTS="tx sa" N=200 retrysafe-benchmarks/load/statements.sh
#
# Settings (environment): PG_LOG (required), N (default 200), VARIANTS (default "off tx sa"), and
# PG_HOST, PG_PORT, PG_USER, PGPASSWORD, SERVICE_JAVA_OPTS, SERVICE_ARGS, OUT, READY_TIMEOUT as in payments.sh
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh"

N=${N:-200}
POOL=${POOL:-2}
OUT=${OUT:-$(mktemp -d -t retrysafe-statements.XXXXXX)}
KEY_PREFIX=""
read -ra VARIANTS <<<"${VARIANTS:-off tx sa}"
[[ -r "${PG_LOG:-}" ]] || die "PG_LOG must name the PostgreSQL server's log file, readable here"
mkdir -p "$OUT"

check_prerequisites HttpLoad
derive_classpath
take_snapshot
cleanup_on_exit

# pay VARIANT: one payment, a new key (none for off); prints the status
pay() {
    local key=()
    [[ "$1" == off ]] || key=(-H "Idempotency-Key: $(cat /proc/sys/kernel/random/uuid)")
    curl -s -o /dev/null -w '%{http_code}\n' -u "$USER_NAME:$USER_PASSWORD" "${key[@]}" \
        -H 'Content-Type: application/json' -d '{"account":"acc-1","amount":7,"currency":"EUR"}' \
        "http://127.0.0.1:${PORT[$1]}/payments"
}

{
    echo "| variant | payments | statements per payment | by statement (count over all payments) |"
    echo "| --- | ---: | ---: | --- |"
} >"$OUT/table.md"
for v in "${VARIANTS[@]}"; do
    db=$(variant_db "$v")
    start_variants "$v"
    psql_admin -c "ALTER DATABASE \"$db\" SET log_statement = 'all'" >/dev/null
    # A connection reads the setting when it connects: the pool's are ended, and it opens new ones.
    psql_admin -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '$db'" >/dev/null
    for _ in 1 2 3 4 5; do pay "$v" >/dev/null; done
    from=$(wc -l <"$PG_LOG")
    statuses=$(for _ in $(seq 1 "$N"); do pay "$v"; done | sort | uniq -c | awk '{ printf "%s%s:%s", (n++ ? " " : ""), $2, $1 }')
    sleep 1
    tail -n +"$((from + 1))" "$PG_LOG" | grep "@$db " | grep -E "LOG:  (statement|execute)" \
        | sed 's/.*LOG:  //; s/JDBC_SAVEPOINT_[0-9]*/JDBC_SAVEPOINT_n/; s/^execute [^:]*: //; s/^statement: //' \
        | cut -c1-48 >"$OUT/$v.statements"
    total=$(wc -l <"$OUT/$v.statements")
    by=$(sort "$OUT/$v.statements" | uniq -c | sort -rn | awk '{ c = $1; $1 = ""; printf "%s`%s` %d", (n++ ? ", " : ""), substr($0, 2), c }')
    printf '| %s | %s (%s) | %s | %s |\n' "${VARIANT_LABEL[$v]}" "$N" "$statuses" \
        "$(awk -v t="$total" -v n="$N" 'BEGIN { printf "%.2f", t / n }')" "$by" >>"$OUT/table.md"
    stop_service "$v"
done
echo "Source: $SOURCE. $N payments one after another, after 5 unmeasured." >>"$OUT/table.md"
cat "$OUT/table.md"
