#!/usr/bin/env bash
# Provision a local Docker engine and an air-gapped Debian+Python base image
# for the ONNX worker containers.
#
# Idempotent: every step is skipped when its result is already there.
# Run as root. See --help.
set -euo pipefail

PROG=$(basename "$0")

BASE_IMAGE=${BASE_IMAGE:-trt-matrix/debian-python:bookworm}
DEBIAN_SUITE=${DEBIAN_SUITE:-bookworm}
DEBIAN_MIRROR=${DEBIAN_MIRROR:-}
BASE_PACKAGES=${BASE_PACKAGES:-python3,python3-venv,python3-pip,ca-certificates}
DOCKERD_LOG=${DOCKERD_LOG:-/var/log/trt-matrix-dockerd.log}
DOCKERD_PIDFILE=${DOCKERD_PIDFILE:-/run/trt-matrix-dockerd.pid}
DOCKERD_WAIT=${DOCKERD_WAIT:-60}
STORAGE_DRIVER=${STORAGE_DRIVER:-}
DOCKERD_EXTRA_ARGS=${DOCKERD_EXTRA_ARGS:-}
WORK_ROOT=${WORK_ROOT:-}

usage() {
    cat <<EOF
Usage: $PROG [--stop] [--no-image] [--smoke] [--help]

Provision Docker for running ONNX test cases in containers (run as root):
  1. install docker.io (apt) if 'dockerd' is missing
  2. start dockerd in the background if 'docker info' fails
     (default storage driver first, then --storage-driver=vfs; each also
      retried with --iptables=false --bridge=none; workers need no network)
  3. bootstrap the base image \$BASE_IMAGE with debootstrap + 'docker import'
     if it is not present (Debian mirror taken from the host's apt sources)
Every step is skipped when already done, so re-running is cheap.

Options:
  --stop       stop the dockerd this script started (pid file) and exit
  --no-image   only install/start Docker, do not build the base image
  --smoke      after provisioning, run 'python3 --version' in the base image
               (no network, dropped caps) to prove containers can start
  -h, --help   show this help

Environment (defaults in brackets):
  BASE_IMAGE          image tag to create [$BASE_IMAGE]
  DEBIAN_SUITE        suite for debootstrap [$DEBIAN_SUITE]
  DEBIAN_MIRROR       Debian mirror URL [first matching URI in /etc/apt/sources*]
  BASE_PACKAGES       --include list [$BASE_PACKAGES]
  STORAGE_DRIVER      force a dockerd storage driver (e.g. vfs, overlay2)
  DOCKERD_EXTRA_ARGS  extra dockerd arguments (word-split)
  DOCKERD_LOG         dockerd log file [$DOCKERD_LOG]
  DOCKERD_PIDFILE     pid file of the started dockerd [$DOCKERD_PIDFILE]
  DOCKERD_WAIT        seconds to wait for the daemon socket [$DOCKERD_WAIT]
  WORK_ROOT           where the temporary rootfs is built [mktemp -d under /var/tmp]

To start dockerd again later, just re-run: $PROG
EOF
}

# ---------------------------------------------------------------- helpers
ts() { date +%H:%M:%S; }
log() { printf '[%s] %s\n' "$(ts)" "$*"; }
die() { printf '[%s] ERROR: %s\n' "$(ts)" "$*" >&2; exit 1; }

CURRENT_STEP=""
STEP_START=0
step() {
    CURRENT_STEP=$1
    STEP_START=$SECONDS
    log "==> $CURRENT_STEP"
}
step_done() {
    log "<== $CURRENT_STEP: $* ($((SECONDS - STEP_START)) s)"
    CURRENT_STEP=""
}
ROOTFS=""
cleanup_rootfs() {
    if [[ -n $ROOTFS && -d $ROOTFS ]]; then
        # debootstrap may leave proc/sys mounted when it fails half way
        local m
        for m in proc sys dev/pts dev; do
            if mountpoint -q "$ROOTFS/$m" 2>/dev/null; then umount -l "$ROOTFS/$m" || true; fi
        done
        rm -rf --one-file-system "$ROOTFS"
    fi
    ROOTFS=""
}
on_exit() {
    local rc=$?
    cleanup_rootfs
    if ((rc != 0)) && [[ -n $CURRENT_STEP ]]; then
        printf '[%s] ERROR: step "%s" failed (exit %s)\n' "$(ts)" "$CURRENT_STEP" "$rc" >&2
    fi
}
trap on_exit EXIT

apt_install() {
    export DEBIAN_FRONTEND=noninteractive
    local alog
    alog=$(mktemp /tmp/trt-matrix-apt.XXXXXX.log)
    log "apt-get update (log: $alog)"
    if ! apt-get update -qq >>"$alog" 2>&1; then
        tail -n 20 "$alog" | sed 's/^/    | /' >&2
        die "apt-get update failed (log: $alog)"
    fi
    log "apt-get install $*"
    if ! apt-get install -y -qq --no-install-recommends "$@" >>"$alog" 2>&1; then
        tail -n 20 "$alog" | sed 's/^/    | /' >&2
        die "apt-get install $* failed (log: $alog)"
    fi
    rm -f "$alog"
}

docker_ok() { docker info >/dev/null 2>&1; }

pid_alive() { [[ -n ${1:-} ]] && kill -0 "$1" 2>/dev/null; }

started_pid() {
    [[ -f $DOCKERD_PIDFILE ]] || return 1
    local pid
    pid=$(cat "$DOCKERD_PIDFILE" 2>/dev/null || true)
    pid_alive "$pid" || return 1
    echo "$pid"
}

stop_dockerd() {
    local pid
    if ! pid=$(started_pid); then
        log "no running dockerd started by $PROG (pid file $DOCKERD_PIDFILE)"
        rm -f "$DOCKERD_PIDFILE"
        return 0
    fi
    log "stopping dockerd (pid $pid)"
    kill -TERM "$pid"
    local i
    for ((i = 0; i < 30; i++)); do
        pid_alive "$pid" || break
        sleep 1
    done
    if pid_alive "$pid"; then
        log "dockerd still alive after 30 s, sending SIGKILL"
        kill -KILL "$pid" || true
        sleep 1
    fi
    rm -f "$DOCKERD_PIDFILE"
    log "dockerd stopped"
}

# ----------------------------------------------------------- step 1: install
ensure_docker_installed() {
    step "install docker engine"
    if command -v dockerd >/dev/null 2>&1; then
        step_done "already installed ($(dockerd --version 2>/dev/null || echo dockerd))"
        return
    fi
    # docker.io's postinst tries to start the service; there may be no init
    # system here, so block service starts for the duration of the install.
    local policy=/usr/sbin/policy-rc.d created_policy=0
    if [[ ! -e $policy ]]; then
        printf '#!/bin/sh\nexit 101\n' >"$policy"
        chmod 755 "$policy"
        created_policy=1
    fi
    apt_install docker.io
    if ((created_policy)); then rm -f "$policy"; fi
    command -v dockerd >/dev/null 2>&1 || die "docker.io installed but dockerd not on PATH"
    step_done "installed ($(dockerd --version))"
}

# ------------------------------------------------------------- step 2: start
# Try one dockerd configuration; returns 0 when the API answers.
try_dockerd() {
    local -a args=("$@")
    local pid start=$SECONDS
    mkdir -p "$(dirname "$DOCKERD_LOG")" "$(dirname "$DOCKERD_PIDFILE")"
    rm -f "$DOCKERD_PIDFILE"
    printf '\n===== %s dockerd %s =====\n' "$(date -Is)" "${args[*]}" >>"$DOCKERD_LOG"
    log "starting: dockerd${args[*]:+ ${args[*]}} (log: $DOCKERD_LOG)"
    # own session so it outlives this shell and its process group
    setsid dockerd --pidfile "$DOCKERD_PIDFILE" "${args[@]}" \
        </dev/null >>"$DOCKERD_LOG" 2>&1 &
    pid=$!
    while ((SECONDS - start < DOCKERD_WAIT)); do
        if docker_ok; then
            # dockerd writes its real pid into the pid file
            [[ -s $DOCKERD_PIDFILE ]] || echo "$pid" >"$DOCKERD_PIDFILE"
            return 0
        fi
        if ! pid_alive "$pid"; then
            log "dockerd exited during start-up; last log lines:"
            tail -n 5 "$DOCKERD_LOG" | sed 's/^/    | /'
            return 1
        fi
        sleep 1
    done
    log "dockerd did not answer within ${DOCKERD_WAIT} s; stopping it"
    kill -TERM "$pid" 2>/dev/null || true
    sleep 3
    if pid_alive "$pid"; then kill -KILL "$pid" 2>/dev/null || true; fi
    tail -n 5 "$DOCKERD_LOG" | sed 's/^/    | /'
    return 1
}

ensure_dockerd_running() {
    step "start docker daemon"
    if docker_ok; then
        step_done "already running (storage driver: $(docker info --format '{{.Driver}}'))"
        return
    fi
    if pgrep -x dockerd >/dev/null 2>&1; then
        die "a dockerd process exists but 'docker info' fails; check it (pid $(pgrep -x dockerd | tr '\n' ' '))"
    fi
    # dockerd refuses to start over a stale pid file of a dead process
    [[ -f /var/run/docker.pid ]] && ! pid_alive "$(cat /var/run/docker.pid)" \
        && rm -f /var/run/docker.pid

    local -a extra=() drivers=() nets=("" "--iptables=false --bridge=none")
    # shellcheck disable=SC2206
    [[ -n $DOCKERD_EXTRA_ARGS ]] && extra=($DOCKERD_EXTRA_ARGS)
    if [[ -n $STORAGE_DRIVER ]]; then
        drivers=("$STORAGE_DRIVER")
    else
        drivers=("" "vfs") # "" = dockerd's default (overlay2 when it works)
    fi
    local drv net
    for drv in "${drivers[@]}"; do
        for net in "${nets[@]}"; do
            local -a args=("${extra[@]}")
            [[ -n $drv ]] && args+=("--storage-driver=$drv")
            # shellcheck disable=SC2206
            [[ -n $net ]] && args+=($net)
            if try_dockerd "${args[@]}"; then
                local chosen
                chosen=$(docker info --format '{{.Driver}}')
                log "dockerd is up: pid $(cat "$DOCKERD_PIDFILE"), storage driver '$chosen', args: ${args[*]:-(none)}"
                if [[ -z $drv && $chosen == vfs ]]; then
                    log "note: dockerd fell back to vfs by itself (overlay not usable here)"
                fi
                step_done "started (storage driver: $chosen)"
                return
            fi
        done
    done
    die "could not start dockerd with any configuration; see $DOCKERD_LOG"
}

# ------------------------------------------------------- step 3: base image
# Print the first Debian mirror URI that apt uses for $DEBIAN_SUITE.
detect_mirror() {
    local f uri
    # deb822 sources (*.sources)
    for f in /etc/apt/sources.list.d/*.sources; do
        [[ -f $f ]] || continue
        uri=$(awk -v suite="$DEBIAN_SUITE" '
            function flush() {
                if (types ~ /(^| )deb( |$)/ && (" " suites " ") ~ (" " suite " ") && uris != "" && enabled != "no") {
                    split(uris, u, " "); print u[1]; found = 1; exit
                }
                types = suites = uris = ""; enabled = ""
            }
            /^[[:space:]]*#/ { next }
            /^[[:space:]]*$/ { flush(); next }
            {
                key = tolower($1); sub(/:$/, "", key)
                val = $0; sub(/^[^:]*:[[:space:]]*/, "", val)
                if (key == "types") types = val
                else if (key == "suites") suites = val
                else if (key == "uris") uris = val
                else if (key == "enabled") enabled = tolower(val)
            }
            END { if (!found) flush() }
        ' "$f")
        if [[ -n $uri ]]; then echo "$uri"; return 0; fi
    done
    # one-line sources (sources.list, *.list)
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [[ -f $f ]] || continue
        uri=$(awk -v suite="$DEBIAN_SUITE" '
            /^[[:space:]]*deb[[:space:]]/ {
                i = 2
                if ($i ~ /^\[/) { while ($i !~ /\]$/ && i < NF) i++; i++ }
                if ($(i + 1) == suite) { print $i; exit }
            }
        ' "$f")
        if [[ -n $uri ]]; then echo "$uri"; return 0; fi
    done
    return 1
}

