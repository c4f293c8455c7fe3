#!/usr/bin/env bash
# The sanitizer and fuzzing runs of scripts/test.sh. Each is one ctest entry of the main build
# (tests/CMakeLists.txt) that runs ctest in its own clang tree beside the main one (ccache'd like
# it), so its summary prints on failure and its exit status is the entry's; each builds its tree
# first (a no-op when the tree's own entry, RUN-build, built it already):
#   asan  MAIN_BUILD   every `unit` test that runs an executable of the tree (not the script
#                      tests) under AddressSanitizer + UndefinedBehaviorSanitizer
#   fuzz  MAIN_BUILD   every fuzz target for TAAS_FUZZ_SECONDS (default 30), same tree as asan
#   tsan  MAIN_BUILD   the parameter-server (but its gRPC test), collective (all-reduce ring,
#                      in-process groups) and kube (work queue, informer) tests under
#                      ThreadSanitizer
#   asan-build, tsan-build MAIN_BUILD   only the tree's build (for asan: what asan and fuzz run)
# The trees are MAIN_BUILD-asan and MAIN_BUILD-tsan. No report is suppressed: the selection below
# leaves out what cannot be checked honestly (see tsan).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
source "$TAAS_ROOT/scripts/lib/build.sh"

usage() { die "usage: sanitize.sh asan|fuzz|tsan|asan-build|tsan-build MAIN_BUILD"; }
[ $# -eq 2 ] || usage
run=$1 main_build=$2

need_command clang++ "run scripts/setup.sh (scripts/setup.d/15-sanitizers.sh installs clang)"

# Line tables are enough for file:line in reports and keep the trees small; assertions stay on
# (no NDEBUG). Warnings are the gcc build's job: clang's differ, so they are not errors here.
# No CUDA: the sanitizers instrument host code, and the main build compiles the CUDA sources.
clang_args=(-DCMAKE_CXX_COMPILER=clang++ -DTAAS_WERROR=OFF -DTAAS_WITH_CUDA=OFF
  -DCMAKE_BUILD_TYPE=RelWithDebInfo
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only")

# A report stops the test with a stack (the code is built with -fno-sanitize-recover); leaks are
# reported at exit.
export ASAN_OPTIONS="detect_leaks=1:check_initialization_order=1:strict_init_order=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1"

# Each run's build and its ctest are phases (scripts/lib/common.sh): sanitize-TREE/build and
# sanitize-RUN/ctest, under ctest/ when scripts/test.sh runs them.
tree_phase="sanitize-${run%-build}"
[ "$run" = fuzz ] && tree_phase=sanitize-asan

# The builds run at the lowest CPU priority: tests/CMakeLists.txt runs them beside the control-plane
# and browser suites, whose deadlines come first; alone, they get every core all the same.
build_targets() {
  local tree=$1
  shift
  log "building $* in $tree"
  nice -n 19 cmake --build "$tree" --target "$@" -- -j"$(nproc)"
}

# The fuzz run at the lowest CPU priority too: its entry is not serial (tests/CMakeLists.txt).
run_ctest() {
  local tree=$1
  shift
  local priority=()
  [ "$run" = fuzz ] && priority=(nice -n 19)
  phase_start "sanitize-$run/ctest"
  "${priority[@]}" ctest --test-dir "$tree" --output-on-failure --no-tests=error -j"$(nproc)" "$@"
  phase_end "sanitize-$run/ctest"
}

asan_args=("${clang_args[@]}" "-DTAAS_SANITIZE=address;undefined" -DTAAS_FUZZ=ON
  "-DTAAS_FUZZ_SECONDS=${TAAS_FUZZ_SECONDS:-30}")

# The ASan+UBSan tree: the unit tests' executables and the fuzzers, one build for both runs.
asan_build() {
  phase_start "$tree_phase/build"
  TAAS_BUILD="$main_build-asan" taas_configure "${asan_args[@]}"
  build_targets "$main_build-asan" taas_unit_tests taas_fuzzers
  phase_end "$tree_phase/build"
}

# The PS tests, the collective tests (the ring's operation thread, in-process replica groups;
# the ring test's forked ranks run under TSan too) and the kube tests (work queue, informer,
# client, leader election); test names are their targets' names (taas_add_test). Not
# trainer_ps_rpc_test: Debian's gRPC is not built with TSan, so every handoff between its threads
# (completion queue, pollers, inlined grpcpp code) reads as a race; tried with library
# suppressions, each run showed a new one inside gRPC. It runs under ASan+UBSan with the other
# unit tests.
tsan_select=(-R '^(trainer_ps_.*_test|trainer_collective_.*_test|taas_kube_test)$' -E '^trainer_ps_rpc_test$')
tsan_build() {
  phase_start "$tree_phase/build"
  TAAS_BUILD="$main_build-tsan" taas_configure "${clang_args[@]}" -DTAAS_SANITIZE=thread
  local targets
  mapfile -t targets < <(ctest --test-dir "$main_build-tsan" -N "${tsan_select[@]}" |
    sed -n 's/^ *Test *#[0-9]*: //p')
  [ ${#targets[@]} -gt 0 ] || die "no tests match ${tsan_select[*]} in $main_build-tsan"
  build_targets "$main_build-tsan" "${targets[@]}"
  phase_end "$tree_phase/build"
}

case $run in
asan-build) asan_build ;;
tsan-build) tsan_build ;;
asan)
  asan_build
  # Only the unit tests that run this tree's executables: the script tests (python3, node, bash:
  # the taas-cluster units, the lints) run no sanitized code, and the main build runs them.
  mapfile -t asan_tests < <(python3 "$TAAS_ROOT/scripts/lib/tree_tests.py" select \
    "$main_build-asan" unit)
  [ ${#asan_tests[@]} -gt 0 ] || die "no unit test of $main_build-asan runs its executables"
  asan_select=$(IFS='|' && echo "${asan_tests[*]}")
  run_ctest "$main_build-asan" -L unit -R "^($asan_select)\$"
  ;;
fuzz)
  asan_build
  run_ctest "$main_build-asan" -L fuzz
  ;;
tsan)
  tsan_build
  run_ctest "$main_build-tsan" "${tsan_select[@]}"
  ;;
*) usage ;;
esac
