#!/usr/bin/env bash
# Sets up, builds and runs every test (unit, multi-process, control plane, browser) through ctest.
# Extra arguments go to ctest, e.g. `scripts/test.sh -R api` or `-L unit`.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
source "$TAAS_ROOT/scripts/lib/build.sh"

"$TAAS_ROOT/scripts/setup.sh"
taas_build
ctest --test-dir "$TAAS_BUILD" --output-on-failure -j"$(nproc)" "$@"