ensure_base_image() {
    step "base image $BASE_IMAGE"
    if docker image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
        step_done "already present ($(docker image inspect -f '{{.Size}}' "$BASE_IMAGE" | awk '{printf "%.0f MB", $1/1e6}'))"
        return
    fi

    if ! command -v debootstrap >/dev/null 2>&1; then
        log "debootstrap missing, installing it"
        apt_install debootstrap
    fi

    local mirror=$DEBIAN_MIRROR
    if [[ -z $mirror ]]; then
        mirror=$(detect_mirror) || die "no apt source for suite '$DEBIAN_SUITE' found in /etc/apt/sources.list*; set DEBIAN_MIRROR"
    fi
    log "mirror: $mirror (suite $DEBIAN_SUITE)"

    local work_parent=${WORK_ROOT:-/var/tmp}
    mkdir -p "$work_parent"
    ROOTFS=$(mktemp -d "$work_parent/trt-matrix-rootfs.XXXXXX")
    local t0=$SECONDS dlog="$ROOTFS.debootstrap.log"
    log "debootstrap --variant=minbase --include=$BASE_PACKAGES $DEBIAN_SUITE $ROOTFS (log: $dlog)"
    if ! debootstrap --variant=minbase --include="$BASE_PACKAGES" \
        "$DEBIAN_SUITE" "$ROOTFS" "$mirror" >"$dlog" 2>&1; then
        tail -n 20 "$dlog" | sed 's/^/    | /' >&2
        [[ -f $ROOTFS/debootstrap/debootstrap.log ]] \
            && tail -n 20 "$ROOTFS/debootstrap/debootstrap.log" | sed 's/^/    | /' >&2
        die "debootstrap failed (full log: $dlog)"
    fi
    log "debootstrap done ($((SECONDS - t0)) s)"

    # slim the rootfs: apt lists/caches, docs, man pages, locales, logs
    rm -rf "$ROOTFS"/var/lib/apt/lists/* \
        "$ROOTFS"/var/cache/apt/*.bin "$ROOTFS"/var/cache/apt/archives/*.deb \
        "$ROOTFS"/var/cache/apt/archives/partial/* \
        "$ROOTFS"/usr/share/doc/* "$ROOTFS"/usr/share/man/* \
        "$ROOTFS"/usr/share/info/* "$ROOTFS"/usr/share/lintian/* \
        "$ROOTFS"/usr/share/locale/* \
        "$ROOTFS"/var/log/*.log "$ROOTFS"/var/log/apt/* \
        "$ROOTFS"/var/cache/debconf/*-old "$ROOTFS"/debootstrap \
        "$ROOTFS"/tmp/* "$ROOTFS"/var/tmp/*
    find "$ROOTFS/usr/lib" -name __pycache__ -type d -prune -exec rm -rf {} + 2>/dev/null || true
    # keep future apt/dpkg runs inside the image from re-adding docs
    mkdir -p "$ROOTFS/etc/dpkg/dpkg.cfg.d"
    printf 'path-exclude /usr/share/doc/*\npath-exclude /usr/share/man/*\npath-exclude /usr/share/info/*\npath-exclude /usr/share/locale/*\n' \
        >"$ROOTFS/etc/dpkg/dpkg.cfg.d/01-trt-matrix-nodoc"
    log "rootfs size: $(du -sh --one-file-system "$ROOTFS" | cut -f1)"

    t0=$SECONDS
    log "docker import -> $BASE_IMAGE"
    tar --numeric-owner -C "$ROOTFS" -c . | docker import \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'ENV LANG=C.UTF-8' \
        --change 'ENV PYTHONDONTWRITEBYTECODE=1' \
        --change 'CMD ["python3"]' \
        --change "LABEL org.opencontainers.image.description=\"Debian $DEBIAN_SUITE minbase + python3 (debootstrap)\"" \
        --message "debootstrap $DEBIAN_SUITE minbase +$BASE_PACKAGES" \
        - "$BASE_IMAGE" >/dev/null || die "docker import failed"
    log "import done ($((SECONDS - t0)) s)"
    rm -f "$dlog"
    cleanup_rootfs
    step_done "created ($(docker image inspect -f '{{.Size}}' "$BASE_IMAGE" | awk '{printf "%.0f MB", $1/1e6}'))"
}

smoke_test() {
    step "smoke test"
    local out
    out=$(docker run --rm --network none --cap-drop ALL --security-opt no-new-privileges \
        --user 65534:65534 "$BASE_IMAGE" python3 -c 'import sys, venv; print(sys.version.split()[0])') \
        || die "could not run a container from $BASE_IMAGE"
    step_done "python $out runs in $BASE_IMAGE"
}

# -------------------------------------------------------------------- main
main() {
    local do_stop=0 do_image=1 do_smoke=0
    while (($#)); do
        case $1 in
            -h | --help) usage; exit 0 ;;
            --stop) do_stop=1 ;;
            --no-image) do_image=0 ;;
            --smoke) do_smoke=1 ;;
            *) usage >&2; die "unknown argument: $1" ;;
        esac
        shift
    done
    [[ $(id -u) -eq 0 ]] || die "must run as root (try: sudo $0)"

    if ((do_stop)); then
        stop_dockerd
        exit 0
    fi

    local t0=$SECONDS
    ensure_docker_installed
    ensure_dockerd_running
    if ((do_image)); then ensure_base_image; fi
    if ((do_smoke)); then smoke_test; fi
    log "all done in $((SECONDS - t0)) s; stop the daemon with: $0 --stop"
}

main "$@"
