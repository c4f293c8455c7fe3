#!/usr/bin/env bash
# Sets up, builds and runs every test (unit, multi-process, control plane, browser) through ctest.
# Extra arguments go to ctest, e.g. `scripts/test.sh -R api` or `-L unit`.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
source "$TAAS_ROOT/scripts/lib/build.sh"

# Phase markers (scripts/lib/common.sh) for scripts/test-timings: setup's own, `build` and
# `ctest`; the sanitizer entries' (ctest/sanitize-*) are printed after ctest, which shows an
# entry's output only when it fails.
"$TAAS_ROOT/scripts/setup.sh"
phase_start build
taas_build
phase_end build
phase_log="$TAAS_BUILD/test-phases.log"
: >"$phase_log"
phase_start ctest
status=0
TAAS_PHASE_PREFIX=ctest/ TAAS_PHASE_LOG="$phase_log" \
  ctest --test-dir "$TAAS_BUILD" --output-on-failure -j"$(nproc)" "$@" || status=$?
cat "$phase_log" >&2
phase_end ctest
exit "$status"
