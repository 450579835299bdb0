#!/usr/bin/env bash
# Serve the explorer to a class: N `streamlit run app.py` replicas on 127.0.0.1 behind nginx.
#
#     deploy/serve.sh N PORT [FIRST_REPLICA_PORT]        e.g. deploy/serve.sh 2 8080
#
# Starts replica k on 127.0.0.1:FIRST_REPLICA_PORT+k-1 (default PORT+1, PORT+2, ...), each with its own log,
# waits until every one answers /_stcore/health, writes nginx.conf from deploy/nginx.conf.template and starts
# nginx on PORT as its own master (its own pid file, logs and temp folders; /etc/nginx is not touched), in a
# process group of its own. Then it watches, once a second: a replica that exits is started again (nginx takes it
# back once it answers); a lost nginx master takes its workers with it (their group is killed) and nginx is started
# again; a log past LOG_MAX_BYTES is rotated. Ctrl-C or SIGTERM stops nginx and every replica and checks that no
# port is left open.
#
# Everything a run writes is in its run folder, runs/serve-DATE-PID/ (or $RUN_DIR): replica-K.log and
# replica-K.pid, nginx.conf, access.log (which replica answered each request), nginx-error.log, streamlit/ (the
# copy of Streamlit's page code that nginx serves); each log is kept under LOG_MAX_BYTES, with the text before in
# LOG.1 (so at most twice that per log).
# Environment: PYTHON (default python), LISTEN_ADDRESS (default all interfaces; 127.0.0.1 keeps it local),
# RUN_DIR, LOG_MAX_BYTES (default 10000000).
set -uo pipefail
shopt -u patsub_replacement 2>/dev/null || true  # '&' in a path must not mean "the match" in ${x//p/s}

