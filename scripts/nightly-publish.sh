#!/usr/bin/env bash
# The nightly job without GitHub, collecting side: merge the runs the hosts copied here tonight into the compatibility
# matrix, add them to the history, write the trend page and JUnit, and fail on a regression. --help explains.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: scripts/nightly-publish.sh [--date YYYY-MM-DD] [COLLECT_DIR]

On the host where scripts/nightly-host.sh copies every host's run directory, after the hosts have finished:
  1. picks the runs of DATE in COLLECT_DIR (directories named DATE_<host>_<revision> that hold a run.json);
  2. python -m harness merge RUNS... --out SITE             -> SITE/index.html, results.jsonl, merge.json
  3. python -m harness history HISTORY --add RUNS...         -> copies them into the history store, writes
       --out SITE/trend.html --junit SITE/regressions.xml       the trend page and one failed test per regressed
                                                                cell; the table of changes also goes to
                                                                SITE/changes.txt
Serve SITE with any web server, or open SITE/index.html from disk.

  COLLECT_DIR   the collection directory; default: $TRT_MATRIX_COLLECT
  --date DATE   the night to publish: the DATE in the run directories' names (nightly dates a run by the UTC day
                it started). Default: $TRT_MATRIX_DATE, else the newest date found in COLLECT_DIR, which must be
                today or yesterday (UTC), so that a night when no host copied anything is an error, not a second
                publication of the night before.

Environment:
  TRT_MATRIX_COLLECT      collection directory when COLLECT_DIR is not given
  TRT_MATRIX_DATE         the night to publish when --date is not given
  TRT_MATRIX_HISTORY_DIR  the history store, a directory of run directories kept for good
                          (default: $HOME/trt-matrix/history)
  TRT_MATRIX_SITE         where the report goes (default: $HOME/trt-matrix/site)
  PYTHON                  the Python that has the harness installed (default: python3)

Exit status: 0 published, no regression; 1 published, and some cell regressed since the previous run of its
series (see SITE/trend.html); 3 published, but some input was damaged and left out, or tonight's runs lost
records (cells gone since the previous run; named above and at the top of SITE/trend.html); 2 usage error;
4 no run to publish (none of DATE, or none recent); any other: merge or history failed (its status).

Example crontab line, some hours after the hosts' runs (crontab -e; cron wants % escaped, so none is used):
  0 7 * * * cd $HOME/trt-matrix-src && git pull -q --ff-only && PYTHON=$HOME/trt-matrix-venv/bin/python scripts/nightly-publish.sh /srv/trt-matrix/collect >>$HOME/trt-matrix/nightly-publish.log 2>&1
cron mails what a job prints when MAILTO is set, so the table of changes and a regression's exit status reach you.
EOF
}

die() {
  echo "nightly-publish.sh: error: $1" >&2
  exit "${2:-1}"
}

date_arg=""
positional=()
while [ "$#" -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --date)
      [ "$#" -ge 2 ] || die "--date needs a value, e.g. --date 2026-11-23" 2
      date_arg="$2"; shift ;;
    --date=*) date_arg="${1#--date=}" ;;
    -*) die "unknown option $1 (see --help)" 2 ;;
    *) positional+=("$1") ;;
  esac
  shift
done
[ "${#positional[@]}" -le 1 ] || die "too many arguments: ${positional[*]} (see --help)" 2

collect="${positional[0]:-${TRT_MATRIX_COLLECT:-}}"
[ -n "$collect" ] || die "no collection directory: give COLLECT_DIR or set TRT_MATRIX_COLLECT" 2
night="${date_arg:-${TRT_MATRIX_DATE:-}}"
if [ -n "$night" ]; then
  [[ "$night" =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}$ ]] || die "the date must look like 2026-11-23, got '$night'" 2
fi
history="${TRT_MATRIX_HISTORY_DIR:-$HOME/trt-matrix/history}"
site="${TRT_MATRIX_SITE:-$HOME/trt-matrix/site}"
PYTHON="${PYTHON:-python3}"

absolute() {
  case "$1" in
    /*) printf '%s\n' "$1" ;;
    *) printf '%s\n' "$PWD/$1" ;;
  esac
}
collect="$(absolute "$collect")"
history="$(absolute "$history")"
site="$(absolute "$site")"
[ -d "$collect" ] || die "the collection directory $collect does not exist" 2

# No date given: the newest night in the collection directory, if it is recent (ISO dates sort as strings).
if [ -z "$night" ]; then
  for dir in "$collect"/*/; do
    name="$(basename "$dir")"
    if [[ "$name" =~ ^([0-9]{4}-[0-9]{2}-[0-9]{2})_ ]] && [[ "${BASH_REMATCH[1]}" > "$night" ]]; then
      night="${BASH_REMATCH[1]}"
    fi
  done
  [ -n "$night" ] || die "no run directory in $collect (names look like <date>_<host>_<revision>, copied there by scripts/nightly-host.sh)" 4
  yesterday="$(date -u -d yesterday +%F 2>/dev/null || true)"
  if [ -n "$yesterday" ] && [[ "$night" < "$yesterday" ]]; then
    die "the newest runs in $collect are of $night: no host has copied a run since (pass --date $night to publish that night anyway)" 4
  fi
fi

# Tonight's runs: DATE_<host>_<revision>/ with a run.json. A directory without one is an interrupted copy.
runs=()
for dir in "$collect/${night}_"*/; do
  [ -d "$dir" ] || continue
  dir="${dir%/}"
  if [ -f "$dir/run.json" ]; then
    runs+=("$dir")
  else
    echo "nightly-publish.sh: warning: skipping $dir: it has no run.json (an interrupted copy?)" >&2
  fi
done
if [ "${#runs[@]}" -eq 0 ]; then
  die "no run of $night in $collect (expected directories named ${night}_<host>_<revision> with a run.json, copied there by scripts/nightly-host.sh; did the hosts run, and is the date right?)" 4
fi

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
command -v "$PYTHON" >/dev/null 2>&1 || die "PYTHON=$PYTHON not found; set PYTHON to the interpreter that has the harness installed"
"$PYTHON" -c 'import harness' 2>/dev/null \
  || die "$PYTHON cannot import the harness; install it with: $PYTHON -m pip install -e $repo"

echo "== $(date -u '+%Y-%m-%d %H:%M:%S') UTC: publishing ${#runs[@]} run(s) of $night from $collect"
printf '   %s\n' "${runs[@]##*/}"
mkdir -p "$site" "$history"

merge_status=0
"$PYTHON" -m harness merge "${runs[@]}" --out "$site" --trend trend.html || merge_status=$?
case "$merge_status" in
  0) ;;
  3) echo "nightly-publish.sh: warning: some input lines were damaged and left out of the matrix (named above)" >&2 ;;
  *) die "merge failed with status $merge_status; nothing was published" "$merge_status" ;;
esac

history_status=0
"$PYTHON" -m harness history "$history" --add "${runs[@]}" \
  --out "$site/trend.html" --junit "$site/regressions.xml" | tee "$site/changes.txt" || history_status=$?
case "$history_status" in
  0) ;;
  1)
    echo "nightly-publish.sh: REGRESSION: some cells are worse than in the previous run; see $site/trend.html" >&2
    exit 1 ;;
  3)
    echo "nightly-publish.sh: INCOMPLETE: the runs compared are damaged or lost records (named above); see $site/trend.html" >&2
    merge_status=3 ;;
  *) die "history failed with status $history_status (the matrix in $site/index.html is up to date)" "$history_status" ;;
esac

echo "report: $site/index.html"
echo "trend:  $site/trend.html"
exit "$merge_status"
