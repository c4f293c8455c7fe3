# Shared helpers for the setup fragments and the two top-level commands. Source, don't run.
# shellcheck shell=bash

TAAS_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TAAS_CACHE="${TAAS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/taas}"
export TAAS_ROOT TAAS_CACHE
# The CUDA toolkit pieces scripts/setup.d/45-cuda.sh installs from PyPI wheels (nvcc's release
# names the folder); scripts/lib/build.sh configures the CUDA build when it is there.
TAAS_CUDA_VERSION=13.5.37
TAAS_CUDA_DIR="$TAAS_CACHE/cuda-$TAAS_CUDA_VERSION"
# LibTorch (scripts/setup.d/46-libtorch.sh): the version of the GPU machines' PyTorch, whose
# libraries a GPU bundle loads there; scripts/lib/build.sh configures the torch engine when the
# folder is complete.
TAAS_TORCH_VERSION=2.11.0
TAAS_TORCH_DIR="$TAAS_CACHE/libtorch-$TAAS_TORCH_VERSION"

# The benchmarks' Python peers live in one venv, installed on first use by the bench scripts,
# never by the test setup: TensorFlow (tensorflow-cpu) and PyTorch (torch==TAAS_TORCH_VERSION).
TAAS_TF_VERSION=2.21.0
TAAS_BENCH_VENV="$TAAS_CACHE/bench-venv"

log() { printf '[taas] %s\n' "$*" >&2; }
die() { printf '[taas] error: %s\n' "$*" >&2; exit 1; }

# bench_peer_install MODULE REQUIREMENT [NOTE]: pip-installs REQUIREMENT into $TAAS_BENCH_VENV
# (created if missing) unless its Python already imports MODULE.
bench_peer_install() {
  "$TAAS_BENCH_VENV/bin/python" -c "import $1" >/dev/null 2>&1 && return 0
  log "installing $2 into $TAAS_BENCH_VENV (once${3:+: $3})"
  python3 -m venv "$TAAS_BENCH_VENV"
  "$TAAS_BENCH_VENV/bin/pip" install -q --disable-pip-version-check "$2"
}

# Phase markers: where a run's time goes, read back into a table by scripts/test-timings
# (docs/development.md, "Where the time goes"). Each phase prints two lines on stderr:
#   [taas] phase NAME started
#   [taas] phase NAME: SECONDS s
# NAME is a path (setup/30-kubernetes is a part of setup). TAAS_PHASE_PREFIX goes before every
# name, and TAAS_PHASE_LOG, when set, also gets each end line: scripts/test.sh sets both for ctest,
# whose entries' output is shown only when they fail, and prints that file after it.
declare -gA taas_phase_started=()
phase_start() {
  taas_phase_started[$1]=$SECONDS
  log "phase ${TAAS_PHASE_PREFIX:-}$1 started"
}
phase_end() {
  local start=${taas_phase_started[$1]:?"phase_end $1 without phase_start $1"}
  unset "taas_phase_started[$1]"
  local line="[taas] phase ${TAAS_PHASE_PREFIX:-}$1: $((SECONDS - start)) s"
  printf '%s\n' "$line" >&2
  if [ -n "${TAAS_PHASE_LOG:-}" ]; then printf '%s\n' "$line" >>"$TAAS_PHASE_LOG"; fi
}

# Installs the Debian packages that are not installed yet; installs nothing when all are there,
# so running setup twice changes nothing.
need_debian_packages() {
  local missing=() pkg
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' ||
      missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null ||
      die "missing Debian packages; install them as root: apt-get install ${missing[*]}"
    local SUDO=sudo
  fi
  log "installing Debian packages: ${missing[*]}"
  ${SUDO:-} apt-get update -qq >/dev/null ||
    die "apt-get update failed; check the Debian mirror, then rerun"
  DEBIAN_FRONTEND=noninteractive ${SUDO:-} apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null ||
    die "apt-get install failed for: ${missing[*]}"
}

# Fails with one line naming what to install when a command is missing.
need_command() {
  command -v "$1" >/dev/null || die "'$1' is not installed: $2"
}
