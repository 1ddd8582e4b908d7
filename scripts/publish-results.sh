#!/bin/sh
# The one command that writes the generated tables of docs/resilience.md (chaos, end-to-end, simulation), the NAT
# lab's table in docs/networks.md and docs/screenshots, from one complete run of scripts/test.sh under
# .build/results/<run-id>/. It refuses a partial run, and a failed one unless --allow-failed.
# Usage: scripts/publish-results.sh [--allow-failed] [RUN_DIR]
set -eu
cd "$(dirname "$0")/.."
exec python3 scripts/publish_results.py "$@"
