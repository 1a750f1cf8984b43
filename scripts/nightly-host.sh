#!/usr/bin/env bash
# The nightly job without GitHub, host side: run this host kind's targets, then copy the run directory to a
# collection point where scripts/nightly-publish.sh merges the runs of all hosts. Run it from cron; --help explains.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: scripts/nightly-host.sh [--no-wheelhouse] [HOST_KIND [DEST]] [-- NIGHTLY_ARGS...]

Runs `python -m harness nightly --host-kind HOST_KIND` on this machine, then copies the run directory it produced
(<runs>/<date>_<host>_<revision>/) to the collection point DEST, where scripts/nightly-publish.sh picks it up.

  HOST_KIND   a host kind of matrix.yaml `hosts:` (x86-gpu, orin-jp6.0, orin-jp6.1, orin-jp5, cpu, ...);
              default: $TRT_MATRIX_HOST_KIND
  DEST        the collection point; default: $TRT_MATRIX_COLLECT
                user@host:/path   a remote directory (must exist): copied with rsync over ssh, without the
                                  models (*.onnx), engines (*.engine, *.plan) and tensors (*.npz)
                /path             a local or mounted directory (created if missing): copied whole with cp
  --no-wheelhouse
              skip `containers wheelhouse` (by default it runs first, and its failure is only a warning, as on an
              air-gapped host that uses a wheelhouse copied by hand)
  -- ARGS     passed to `nightly` as they are, e.g. -- --target ort-cpu -k control --force

Environment:
  TRT_MATRIX_HOST_KIND   host kind when HOST_KIND is not given
  TRT_MATRIX_COLLECT     collection point when DEST is not given
  TRT_MATRIX_RUNS_DIR    the runs directory on this host; keep it: unchanged cells are carried over from the
                         previous run found there (default: $HOME/trt-matrix/runs)
  TRT_MATRIX_HOST        the name of this host's series in the history (nightly --host); default: the machine's
                         hostname. Two machines must not share a name, or their runs collide at DEST.
  TRT_MATRIX_WHEELHOUSE  wheelhouse the worker images are built from (default: wheelhouse/ in the checkout)
  PYTHON                 the Python that has the harness installed (default: python3)

Exit status: 0 run copied; 3 run copied, but some cells are infra-error (the harness or this machine broke: see
their logs); 2 usage error; any other: nightly failed (its status) or the copy failed (1).

Example crontab line (crontab -e as the user that owns the checkout; cron wants % escaped, so none is used):
  30 1 * * * cd $HOME/trt-matrix-src && git pull -q --ff-only && PYTHON=$HOME/trt-matrix-venv/bin/python scripts/nightly-host.sh x86-gpu collector@nas:/srv/trt-matrix/collect >>$HOME/trt-matrix/nightly-host.log 2>&1
EOF
}

die() {
  echo "nightly-host.sh: error: $1" >&2
  exit "${2:-1}"
}

wheelhouse=1
positional=()
nightly_args=()
while [ "$#" -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --no-wheelhouse) wheelhouse=0 ;;
    --) shift; nightly_args=("$@"); break ;;
    -*) die "unknown option $1 (options for nightly go after --; see --help)" 2 ;;
    *) positional+=("$1") ;;
  esac
  shift
done
[ "${#positional[@]}" -le 2 ] || die "too many arguments: ${positional[*]} (see --help)" 2

kind="${positional[0]:-${TRT_MATRIX_HOST_KIND:-}}"
dest="${positional[1]:-${TRT_MATRIX_COLLECT:-}}"
[ -n "$kind" ] || die "no host kind: give HOST_KIND or set TRT_MATRIX_HOST_KIND (the ids under hosts: in matrix.yaml)" 2
[ -n "$dest" ] || die "no collection point: give DEST or set TRT_MATRIX_COLLECT (a directory or user@host:/path)" 2
PYTHON="${PYTHON:-python3}"
runs="${TRT_MATRIX_RUNS_DIR:-$HOME/trt-matrix/runs}"

