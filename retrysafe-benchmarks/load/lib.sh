# shellcheck shell=bash
# What the load scripts beside it share. Each sources it first, under set -euo pipefail, sets its own
# settings and OUT (and creates it), then calls check_prerequisites, derive_classpath (or writes
# $OUT/service.classpath itself), take_snapshot and cleanup_on_exit before it starts a service.
# Sourcing moves to the repository root and reads the settings every script takes (see compare.sh):
# PG_HOST, PG_PORT, PG_USER, PGPASSWORD, SERVICE_JAVA_OPTS, LOAD_JAVA_OPTS, SERVICE_ARGS, READY_TIMEOUT.
# Services go by name, each on the database start_service is given: one at a time on one database
# (compare.sh, storm.sh) or several side by side, each on its own (payments.sh, replay-fast-filter.sh).

cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
ROOT=$(pwd)

PG_HOST=${PG_HOST:-127.0.0.1}
PG_PORT=${PG_PORT:-5432}
PG_USER=${PG_USER:-postgres}
READY_TIMEOUT=${READY_TIMEOUT:-180}
SERVICE_JAVA_OPTS=${SERVICE_JAVA_OPTS:-}
SERVICE_ARGS=${SERVICE_ARGS:-}
LOAD_JAVA_OPTS=${LOAD_JAVA_OPTS:-}
USER_NAME=alice
USER_PASSWORD=alice-secret
BALANCE=1000000000000
# Set by a script whose fast filter writes under a prefix of this run: cleanup then deletes those keys.
KEY_PREFIX=""

LOAD_CLASSES="$ROOT/retrysafe-benchmarks/target/classes"
SERVICE_CLASSES="$ROOT/examples/payments-service/target/classes"
SERVICE_MAIN=io.retrysafe.examples.paymentsservice.PaymentsServiceApplication

say() { printf '%s\n' "${0##*/}: $*" >&2; }
die() { say "$*"; exit 1; }

psql_admin() { psql -h "$PG_HOST" -p "$PG_PORT" -U "$PG_USER" -d postgres -v ON_ERROR_STOP=1 -qAtX "$@"; }
# psql_db DB [psql args...]
psql_db() { local d=$1; shift; psql -h "$PG_HOST" -p "$PG_PORT" -U "$PG_USER" -d "$d" -v ON_ERROR_STOP=1 -qAtX "$@"; }

# --- prerequisites --------------------------------------------------------------------------------
# check_prerequisites CLASS: psql, a reachable PostgreSQL, the service and the load generator CLASS built
check_prerequisites() {
    command -v psql >/dev/null || die "psql is needed (to create and drop the run's databases)"
    [[ -f "$LOAD_CLASSES/io/retrysafe/benchmarks/load/$1.class" ]] \
        || die "$1 is not built: ./mvnw -q -pl retrysafe-benchmarks -am install -DskipTests -DskipITs"
    [[ -f "$SERVICE_CLASSES/${SERVICE_MAIN//.//}.class" ]] \
        || die "the payments service is not built: ./mvnw -q -pl examples/payments-service -am install -DskipTests -DskipITs"
    psql_admin -c "SELECT 1" >/dev/null || die "cannot reach PostgreSQL as $PG_USER at $PG_HOST:$PG_PORT"
}

# The run writes to REDIS_URI and deletes its keys there: only ever a Redis on this machine.
require_local_redis() {
    case $REDIS_URI in
        redis://127.0.0.1[:/]* | redis://localhost[:/]* | redis://127.0.0.1 | redis://localhost) ;;
        *) die "REDIS_URI must be a Redis on this machine (redis://127.0.0.1:PORT), but was $REDIS_URI" ;;
    esac
}

# derive_classpath: the service's runtime classpath, from ~/.m2, into $OUT/service.classpath
derive_classpath() {
    say "deriving the payments service's classpath"
    ./mvnw -q -o -pl examples/payments-service dependency:build-classpath -Dmdep.includeScope=runtime \
        -Dmdep.outputFile="$OUT/service.classpath" >"$OUT/classpath.log" 2>&1 \
        || die "dependency:build-classpath failed (see $OUT/classpath.log); is the reactor installed in ~/.m2?"
}

