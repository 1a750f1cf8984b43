#!/usr/bin/env bash
# As root, everything the tests need from the system, not from pip: Chromium and its driver (the report's browser
# tests), then a Docker engine and a local base image (container targets; see containers/provision-docker.sh).
# Idempotent. Options are passed to containers/provision-docker.sh (e.g. --no-image, --stop).
set -euo pipefail
if [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
    sed -n '2,4p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
fi
if [ "${1:-}" != "--stop" ]; then
    if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
    fi
fi
exec bash "$(dirname "$0")/../containers/provision-docker.sh" "$@"
