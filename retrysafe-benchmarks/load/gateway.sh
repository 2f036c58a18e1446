#!/usr/bin/env bash
# What the gateway costs: POST /payments to the Python payments service of examples/gateway, five ways
# side by side in one run, under HttpLoad:
#   upstream  the Python service directly, no key (the baseline)
#   nginx     nginx as a plain reverse proxy in front of it (Debian's package, a private prefix and config
#             on a loopback port; never the system service), no key
#   gw-off    the RetrySafe gateway with idempotency off: a plain reverse proxy, no key
#   gw-pg     the gateway on PostgreSQL, a new Idempotency-Key per request
#   gw-redis  the gateway on Redis, a new Idempotency-Key per request
#   base-off, base-pg, base-redis
#             the same three from another build of the gateway (BASELINE_JAR), for a change measured
#             against the build before it in the same run
# All five run against one upstream (its database set up once; accounts acc-1 and acc-2 get a balance
# that no run drains). For each of ROUNDS rounds (the order rotates per round, so drift in the machine's
# load hits all alike): closed loop at THREADS clients (throughput), then open loop at RATE requests per
# second with LOAD_THREADS clients (latency from each request's due time). The table gives the median
# over the rounds, and each variant against the upstream alone and against nginx, and the CPU time each
# path's own process (and its children: nginx's workers) spends per request in the closed loop, a cost
# that the other processes on the machine do not change as much as they change throughput, and, on
# PostgreSQL, what the database server's processes serving the gateway's connections spend. It builds nothing:
#
#   ./mvnw -q -pl retrysafe-gateway,retrysafe-benchmarks -am package -DskipTests -DskipITs
#   retrysafe-benchmarks/load/gateway.sh                    # 3 rounds of 3s + 10s, 8 clients, 50 rps
#   ROUNDS=5 WARMUP=10s DURATION=30s RATE=300 retrysafe-benchmarks/load/gateway.sh
#
# Settings (environment):
#   WARMUP, DURATION    per run (default 3s, 10s)
#   JVM_WARMUP          before round 1, each gateway gets at least this much closed-loop load, not measured
#                       (default 20s): a fresh JVM runs its first requests interpreted, loading classes and opening
#                       its store connections, and without it the first round measured that (0 to 8 requests in a
#                       6 s run on a loaded machine) and pulled the median down
#   SETTLE_ROUND, SETTLE_SHARE, SETTLE_MAX
#                       then more of it, in rounds of SETTLE_ROUND (default 10s), until the gateway's JIT
#                       compilers ran less than SETTLE_SHARE (default 0.05) of a round (read with jstat), or
#                       SETTLE_MAX (default 180s) in all: on a gateway on Redis they took a third of its CPU for
#                       the first minute at 600 requests a second, and a run measured then measured them
#   ROUNDS              rounds (default 3)
#   THREADS             closed-loop clients (default 8)
#   RATE                open-loop requests per second, the same for every variant (default 50); keep it
#                       under every variant's closed-loop rps, or the open loop measures a queue
#   LOAD_THREADS        open-loop clients, each with one connection (default 32)
#   VARIANTS            which of them (default "upstream nginx gw-off gw-pg gw-redis"; upstream and nginx
#                       are the baselines, always needed)
#   BASELINE_JAR        the gateway jar the base-* variants run (for example one built from the commit before
#                       a change); needed only with them
#   REDIS_URI           gw-redis's Redis (default redis://127.0.0.1:6379); the run's keys are under
#                       rs-load-<pid>:gw: and deleted at the end (with redis-cli, if installed)
#   PG_HOST, PG_PORT, PG_USER, PGPASSWORD
#                       gw-pg's PostgreSQL (default 127.0.0.1, 5432, postgres); the database
#                       rs_load_<pid>_gw is created and dropped by the run
#   NGINX               the nginx binary (default nginx on the PATH, else /usr/sbin/nginx)
#   SERVICE_JAVA_OPTS   the gateway's JVM options (default none)
#   MAVEN_REPOSITORY    the local Maven repository, for HdrHistogram (default ~/.m2/repository)
#   LOAD_JAVA_OPTS, OUT, READY_TIMEOUT   as in compare.sh
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh"

