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

# derive_classpath [MODULE FILE GIVEN]: MODULE's runtime classpath (default examples/payments-service) into
# $OUT/FILE (default service.classpath): a copy of the file GIVEN names (default $SERVICE_CLASSPATH) when it
# is set, else derived from ~/.m2. Without installing into ~/.m2, write the file from the reactor:
#   ./mvnw -q -pl MODULE -am package dependency:build-classpath -DskipTests -DskipITs \
#       -Dmdep.includeScope=runtime -Dmdep.outputFile="$PWD/service.classpath"
derive_classpath() {
    local module=${1:-examples/payments-service} file=${2:-service.classpath} given=${3-${SERVICE_CLASSPATH:-}}
    if [[ -n "$given" ]]; then
        [[ -s "$given" ]] || die "the classpath file $given (for $module) is not a non-empty file"
        cp "$given" "$OUT/$file"
        return 0
    fi
    say "deriving the classpath of $module"
    ./mvnw -q -o -pl "$module" dependency:build-classpath -Dmdep.includeScope=runtime \
        -Dmdep.outputFile="$OUT/$file" >"$OUT/$file.log" 2>&1 \
        || die "dependency:build-classpath failed (see $OUT/$file.log); is the reactor installed in ~/.m2?"
}

# take_snapshot: a snapshot of what is measured, taken once: the service's classes, RetrySafe's own jars
# (from ~/.m2, or from the reactor's target/ when a classpath file names them) and the load generator, so
# that a rebuild in the working tree during the run cannot change (or break) later rows. Reads
# $OUT/service.classpath; sets SERVICE_CP, LOAD_CP and SOURCE (the commit measured).
take_snapshot() {
    rm -rf "$OUT/snapshot"
    mkdir -p "$OUT/snapshot/load/io/retrysafe/benchmarks"
    cp -r "$LOAD_CLASSES/io/retrysafe/benchmarks/load" "$OUT/snapshot/load/io/retrysafe/benchmarks/"
    snapshot_service service "$SERVICE_CLASSES" "$OUT/service.classpath"
    SERVICE_CP=$SNAPSHOT_CP
    [[ -n "$HDR_JAR" ]] || die "HdrHistogram (HttpLoad's histograms) is not on the service's classpath ($OUT/service.classpath)"
    LOAD_CP="$OUT/snapshot/load:$CORE_JAR:$HDR_JAR"
    SOURCE="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
    if [[ -n "$(git status --porcelain 2>/dev/null | head -n 1)" ]]; then SOURCE="$SOURCE + uncommitted changes"; fi
}

# snapshot_service NAME CLASSES CLASSPATH_FILE: copies a service's CLASSES and the RetrySafe jars its
# classpath file names under $OUT/snapshot/NAME; sets SNAPSHOT_CP (the service's classpath, those copies in
# it), CORE_JAR (retrysafe-core's copy) and HDR_JAR (HdrHistogram, if the classpath has it)
snapshot_service() {
    local snap="$OUT/snapshot/$1" entries entry
    mkdir -p "$snap/lib"
    cp -r "$2" "$snap/classes"
    IFS=: read -ra entries <"$3" || true  # the file has no final newline
    SNAPSHOT_CP="$snap/classes" CORE_JAR="" HDR_JAR=""
    for entry in "${entries[@]}"; do
        case $entry in
            */io/retrysafe/*|*/target/retrysafe-*.jar)
                cp "$entry" "$snap/lib/"
                entry="$snap/lib/$(basename "$entry")"
                case $entry in */retrysafe-core-*.jar) CORE_JAR=$entry ;; esac
                ;;
        esac
        case $entry in */HdrHistogram-*.jar) HDR_JAR=$entry ;; esac
        SNAPSHOT_CP="$SNAPSHOT_CP:$entry"
    done
    [[ -n "$CORE_JAR" ]] || die "retrysafe-core is not on the classpath of $1 ($3)"
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
    local db=$2
    DATABASES[$db]=1
    drop_db "$db"
    psql_admin -c "CREATE DATABASE \"$db\"" >/dev/null
    launch_service "$@"
}

