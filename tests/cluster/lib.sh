# Shared by the test control plane's tests (sourced): where taas-cluster is, and how a test
# reports its steps and fails.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
CLUSTER="$ROOT/scripts/cluster/taas-cluster"

fail() {
  printf 'FAIL: %s\n' "$*" >&2
  exit 1
}
step() { printf '== %s\n' "$*" >&2; }
