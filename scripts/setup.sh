#!/usr/bin/env bash
# Installs everything taas needs to build, run and test. Idempotent: a second run installs nothing.
# Each component owns one fragment under scripts/setup.d/, run in name order.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

for fragment in "$TAAS_ROOT"/scripts/setup.d/*.sh; do
  # shellcheck source=/dev/null
  source "$fragment"
done
log "setup complete"