# take_snapshot: a snapshot of what is measured, taken once: the service's classes, RetrySafe's own jars
# (from ~/.m2, or from the reactor's target/ when a classpath file names them) and the load generator, so
# that a rebuild in the working tree during the run cannot change (or break) later rows. Reads
# $OUT/service.classpath; sets SERVICE_CP, LOAD_CP and SOURCE (the commit measured).
take_snapshot() {
    local snap="$OUT/snapshot" entries entry core_jar="" hdr_jar=""
    rm -rf "$snap"
    mkdir -p "$snap/lib" "$snap/load/io/retrysafe/benchmarks"
    cp -r "$SERVICE_CLASSES" "$snap/service-classes"
    cp -r "$LOAD_CLASSES/io/retrysafe/benchmarks/load" "$snap/load/io/retrysafe/benchmarks/"
    IFS=: read -ra entries <"$OUT/service.classpath" || true  # the file has no final newline
    SERVICE_CP="$snap/service-classes"
    for entry in "${entries[@]}"; do
        case $entry in
            */io/retrysafe/*|*/target/retrysafe-*.jar)
                cp "$entry" "$snap/lib/"
                entry="$snap/lib/$(basename "$entry")"
                case $entry in */retrysafe-core-*.jar) core_jar=$entry ;; esac
                ;;
        esac
        case $entry in */HdrHistogram-*.jar) hdr_jar=$entry ;; esac
        SERVICE_CP="$SERVICE_CP:$entry"
    done
    [[ -n "$core_jar" ]] || die "retrysafe-core is not on the service's classpath ($OUT/service.classpath)"
    [[ -n "$hdr_jar" ]] || die "HdrHistogram (HttpLoad's histograms) is not on the service's classpath ($OUT/service.classpath)"
    LOAD_CP="$snap/load:$core_jar:$hdr_jar"
    SOURCE="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
    if [[ -n "$(git status --porcelain 2>/dev/null | head -n 1)" ]]; then SOURCE="$SOURCE + uncommitted changes"; fi
}

# --- services, each by a name and on a database of its own ----------------------------------------
declare -A PID=() PORT=() DB_OF=() DATABASES=()

drop_db() { psql_admin -c "DROP DATABASE IF EXISTS \"$1\" WITH (FORCE)" >/dev/null 2>&1 || true; }

delete_redis_keys() {
    command -v redis-cli >/dev/null || { say "no redis-cli: the run's keys ($KEY_PREFIX*) expire within 1 h"; return 0; }
    redis-cli -u "$REDIS_URI" --scan --pattern "$KEY_PREFIX*" 2>/dev/null \
        | xargs -r -n 100 redis-cli -u "$REDIS_URI" DEL >/dev/null 2>&1 || true
}

# start_service NAME DB [service args...]: a fresh database DB, the service NAME on a free port, in the
# background; its log is $OUT/NAME.service.log
start_service() {
    local name=$1 db=$2; shift 2
    DATABASES[$db]=1
    DB_OF[$name]=$db
    drop_db "$db"
    psql_admin -c "CREATE DATABASE \"$db\"" >/dev/null
    rm -f "$OUT/$name.ready"
    # shellcheck disable=SC2086 # SERVICE_JAVA_OPTS and SERVICE_ARGS are lists
    RETRYSAFE_JDBC_URL="jdbc:postgresql://$PG_HOST:$PG_PORT/$db" RETRYSAFE_JDBC_USER="$PG_USER" \
        RETRYSAFE_JDBC_PASSWORD="${PGPASSWORD:-}" \
        java $SERVICE_JAVA_OPTS -cp "$SERVICE_CP" "$SERVICE_MAIN" \
        --server.port=0 --payments.ready-file="$OUT/$name.ready" $SERVICE_ARGS "$@" >"$OUT/$name.service.log" 2>&1 &
    PID[$name]=$!
}

# await_ready NAME ACCOUNT...: waits until the service NAME is ready, sets PORT[NAME], and gives each
# ACCOUNT a balance of BALANCE
await_ready() {
    local name=$1 waited=0 ids; shift
    while [[ ! -s "$OUT/$name.ready" ]]; do
        if ! kill -0 "${PID[$name]}" 2>/dev/null; then
            tail -n 30 "$OUT/$name.service.log" >&2
            die "the service ($name) exited before it was ready; log: $OUT/$name.service.log"
        fi
        if (( waited >= READY_TIMEOUT * 2 )); then
            tail -n 30 "$OUT/$name.service.log" >&2
            die "the service ($name) was not ready after ${READY_TIMEOUT}s; log: $OUT/$name.service.log"
        fi
        sleep 0.5
        waited=$((waited + 1))
    done
    # shellcheck disable=SC2034 # PORT is for the scripts
    PORT[$name]=$(cat "$OUT/$name.ready")
    ids=$(printf "'%s', " "$@")
    psql_db "${DB_OF[$name]}" -c "UPDATE account SET balance = $BALANCE WHERE id IN (${ids%, })" >/dev/null
}

stop_service() {
    local name=$1 pid=${PID[$1]:-}
    [[ -n "$pid" ]] || return 0
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 1 60); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.5
        done
        if kill -0 "$pid" 2>/dev/null; then
            say "service $name ($pid) did not stop within 30 s of SIGTERM: SIGKILL"
            kill -KILL "$pid" 2>/dev/null || true
        fi
    fi
    wait "$pid" 2>/dev/null || true
    unset "PID[$name]"
}

