# The sanitizer and fuzzing builds of scripts/test.sh (scripts/lib/sanitize.sh): clang with its
# runtimes for AddressSanitizer, UndefinedBehaviorSanitizer, ThreadSanitizer and libFuzzer
# (libclang-rt-14-dev), clang's OpenMP runtime (libomp-14-dev: taas::nn uses OpenMP, and gcc's
# omp.h does not compile with clang), and llvm-symbolizer (package llvm) so a report names files
# and lines.
# shellcheck shell=bash
need_debian_packages clang libclang-rt-14-dev libomp-14-dev llvm