# launch_service NAME DB [service args...]: the service NAME on the existing database DB, as start_service
launch_service() {
    local name=$1 db=$2; shift 2
    DB_OF[$name]=$db
    unset "PORT[$name]"
    rm -f "$OUT/$name.ready"
    # shellcheck disable=SC2086 # SERVICE_JAVA_OPTS and SERVICE_ARGS are lists
    RETRYSAFE_JDBC_URL="jdbc:postgresql://$PG_HOST:$PG_PORT/$db" RETRYSAFE_JDBC_USER="$PG_USER" \
        RETRYSAFE_JDBC_PASSWORD="${PGPASSWORD:-}" \
        java $SERVICE_JAVA_OPTS -cp "$SERVICE_CP" "$SERVICE_MAIN" \
        --server.port=0 --payments.ready-file="$OUT/$name.ready" $SERVICE_ARGS "$@" >"$OUT/$name.service.log" 2>&1 &
    PID[$name]=$!
}

# is_ready NAME: the service wrote its port to its ready-file, or, started on a port set beforehand in
# PORT[NAME] (a service with no ready-file), it answers HTTP there
is_ready() {
    if [[ -n "${PORT[$1]:-}" ]]; then
        [[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:${PORT[$1]}/payments" || true)" != 000 ]]
    else
        [[ -s "$OUT/$1.ready" ]]
    fi
}

# free_port: a TCP port on 127.0.0.1 that is free now, for a service that cannot take port 0
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# await_ready NAME ACCOUNT...: waits until the service NAME is ready (is_ready), sets PORT[NAME], and gives
# each ACCOUNT a balance of BALANCE
await_ready() {
    local name=$1 waited=0 ids; shift
    while ! is_ready "$name"; do
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
    PORT[$name]=${PORT[$name]:-$(cat "$OUT/$name.ready")}
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
#   tn   transactional mode, the key written last without a look-up (--retrysafe.store.key-order=last-no-lookup)
#   to   transactional mode without RetrySafe's observation (--management.observations.enable.retrysafe.request=false)
#   sa   standalone mode (--retrysafe.mode=standalone)
#   ff   transactional mode with the Redis fast filter in front (REDIS_URI, under KEY_PREFIX)
declare -A VARIANT_LABEL=([off]="bare (RetrySafe off)" [tx]="transactional" [tl]="transactional, key last"
    [tn]="key last, no look-up" [to]="transactional, no observation" [sa]="standalone"
    [ff]="transactional + fast filter")
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
            # Key last is refused beside @Idempotent methods: the service's order payments are switched off.
            tl) args=(--retrysafe.store.key-order=last --payments.orders.enabled=false) ;;
            tn) args=(--retrysafe.store.key-order=last-no-lookup --payments.orders.enabled=false) ;;
            # The retrysafe.request observation switched off by Spring Boot's predicate: no timer, no span.
            to) args=(--management.observations.enable.retrysafe.request=false) ;;
            sa) args=(--retrysafe.mode=standalone) ;;
            ff) args=(--retrysafe.fast-filter.enabled=true --retrysafe.fast-filter.redis-uri="$REDIS_URI"
                --retrysafe.fast-filter.key-prefix="$KEY_PREFIX") ;;
            *) die "unknown variant $v (VARIANTS: off tx tl tn to sa ff)" ;;
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

# seconds TIME: 3s, 500ms or 2m in seconds
seconds() { awk -v t="$1" 'BEGIN { n = t + 0; if (t ~ /ms$/) n /= 1000; else if (t ~ /m$/) n *= 60; print n }'; }