WARMUP=${WARMUP:-3s}
DURATION=${DURATION:-10s}
ROUNDS=${ROUNDS:-3}
THREADS=${THREADS:-8}
RATE=${RATE:-50}
LOAD_THREADS=${LOAD_THREADS:-32}
REDIS_URI=${REDIS_URI:-redis://127.0.0.1:6379}
NGINX=${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}
OUT=${OUT:-$(mktemp -d -t retrysafe-gateway.XXXXXX)}
KEY_PREFIX="rs-load-$$:gw:"
GATEWAY_JAR="$ROOT/retrysafe-gateway/target/retrysafe-gateway.jar"
EXAMPLE="$ROOT/examples/gateway"
read -ra VARIANTS <<<"${VARIANTS:-upstream nginx gw-off gw-pg gw-redis}"
[[ " ${VARIANTS[*]} " == *" upstream "* && " ${VARIANTS[*]} " == *" nginx "* ]] \
    || die "VARIANTS must include upstream and nginx, the baselines, but was ${VARIANTS[*]}"
mkdir -p "$OUT"

[[ -x "$NGINX" ]] || die "nginx is needed (apt-get install -y nginx); or set NGINX"
command -v python3 >/dev/null || die "python3 is needed (the upstream)"
[[ -f "$GATEWAY_JAR" ]] || die "the gateway is not built: ./mvnw -q -pl retrysafe-gateway -am package -DskipTests -DskipITs"
[[ -f "$LOAD_CLASSES/io/retrysafe/benchmarks/load/HttpLoad.class" ]] \
    || die "HttpLoad is not built: ./mvnw -q -pl retrysafe-benchmarks -am package -DskipTests -DskipITs"
psql_admin -c "SELECT 1" >/dev/null || die "cannot reach PostgreSQL as $PG_USER at $PG_HOST:$PG_PORT"
require_local_redis

# The load generator's classpath (its classes, retrysafe-core's and HdrHistogram), snapshotted so that a
# rebuild during the run changes nothing; HdrHistogram from the local Maven repository.
hdr_version=$(sed -n '/<artifactId>HdrHistogram<\/artifactId>/{n;s/.*<version>\(.*\)<\/version>.*/\1/p}' \
    retrysafe-benchmarks/pom.xml)
hdr="${MAVEN_REPOSITORY:-$HOME/.m2/repository}/org/hdrhistogram/HdrHistogram/$hdr_version/HdrHistogram-$hdr_version.jar"
[[ -f "$hdr" ]] || die "HdrHistogram $hdr_version is not in the local Maven repository ($hdr): build retrysafe-benchmarks first"
mkdir -p "$OUT/snapshot/load/io/retrysafe/benchmarks"
cp -r "$LOAD_CLASSES/io/retrysafe/benchmarks/load" "$OUT/snapshot/load/io/retrysafe/benchmarks/"
cp -r "$ROOT/retrysafe-core/target/classes" "$OUT/snapshot/core"
cp "$GATEWAY_JAR" "$OUT/snapshot/retrysafe-gateway.jar"
if [[ " ${VARIANTS[*]} " == *" base-"* ]]; then
    [[ -f "${BASELINE_JAR:-}" ]] || die "the base-* variants run BASELINE_JAR, a gateway jar, but it is '${BASELINE_JAR:-}'"
    cp "$BASELINE_JAR" "$OUT/snapshot/retrysafe-gateway-baseline.jar"
fi
LOAD_CP="$OUT/snapshot/load:$OUT/snapshot/core:$hdr"
SOURCE="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
if [[ -n "$(git status --porcelain 2>/dev/null | head -n 1)" ]]; then SOURCE="$SOURCE + uncommitted changes"; fi

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# await_port NAME PID PORTFILE|PORT: until the port answers, or the process is gone
await_listening() {
    local name=$1 pid=$2 port=$3 waited=0
    until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
        kill -0 "$pid" 2>/dev/null || { tail -n 30 "$OUT/$name.service.log" >&2; die "$name exited before it listened"; }
        (( waited < READY_TIMEOUT * 10 )) || die "$name did not listen on $port within ${READY_TIMEOUT}s"
        sleep 0.1
        waited=$((waited + 1))
    done
}

GATEWAY_CLEANUP_DB="rs_load_$$_gw"
bench_cleanup() {
    local name
    if [[ -n "${PID[nginx]:-}" ]]; then "$NGINX" -p "$OUT/nginx" -c "$OUT/nginx/nginx.conf" -s quit 2>/dev/null || true; fi
    cleanup
    drop_db "$GATEWAY_CLEANUP_DB"
}
trap bench_cleanup EXIT
trap 'exit 130' INT TERM

# --- the upstream ---------------------------------------------------------------------------------
PORT[upstream]=$(free_port)
UPSTREAM_PORT=${PORT[upstream]} PAYMENTS_DB="$OUT/payments.db" \
    python3 "$EXAMPLE/upstream/payments.py" >"$OUT/upstream.service.log" 2>&1 &
PID[upstream]=$!
await_listening upstream "${PID[upstream]}" "${PORT[upstream]}"
python3 - "$OUT/payments.db" "$BALANCE" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("UPDATE account SET balance = ? WHERE id IN ('acc-1', 'acc-2')", (int(sys.argv[2]),))
c.commit()
PY
say "upstream: pid ${PID[upstream]} on port ${PORT[upstream]}"

# --- nginx, a plain reverse proxy -----------------------------------------------------------------
PORT[nginx]=$(free_port)
mkdir -p "$OUT/nginx/logs" "$OUT/nginx/tmp"
cat >"$OUT/nginx/nginx.conf" <<CONF
daemon off;
worker_processes auto;
pid $OUT/nginx/nginx.pid;
error_log $OUT/nginx/logs/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path $OUT/nginx/tmp/body;
    proxy_temp_path $OUT/nginx/tmp/proxy;
    fastcgi_temp_path $OUT/nginx/tmp/fastcgi;
    uwsgi_temp_path $OUT/nginx/tmp/uwsgi;
    scgi_temp_path $OUT/nginx/tmp/scgi;
    upstream payments { server 127.0.0.1:${PORT[upstream]}; keepalive 64; }
    server {
        listen 127.0.0.1:${PORT[nginx]};
        location / {
            proxy_pass http://payments;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host \$host;
        }
    }
}
CONF
"$NGINX" -p "$OUT/nginx" -c "$OUT/nginx/nginx.conf" >"$OUT/nginx.service.log" 2>&1 &
PID[nginx]=$!
await_listening nginx "${PID[nginx]}" "${PORT[nginx]}"
say "nginx: pid ${PID[nginx]} on port ${PORT[nginx]}"

