#!/usr/bin/env bash
# The README's first command, exactly as a new user runs it: `make demo` in a fresh clone of this
# checkout, with its own virtualenv, twice in a row. Fails when make fails or anything prints a traceback.
set -euo pipefail
checkout="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
git clone --quiet "$checkout" "$work/dra-migrate"
cd "$work/dra-migrate"
for attempt in 1 2; do
    echo "== make demo (fresh clone, run $attempt)"
    make demo 2>&1 | tee "$work/demo.log"
    if grep -q Traceback "$work/demo.log"; then
        echo "make demo printed a traceback" >&2
        exit 1
    fi
done