usage() { echo "usage: $0 N PORT [FIRST_REPLICA_PORT]" >&2; exit 2; }
[[ $# -ge 2 && $# -le 3 && $1 =~ ^[1-9][0-9]*$ && $2 =~ ^[0-9]+$ ]] || usage
N=$1 PORT=$2 FIRST=${3:-$(($2 + 1))}
[[ $FIRST =~ ^[0-9]+$ ]] || usage
LOG_MAX=${LOG_MAX_BYTES:-10000000}
[[ $LOG_MAX =~ ^[1-9][0-9]*$ ]] || { echo "error: LOG_MAX_BYTES must be a number of bytes" >&2; exit 2; }
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEPLOY=$ROOT/deploy
PYTHON=${PYTHON:-python}
LISTEN=${LISTEN_ADDRESS:+$LISTEN_ADDRESS:}$PORT
RUN=${RUN_DIR:-$ROOT/runs/serve-$(date +%Y%m%d-%H%M%S)-$$}
command -v nginx >/dev/null || { echo "error: nginx not found (apt-get install nginx)" >&2; exit 2; }

PORTS=() PIDS=() STARTED=()
for ((k = 1; k <= N; k++)); do PORTS[k]=$((FIRST + k - 1)); done
for p in "$PORT" "${PORTS[@]}"; do
    if [[ -n $(ss -ltnH "sport = :$p") ]]; then echo "error: port $p is already in use" >&2; exit 2; fi
done
mkdir -p "$RUN/tmp"
chmod 755 "$RUN"  # nginx's worker (user nobody when started as root) reads the starting page from here
NGINX_PID=""

start_replica() {  # k: start replica k in the background, its output appended to its log
    local k=$1
    (cd "$ROOT" && exec "$PYTHON" -m streamlit run app.py --server.headless true --server.port "${PORTS[k]}" \
        --server.address 127.0.0.1 --server.fileWatcherType none --browser.gatherUsageStats false) \
        >>"$RUN/replica-$k.log" 2>&1 &
    PIDS[k]=$!
    STARTED[k]=$SECONDS
    echo "${PIDS[k]}" >"$RUN/replica-$k.pid"
}

healthy() { [[ $(curl -s --max-time 2 "http://127.0.0.1:$1/_stcore/health" 2>/dev/null) == ok ]]; }

alive() { [[ -n ${1:-} ]] && kill -0 "$1" 2>/dev/null; }

listening() { [[ -n $(ss -ltnH "sport = :$1") ]]; }

start_nginx() {  # nginx on PORT, its master leading a process group of its own (setsid): its workers are in it
    setsid nginx -e "$RUN/nginx-error.log" -p "$RUN" -c "$RUN/nginx.conf" -g "daemon off;" &
    NGINX_PID=$!
    until listening "$PORT"; do
        alive "$NGINX_PID" || { echo "error: nginx exited:" >&2; tail -n 20 "$RUN/nginx-error.log" >&2; stop 1; }
        sleep 0.2
    done
}

bound_log() {  # file: once past LOG_MAX bytes, its text goes to file.1 (replacing the one before) and it starts empty
    local f=$1
    # Copied, then emptied in place: the writers (replicas, nginx) append to it and cannot be told to reopen a new
    # file. A line written between the copy and the emptying is lost.
    if (($(stat -c %s "$f" 2>/dev/null || echo 0) > LOG_MAX)); then cp "$f" "$f.1" && : >"$f"; fi
}

stop() {  # stop nginx and every replica (TERM, then KILL after 15 s); check their ports are closed
    local status=${1:-0} pid p
    trap - INT TERM EXIT
    echo "stopping nginx and ${#PIDS[@]} replica(s) ..."
    for pid in $NGINX_PID "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
    for ((t = 0; t < 150; t++)); do
        local left=0
        for pid in $NGINX_PID "${PIDS[@]}"; do alive "$pid" && left=1; done
        ((left)) || break
        sleep 0.1
    done
    for pid in $NGINX_PID "${PIDS[@]}"; do alive "$pid" && kill -KILL "$pid" 2>/dev/null; done
    [[ -n $NGINX_PID ]] && kill -KILL -- "-$NGINX_PID" 2>/dev/null  # a worker its master left behind
    wait 2>/dev/null
    for p in "$PORT" "${PORTS[@]}"; do
        if [[ -n $(ss -ltnH "sport = :$p") ]]; then echo "warning: port $p is still open" >&2; status=1; fi
    done
    echo "stopped; logs in $RUN"
    exit "$status"
}
trap 'stop 130' INT
trap 'stop 0' TERM
trap 'stop $?' EXIT

echo "starting $N replica(s) on 127.0.0.1:${PORTS[1]}..${PORTS[N]} (logs in $RUN)"
for ((k = 1; k <= N; k++)); do start_replica "$k"; done
for ((k = 1; k <= N; k++)); do
    until healthy "${PORTS[k]}"; do
        if ! alive "${PIDS[k]}"; then
            echo "error: replica $k exited while starting; the end of $RUN/replica-$k.log:" >&2
            tail -n 20 "$RUN/replica-$k.log" >&2
            stop 1
        fi
        if ((SECONDS - STARTED[k] > 120)); then echo "error: replica $k gave no health answer in 120 s" >&2; stop 1; fi
        sleep 0.3
    done
done

# The proxy's configuration: the template with this run's folder, port and replicas filled in.
upstreams="    upstream explorer {  # a browser without the cookie yet: round robin"$'\n'
for ((k = 1; k <= N; k++)); do
    upstreams+="        server 127.0.0.1:${PORTS[k]} max_fails=1 fail_timeout=5s;"$'\n'
done
upstreams+="    }"$'\n'
routes="" served=""
for ((k = 1; k <= N; k++)); do
    upstreams+="    upstream replica_$k {"$'\n'"        server 127.0.0.1:${PORTS[k]} max_fails=1 fail_timeout=5s;"$'\n'
    for ((j = 1; j <= N; j++)); do
        ((j == k)) || upstreams+="        server 127.0.0.1:${PORTS[j]} max_fails=1 fail_timeout=5s backup;"$'\n'
    done
    upstreams+="    }"$'\n'
    routes+="        $k replica_$k;"$'\n'
    served+="        \"~127\\.0\\.0\\.1:${PORTS[k]}\$\" $k;"$'\n'
done
conf=$(<"$DEPLOY/nginx.conf.template")
conf=${conf//@RUN@/$RUN}
conf=${conf//@LISTEN@/$LISTEN}
conf=${conf//@UPSTREAMS@/${upstreams%$'\n'}}
conf=${conf//@ROUTES@/${routes%$'\n'}}
conf=${conf//@SERVED_BY@/${served%$'\n'}}
printf '%s\n' "$conf" >"$RUN/nginx.conf"
cp "$DEPLOY/proxy.conf" "$DEPLOY/security-headers.conf" "$DEPLOY/starting.html" "$RUN/"
chmod 644 "$RUN/starting.html"
# Streamlit's page code (its package's static/static, 26 MB), served by nginx itself (nginx.conf.template): copied,
# since nginx's worker may not read the Python environment's folder (a home folder is often private).
static=$("$PYTHON" -c 'import os, streamlit; print(os.path.join(os.path.dirname(streamlit.__file__), "static"))') \
    && mkdir -p "$RUN/streamlit" && cp -R "$static/static" "$RUN/streamlit/" && chmod -R a+rX "$RUN/streamlit" \
    || { echo "error: Streamlit's static files could not be copied to $RUN/streamlit" >&2; stop 1; }

nginx -t -q -e "$RUN/nginx-error.log" -p "$RUN" -c "$RUN/nginx.conf" || { cat "$RUN/nginx-error.log" >&2; stop 1; }
start_nginx  # once it listens: every replica has answered (a replica lost meanwhile is the watch's, below)
if [[ -z ${LISTEN_ADDRESS:-} ]]; then
    echo "open http://$(hostname -f 2>/dev/null || hostname):$PORT/ (on this machine: http://127.0.0.1:$PORT/)"
else
    echo "open http://$LISTEN_ADDRESS:$PORT/"
fi
echo "Ctrl-C stops everything"

# Watch: a replica that exits is started again, at most once every 10 s (a replica that cannot start does not
# spin); nginx sends its browsers to the others meanwhile and takes it back once it answers (fail_timeout).
# A lost nginx master leaves its workers holding PORT, answering "starting" for ever: they are killed (the master's
# process group) and nginx is started again. The pages reconnect through it, each to its own replica (the cookie),
# and find their sessions there (server.disconnectedSessionTTL in .streamlit/config.toml).
while :; do
    sleep 1 &
    wait $! 2>/dev/null  # a signal runs its trap at once, not after the sleep
    if ! alive "$NGINX_PID"; then
        echo "$(date +%T) nginx's master exited (its log: $RUN/nginx-error.log); killing its workers, starting nginx"
        kill -KILL -- "-$NGINX_PID" 2>/dev/null
        for ((t = 0; t < 50; t++)); do listening "$PORT" || break; sleep 0.1; done
        listening "$PORT" && { echo "error: port $PORT is still held after nginx's master exited" >&2; stop 1; }
        start_nginx
    fi
    for ((k = 1; k <= N; k++)); do
        if ! alive "${PIDS[k]}" && ((SECONDS - STARTED[k] >= 10)); then
            echo "$(date +%T) replica $k (port ${PORTS[k]}) exited (its log: $RUN/replica-$k.log); starting it again"
            start_replica "$k"
        fi
        bound_log "$RUN/replica-$k.log"
    done
    bound_log "$RUN/access.log"
    bound_log "$RUN/nginx-error.log"
done