# --- the gateway, three ways ----------------------------------------------------------------------
# gateway_config VARIANT: its YAML, from examples/gateway/gateway.yaml's choices
gateway_config() {
    local store route
    case ${1/#base-/gw-} in
        gw-off)
            # No route protects POST /payments: it goes through to upstream.url like any other request
            # (the store is opened, never used).
            store=$(gateway_config gw-pg | sed -n '/^store:/,/^routes:/p' | sed '1d;$d')
            route="  - method: POST
    path: /unprotected-in-this-run" ;;
        gw-pg)
            store="  type: postgresql
  url: jdbc:postgresql://$PG_HOST:$PG_PORT/$GATEWAY_CLEANUP_DB
  username: $PG_USER
  create-schema: true${PGPASSWORD:+
  password-env: PGPASSWORD}" ;;
        gw-redis)
            store="  type: redis
  url: $REDIS_URI
  key-prefix: \"$KEY_PREFIX\"" ;;
    esac
    : "${route:=  - method: POST
    path: /payments
    fingerprint:
      json-members: [/account, /amount]}"
    cat <<YAML
listen:
  host: 127.0.0.1
admin:
  port: 0
upstream:
  url: http://127.0.0.1:${PORT[upstream]}
scope:
  basic:
    users-file: $EXAMPLE/users.txt
store:
$store
routes:
$route
YAML
}

psql_admin -c "CREATE DATABASE \"$GATEWAY_CLEANUP_DB\"" >/dev/null
GATEWAYS=()
for v in "${VARIANTS[@]}"; do [[ "$v" == gw-* || "$v" == base-* ]] && GATEWAYS+=("$v"); done
for v in "${GATEWAYS[@]}"; do
    gateway_config "$v" >"$OUT/$v.yaml"
    PORT[$v]=$(free_port)
    # shellcheck disable=SC2086 # SERVICE_JAVA_OPTS is a list
    jar="$OUT/snapshot/retrysafe-gateway.jar"
    [[ "$v" == base-* ]] && jar="$OUT/snapshot/retrysafe-gateway-baseline.jar"
    PORT=${PORT[$v]} java $SERVICE_JAVA_OPTS -jar "$jar" --config "$OUT/$v.yaml" \
        >"$OUT/$v.service.log" 2>&1 &
    PID[$v]=$!
    # One at a time: on a loaded machine, JVMs starting together can miss their store's connect timeout.
    await_listening "$v" "${PID[$v]}" "${PORT[$v]}"
    say "$v: pid ${PID[$v]} on port ${PORT[$v]}"
done

# --- the runs -------------------------------------------------------------------------------------
mode_of() { case $1 in gw-pg|gw-redis|base-pg|base-redis) echo new-key ;; *) echo no-key ;; esac; }
# The service reads its caller from the header the gateway sets once it has checked the credentials; without a
# gateway in front (the service alone, nginx), the load sends that header itself. The gateways drop it and set it.
CALLER=(--caller "$USER_NAME")
for v in "${GATEWAYS[@]}"; do
    warm_until_settled "$v" "${PID[$v]}" "${PORT[$v]}" --mode "$(mode_of "$v")" --threads "$THREADS" \
        --accounts acc-1,acc-2 "${CALLER[@]}"