# rsync's own rule: a colon before the first slash means [user@]host:path.
is_remote() {
  case "$1" in
    */*:*|/*) return 1 ;;
    *:*) return 0 ;;
    *) return 1 ;;
  esac
}

# Paths given relative to where the script was started from, made absolute before moving to the checkout.
absolute() {
  case "$1" in
    /*) printf '%s\n' "$1" ;;
    *) printf '%s\n' "$PWD/$1" ;;
  esac
}
runs="$(absolute "$runs")"
if ! is_remote "$dest"; then
  dest="$(absolute "$dest")"
fi

# The checkout this script belongs to: `python -m harness` runs from there, so it works without an install too.
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"

command -v "$PYTHON" >/dev/null 2>&1 || die "PYTHON=$PYTHON not found; set PYTHON to the interpreter that has the harness installed"
"$PYTHON" -c 'import harness' 2>/dev/null \
  || die "$PYTHON cannot import the harness; install it with: $PYTHON -m pip install -e $repo"

mkdir -p "$runs"

# Two nightlies on one runs directory would step on each other (a long night overrunning the next cron start).
if command -v flock >/dev/null 2>&1; then
  exec 9>"${runs%/}.lock"
  flock -n 9 || die "another nightly-host.sh is running on $runs (lock ${runs%/}.lock); not starting a second one"
fi

echo "== $(date -u '+%Y-%m-%d %H:%M:%S') UTC: nightly for host kind $kind, runs in $runs"

if [ "$wheelhouse" -eq 1 ]; then
  wheelhouse_args=(--host-kind "$kind")
  if [ -n "${TRT_MATRIX_WHEELHOUSE:-}" ]; then
    wheelhouse_args+=(--out "$TRT_MATRIX_WHEELHOUSE")
  fi
  "$PYTHON" -m harness containers wheelhouse "${wheelhouse_args[@]}" \
    || echo "nightly-host.sh: warning: downloading wheels failed; going on with the wheelhouse already here" >&2
fi

args=(--host-kind "$kind" --runs "$runs")
if [ -n "${TRT_MATRIX_HOST:-}" ]; then
  args+=(--host "$TRT_MATRIX_HOST")
fi
# The last line nightly prints is `run directory: PATH`; keep a copy of the output to read it back.
output="$(mktemp)"
trap 'rm -f "$output"' EXIT
set +e
"$PYTHON" -m harness nightly "${args[@]}" "${nightly_args[@]}" | tee "$output"
status="${PIPESTATUS[0]}"
set -e

run_dir="$(sed -n 's/^run directory: //p' "$output" | tail -n 1)"
if [ -z "$run_dir" ]; then
  die "nightly exited with status $status and reported no run directory; nothing to copy" "$(( status == 0 ? 1 : status ))"
fi
run_dir="$(absolute "$run_dir")"
[ -d "$run_dir" ] || die "nightly reported run directory $run_dir, which does not exist"
name="$(basename "$run_dir")"

if is_remote "$dest"; then
  command -v rsync >/dev/null 2>&1 || die "rsync not found; install it (e.g. apt-get install rsync) to copy to $dest"
  rsync -a --delete --exclude='*.onnx' --exclude='*.engine' --exclude='*.plan' --exclude='*.npz' \
    "$run_dir/" "${dest%/}/$name/" \
    || die "copying $run_dir to ${dest%/}/$name/ with rsync failed (does $dest exist, and does ssh log in without a password?)"
else
  mkdir -p "$dest" || die "cannot create the collection directory $dest"
  # A second run on the same day and revision replaces the earlier copy.
  rm -rf "${dest:?}/${name:?}"
  cp -R "$run_dir" "${dest%/}/$name" || die "copying $run_dir to ${dest%/}/$name failed"
fi
echo "collected: ${dest%/}/$name"

if [ "$status" -eq 3 ]; then
  echo "nightly-host.sh: some cells are infra-error (the harness or this machine broke); see the logs in $run_dir" >&2
fi
exit "$status"