# --- CPU time per request -------------------------------------------------------------------------
HZ=$(getconf CLK_TCK)
# cpu_ticks PID...: user + system CPU time, in clock ticks, of the processes and their children; a process
# that has gone counts nothing
cpu_ticks() {
    local pid stat total=0 fields all=()
    for pid in "$@"; do all+=("$pid" $(cat /proc/"$pid"/task/*/children 2>/dev/null)); done
    for pid in "${all[@]}"; do
        stat=$(cat "/proc/$pid/stat" 2>/dev/null) || continue
        read -ra fields <<<"${stat##*) }" # after the command's name, which may hold spaces
        total=$((total + fields[11] + fields[12]))
    done
    echo "$total"
}

# cpu_us_per_request TICKS RPS: TICKS of CPU spent over one http_load run (its warmup and its measurement,
# both at the measured rate RPS) in microseconds per request
cpu_us_per_request() {
    awk -v t="$1" -v hz="$HZ" -v rps="$2" -v s="$(seconds "$WARMUP")" -v d="$(seconds "$DURATION")" \
        'BEGIN { if (rps > 0) printf "%.0f", t / hz * 1e6 / (rps * (s + d)); else print "nan" }'
}

# process_backends PID: the pids of the server processes serving the connections process PID holds to the
# server (a pool keeps them for the run), when the server runs on this machine (matched by the connections'
# ports); none otherwise
process_backends() {
    case $PG_HOST in 127.0.0.1 | localhost | ::1) ;; *) return 0 ;; esac
    local ports
    ports=$(ss -Htnp state established "( dport = :$PG_PORT )" 2>/dev/null | grep "pid=$1," \
        | awk '{ n = split($3, a, ":"); print a[n] }' | paste -sd, -)
    [[ -n "$ports" ]] || return 0
    psql_admin -c "SELECT pid FROM pg_stat_activity WHERE client_port IN ($ports)" | tr '\n' ' '
}

# --- warming a JVM up until its compilers settle ---------------------------------------------------
# A fresh JVM under load compiles its hot code for a minute or more; on a machine with two CPUs the compiler
# threads then take a third of the process's CPU from the requests. A run measured before they settle
# measures the compiler, not the steady state.
# compile_seconds PID: the seconds the JVM's JIT compilers have spent so far (jstat), or nothing
compile_seconds() { jstat -compiler "$1" 2>/dev/null | awk 'NR == 2 { print $4 }'; }
# warm_until_settled NAME PID PORT [HttpLoad options...]: closed-loop load, not measured, for at least
# JVM_WARMUP (default 20s), then in rounds of SETTLE_ROUND (default 10s) until a round in which the JVM's
# compilers ran less than SETTLE_SHARE (default 0.05) of it, or SETTLE_MAX (default 180s) in all; says how
# long it took and what the last round compiled. Without jstat, JVM_WARMUP alone.
warm_until_settled() {
    local name=$1 pid=$2 port=$3; shift 3
    local round=${SETTLE_ROUND:-10s} share=${SETTLE_SHARE:-0.05} max before after spent=none elapsed settled=no
    max=$(seconds "${SETTLE_MAX:-180s}")
    WARMUP=0s DURATION=${JVM_WARMUP:-20s} http_load "$name-jvm-warmup" "$port" "$@"
    elapsed=$(seconds "${JVM_WARMUP:-20s}")
    if [[ -z "$(compile_seconds "$pid")" ]]; then
        say "$name: jstat does not answer; warmed up for ${JVM_WARMUP:-20s} only"
        return 0
    fi
    while awk -v e="$elapsed" -v m="$max" 'BEGIN { exit !(e < m) }'; do
        before=$(compile_seconds "$pid")
        WARMUP=0s DURATION=$round http_load "$name-jvm-settle" "$port" "$@"
        after=$(compile_seconds "$pid")
        elapsed=$(awk -v e="$elapsed" -v r="$(seconds "$round")" 'BEGIN { print e + r }')
        spent=$(awk -v a="$after" -v b="$before" 'BEGIN { printf "%.2fs", a - b }')
        if awk -v s="${spent%s}" -v r="$(seconds "$round")" -v f="$share" 'BEGIN { exit !(s < r * f) }'; then
            settled=yes
            break
        fi
    done
    say "$name: warmed up for ${elapsed}s; its compilers' time in the last $round: $spent (settled: $settled)"
}

# settle_variants VARIANT...: warm_until_settled each payments service started by start_variants, at 8 clients
settle_variants() {
    local v
    for v in "$@"; do
        warm_until_settled "$v" "${PID[$v]}" "${PORT[$v]}" --mode "$(variant_mode "$v")" --threads 8 \
            --accounts acc-1,acc-2
    done
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
# spread KEY FIELD: "median (min–max)" of that field over the rounds of KEY
spread() { values "$1" "$2" | range %.2f; }
# range FORMAT: "median (min–max)" of the numbers on stdin (a NaN, a run with no answer, left out)
range() {
    local sorted
    sorted=$({ grep -vix 'nan' || true; } | sort -g)
    [[ -n "$sorted" ]] || { echo n/a; return 0; }
    # shellcheck disable=SC2059 # FORMAT is the caller's
    printf "%s ($1–$1)" "$(median "$1" <<<"$sorted")" "$(head -n 1 <<<"$sorted")" "$(tail -n 1 <<<"$sorted")"
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