done
: >"$OUT/rows.txt"
say "results in $OUT; warmup $WARMUP + duration $DURATION; $ROUNDS rounds; $THREADS clients closed, $RATE rps open; $(machine)"
for r in $(seq 1 "$ROUNDS"); do
    n=${#VARIANTS[@]}
    for ((i = 0; i < n; i++)); do
        v=${VARIANTS[$(( (i + r - 1) % n ))]}
        backends=()
        [[ "$v" == *-pg ]] && read -ra backends <<<"$(process_backends "${PID[$v]}")"
        ticks=$(cpu_ticks "${PID[$v]}")
        db_ticks=$(cpu_ticks "${backends[@]}")
        http_load "$v-closed-r$r" "${PORT[$v]}" --mode "$(mode_of "$v")" --threads "$THREADS" --accounts acc-1,acc-2 \
            "${CALLER[@]}"
        cpu=$(cpu_us_per_request "$(( $(cpu_ticks "${PID[$v]}") - ticks ))" "$(field rps "$RESULT")")
        db=nan # not on PostgreSQL, or a server on another machine: not measured
        [[ ${#backends[@]} -gt 0 ]] \
            && db=$(cpu_us_per_request "$(( $(cpu_ticks "${backends[@]}") - db_ticks ))" "$(field rps "$RESULT")")
        printf '%s|%s|%s cpu_us=%s db_us=%s\n' "$v-closed" "$r" "$RESULT" "$cpu" "$db" >>"$OUT/rows.txt"
        http_load "$v-open-r$r" "${PORT[$v]}" --mode "$(mode_of "$v")" --threads "$LOAD_THREADS" --rate "$RATE" \
            --accounts acc-1,acc-2 "${CALLER[@]}"
        printf '%s|%s|%s\n' "$v-open" "$r" "$RESULT" >>"$OUT/rows.txt"
    done
done

# --- the table ------------------------------------------------------------------------------------
med() { values "$1" "$2" | median %.2f; }
# per_round KEY: KEY's closed-loop rps over nginx's in the same round, "median (min–max)" over the rounds
per_round() { paste -d ' ' <(values "$1-closed" rps) <(values nginx-closed rps) | awk '$2 > 0 { print $1 / $2 }' | range %.2f; }
declare -A LABEL=([upstream]="Python upstream alone" [nginx]="nginx, plain reverse proxy"
    [gw-off]="gateway, idempotency off" [gw-pg]="gateway on PostgreSQL" [gw-redis]="gateway on Redis"
    [base-off]="baseline gateway, idempotency off" [base-pg]="baseline gateway on PostgreSQL"
    [base-redis]="baseline gateway on Redis")
{
    echo "| path | rps, $THREADS clients | vs upstream | vs nginx, per round | p50 ms at $RATE rps | p99 ms at $RATE rps | p50 over upstream | p99 over upstream | own CPU µs per request | its database's CPU µs per request | statuses (all runs) |"
    echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
    up_rps=$(med upstream-closed rps)
    up_p50=$(med upstream-open p50); up_p99=$(med upstream-open p99)
    for v in "${VARIANTS[@]}"; do
        rps=$(med "$v-closed" rps); p50=$(med "$v-open" p50); p99=$(med "$v-open" p99)
        st="$(statuses "$v-closed"); $(statuses "$v-open")"
        errs=$(( $(errors "$v-closed") + $(errors "$v-open") ))
        [[ "$errs" != 0 ]] && st="$st, errors:$errs"
        db=""
        [[ "$v" == *-pg ]] && db=$(values "$v-closed" db_us | range %.0f)
        printf '| %s | %s | %s | %s | %s | %s | %+.2f | %+.2f | %s | %s | %s |\n' "${LABEL[$v]}" "$rps" \
            "$(ratio "$rps" "$up_rps")" "$(per_round "$v")" "$p50" "$p99" \
            "$(awk -v a="$p50" -v b="$up_p50" 'BEGIN { print a - b }')" "$(awk -v a="$p99" -v b="$up_p99" 'BEGIN { print a - b }')" \
            "$(values "$v-closed" cpu_us | range %.0f)" "$db" "$st"
    done
    echo
    echo "Loopback HTTP/1.1, one Python upstream behind every path; per variant and round a closed-loop run"
    echo "($THREADS clients) and an open-loop run ($RATE rps from $LOAD_THREADS clients, latency from each request's due"
    echo "time); warmup $WARMUP, then $DURATION measured; median of $ROUNDS rounds, the order rotated per round."
    echo "Before round 1 each gateway under load until its JIT compilers settled (at least ${JVM_WARMUP:-20s}, at most"
    echo "${SETTLE_MAX:-180s}). Without a key: upstream, nginx, gateway off; a new Idempotency-Key per request: the gateway"
    echo "on a store. Its database's CPU: the server's processes serving the gateway's connections to PostgreSQL"
    echo "(when the server runs on this machine), over each closed-loop run, per request."
    echo "Source: $SOURCE. Machine: $(machine) at the end; $(java -version 2>&1 | head -n 1); $("$NGINX" -v 2>&1)."
} | tee "$OUT/table.md"
say "table: $OUT/table.md"
