#!/usr/bin/env bash
# The whole test suite: installs dependencies, builds and runs every CTest test
# in a RelWithDebInfo build (build/), then again in an ASan+UBSan build
# (build-asan/), then replays the fuzzers' saved crashes and fuzzes the
# assembler, the image decoder, the chip file and .npy readers and the option
# parser for a bounded time (fuzz/run.sh).
# Slow cases carry the CTest label `slow` and run only with TPUEMU_SLOW=1.
# The dump corpus (../shared/llo) runs as the label llo-corpus.
#   TPUEMU_SKIP_ASAN=1 / TPUEMU_SKIP_FUZZ=1   skip those stages
#   TPUEMU_FUZZ_RUNS                           inputs per target, from a fixed seed (default 3000;
#                                              empty = fuzz for TPUEMU_FUZZ_SECONDS with a random seed)
#   TPUEMU_FUZZ_SECONDS                        time cap per target (default 60)
set -euo pipefail
cd "$(dirname "$0")/.."

# Cases of the dump corpus that cannot run as given carry the label `unsupported`.
label_args=(-LE "slow|unsupported")
[[ "${TPUEMU_SLOW:-0}" == 1 ]] && label_args=(-LE unsupported)
# The ASan stage leaves out the label `acceptance` too: those tests compare the
# model's figures (cycles, times, ratios) with the book's and published ones,
# and every build gives the same figures (the determinism tests check it);
# the code they run runs under ASan in the cli, mpi and Catch2 tests with
# data. They cost ~110 s of the ASan stage's ~700 s of test time (session 16).
# It leaves out the label `asan-skip` too: cases whose code runs under the
# sanitizers in other cases (tests/CMakeLists.txt says which, where it sets it).
asan_label_args=(-LE "slow|unsupported|acceptance|asan-skip")
[[ "${TPUEMU_SLOW:-0}" == 1 ]] && asan_label_args=(-LE unsupported)

# The project's own builds treat warnings as errors (TPUEMU_WERROR; off for users' builds).
# Both builds are unity builds with line tables only (CMakeLists.txt: TPUEMU_LINE_TABLES_ONLY):
# they are built once, from scratch, in CI.
fast_build="-DCMAKE_UNITY_BUILD=ON -DTPUEMU_LINE_TABLES_ONLY=ON"
TPUEMU_CMAKE_ARGS="-DTPUEMU_WERROR=ON $fast_build" tools/setup.sh
ctest --test-dir build -j2 --output-on-failure --timeout 300 "${label_args[@]}"

if [[ "${TPUEMU_SKIP_ASAN:-0}" != 1 ]]; then
  # The sanitizer build verilates only the 8x8 RTL array (the 16x16 one costs ~6 min of Debug+ASan compile)
  # and builds no benchmark programs (no test runs them).
  # Debug with TPUEMU_SANITIZE compiles at -O1 (CMakeLists.txt).
  TPUEMU_BUILD_DIR=build-asan TPUEMU_BUILD_TYPE=Debug TPUEMU_CMAKE_ARGS="-DTPUEMU_SANITIZE=ON -DTPUEMU_MXU_RTL_SIZES=8 -DTPUEMU_BENCH=OFF -DTPUEMU_WERROR=ON $fast_build" tools/setup.sh
  # detect_stack_use_after_return stays 0: it crashes SystemC's QuickThreads coroutines.
  ASAN_OPTIONS=detect_stack_use_after_return=0:abort_on_error=0:halt_on_error=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan -j2 --output-on-failure --timeout 600 "${asan_label_args[@]}"
fi

if [[ "${TPUEMU_SKIP_FUZZ:-0}" != 1 ]]; then
  TPUEMU_FUZZ_RUNS=${TPUEMU_FUZZ_RUNS-3000} TPUEMU_FUZZ_SECONDS=${TPUEMU_FUZZ_SECONDS:-60} fuzz/run.sh
fi