cleanup() {
    local name db
    for name in "${!PID[@]}"; do stop_service "$name"; done
    for db in "${!DATABASES[@]}"; do drop_db "$db"; done
    if [[ -n "$KEY_PREFIX" ]]; then delete_redis_keys; fi
}

# cleanup_on_exit: from here on, however the script ends, its services stop and its databases are dropped
cleanup_on_exit() {
    trap cleanup EXIT
    trap 'exit 130' INT TERM
}

# --- the payments variants, side by side ---------------------------------------------------------
# The variants payments.sh and latency.sh compare, each a service on a database of its own:
#   off  RetrySafe switched off (--retrysafe.enabled=false), no key: the bare service
#   tx   transactional mode (the default)
#   tl   transactional mode, the key written last (--retrysafe.store.key-order=last)
#   sa   standalone mode (--retrysafe.mode=standalone)
#   ff   transactional mode with the Redis fast filter in front (REDIS_URI, under KEY_PREFIX)
declare -A VARIANT_LABEL=([off]="bare (RetrySafe off)" [tx]="transactional" [tl]="transactional, key last"
    [sa]="standalone" [ff]="transactional + fast filter")
variant_db() { printf 'rs_load_%s_%s' "$$" "$1"; }
# variant_mode VARIANT: the HttpLoad --mode that variant is loaded with
variant_mode() { if [[ "$1" == off ]]; then echo no-key; else echo new-key; fi; }

# start_variants VARIANT...: starts each, all running at once, with
# a pool of POOL, and waits until every one is ready with balances on acc-1 and acc-2
start_variants() {
    local v args
    for v in "$@"; do
        case $v in
            off) args=(--retrysafe.enabled=false) ;;
            tx) args=() ;;
            tl) args=(--retrysafe.store.key-order=last) ;;
            sa) args=(--retrysafe.mode=standalone) ;;
            ff) args=(--retrysafe.fast-filter.enabled=true --retrysafe.fast-filter.redis-uri="$REDIS_URI"
                --retrysafe.fast-filter.key-prefix="$KEY_PREFIX") ;;
            *) die "unknown variant $v (VARIANTS: off tx tl sa ff)" ;;
        esac
        start_service "$v" "$(variant_db "$v")" "${args[@]}" --spring.datasource.hikari.maximum-pool-size="$POOL"
    done
    for v in "$@"; do
        await_ready "$v" acc-1 acc-2
        say "$v: pid ${PID[$v]} on port ${PORT[$v]}"
    done
}

# --- one HttpLoad run -----------------------------------------------------------------------------
# http_load NAME PORT [HttpLoad options...]: WARMUP, then DURATION measured, against the service on PORT;
# sets RESULT to HttpLoad's result line, keeps $OUT/NAME.json and $OUT/NAME.load.log
RESULT=""
http_load() {
    local name=$1 port=$2; shift 2
    # shellcheck disable=SC2086 # LOAD_JAVA_OPTS is a list of options
    RESULT=$(java $LOAD_JAVA_OPTS -cp "$LOAD_CP" io.retrysafe.benchmarks.load.HttpLoad \
        --url "http://127.0.0.1:$port/payments" --user "$USER_NAME" --password "$USER_PASSWORD" \
        "$@" --warmup "$WARMUP" --duration "$DURATION" --json "$OUT/$name.json" 2>"$OUT/$name.load.log") \
        || { cat "$OUT/$name.load.log" >&2; die "HttpLoad failed ($name)"; }
    if [[ -s "$OUT/$name.load.log" ]]; then sed "s/^/  /" "$OUT/$name.load.log" >&2; fi
    say "$name: $RESULT"
}

# --- the table ------------------------------------------------------------------------------------
# field NAME LINE: the value of NAME= in a result line
field() { sed -n "s/.*[[:space:]]$1=\([^[:space:]]*\).*/\1/p" <<<" $2"; }
# values KEY FIELD: that field of every round of KEY, one per line, from rows of KEY|ROUND|LINE in rows.txt
values() {
    local row
    while IFS= read -r row; do
        if [[ "$row" == "$1|"* ]]; then row=${row#"$1|"}; field "$2" "${row#*|}"; fi
    done <"$OUT/rows.txt"
}
# median FORMAT: the median of the numbers on stdin
median() { sort -g | awk -v f="$1\n" '{ a[NR] = $1 } END { if (NR == 0) print "n/a"; else if (NR % 2) printf f, a[(NR + 1) / 2]; else printf f, (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
statuses() { # every status of every round of KEY, summed
    values "$1" statuses | tr ',' '\n' | awk -F: 'NF == 2 { n[$1] += $2 } END { for (s in n) printf "%s%s:%d", (c++ ? ", " : ""), s, n[s] }'
}
errors() { values "$1" errors | awk '{ n += $1 } END { print n + 0 }'; }
# machine: its CPUs and load average now
machine() { printf '%s CPUs,%s' "$(nproc)" "$(uptime | sed 's/.*load average/ load average/')"; }
