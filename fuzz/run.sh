#!/usr/bin/env bash
# Builds the libFuzzer targets with clang into build-fuzz/, makes a seed corpus
# (the LLO dumps of ../shared/llo, programs/ and tests/data/, and their .tpub
# images; the chip presets, tests/data's chip files and the presets' resolved
# dumps; the small .npy files of tests/data/ and ../shared/llo; a few command
# lines), replays every
# saved crash in fuzz/regressions/<target>/, then fuzzes each target for a
# bounded time. Exits non-zero if any input crashes, trips a
# sanitizer, times out or exhausts memory.
#
# Usage: fuzz/run.sh
#   TPUEMU_FUZZ_SECONDS    fuzzing time per target (default 60)
#   TPUEMU_FUZZ_RUNS       if set: a reproducible run instead, this many inputs per
#                          target from the fixed seed 1 (still capped by the time);
#                          CI uses it so that its result does not depend on luck
#   TPUEMU_FUZZ_BUILD_DIR  build directory (default build-fuzz)
# Needs clang++ and libFuzzer (Debian: clang, libclang-rt-14-dev).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
build=${TPUEMU_FUZZ_BUILD_DIR:-build-fuzz}
seconds=${TPUEMU_FUZZ_SECONDS:-60}
targets=(fuzz_assembler fuzz_image fuzz_chip_config fuzz_npy fuzz_options)

if ! command -v clang++ >/dev/null; then
  echo "fuzz: clang++ not found; install clang and libclang-rt-14-dev" >&2
  exit 2
fi

# 1. Build (BUILD_TESTING=OFF: the fuzz targets need only tpuemu_isa and tpuemu_common; a unity
#    build with line tables only, as tools/test.sh's: 87 s of CPU instead of 111 s).
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
  -DTPUEMU_FUZZ=ON -DBUILD_TESTING=OFF -DTPUEMU_WERROR=ON -DCMAKE_UNITY_BUILD=ON -DTPUEMU_LINE_TABLES_ONLY=ON >/dev/null
cmake --build "$build" -j2 --target "${targets[@]}" fuzz_make_seeds

# 2. Seeds: LLO text for fuzz_assembler, images of it for fuzz_image.
seeds=$build/seeds
rm -rf "$seeds"
mkdir -p "$seeds/fuzz_assembler" "$seeds/fuzz_image"
llo_files=()
corpus=$repo/../shared/llo
if [[ -d $corpus ]]; then
  mapfile -t -O "${#llo_files[@]}" llo_files < <(find "$corpus" -name '*-final_bundles.txt' | sort)
else
  echo "fuzz: no LLO corpus at $corpus; seeding from programs/ and tests/data/ only" >&2
fi
for dir in programs tests/data; do
  if [[ -d $dir ]]; then
    mapfile -t -O "${#llo_files[@]}" llo_files < <(find "$dir" -name '*.llo' | sort)
  fi
done
for i in "${!llo_files[@]}"; do
  cp "${llo_files[$i]}" "$seeds/fuzz_assembler/$(printf '%03d' "$i")-$(basename "${llo_files[$i]}")"
done
"$build/bin/fuzz_make_seeds" "$seeds/fuzz_image" "$seeds/fuzz_assembler.dict" "${llo_files[@]}"

# Chip files for fuzz_chip_config; .npy files up to 64 KiB for fuzz_npy.
"$build/bin/fuzz_make_seeds" --chip "$seeds/fuzz_chip_config" "$seeds/fuzz_chip_config.dict"
cp configs/chips/*.json tests/data/*.json "$seeds/fuzz_chip_config/"
mkdir -p "$seeds/fuzz_npy"
npy_dirs=(tests/data)
[[ -d $corpus ]] && npy_dirs+=("$corpus")
mapfile -t npy_files < <(find "${npy_dirs[@]}" -name '*.npy' -size -65k | sort)
for i in "${!npy_files[@]}"; do
  cp "${npy_files[$i]}" "$seeds/fuzz_npy/$(printf '%03d' "$i")-$(basename "${npy_files[$i]}")"
done

# Command lines for fuzz_options: arguments separated by NUL bytes.
mkdir -p "$seeds/fuzz_options"
seed_line() { local name=$1; shift; printf '%s\0' "$@" > "$seeds/fuzz_options/$name"; }
seed_line basic 8x16 --chip v5e --n 4 --seed 7 --rtol 1e-5
seed_line wrap 4x4x4 --chip v5p --wrap x,z --max-cycles 1e6
seed_line nowrap 16 --no-wrap --force --set hbm.bandwidth=1.0e12 --in 0=a.npy --in 1=b.npy
seed_line bad --n -1 --seed 4294967296 --rtol nan --wrap x,,y --max-cycles 0

# 3. Regressions, then fuzzing; every target runs even after a failure.
failed=()
for target in "${targets[@]}"; do
  binary=$build/bin/$target
  regressions=("fuzz/regressions/$target"/*)
  if [[ -e ${regressions[0]} ]]; then
    echo "fuzz: replaying ${#regressions[@]} saved input(s) through $target"
    replay_failed=0
    for input in "${regressions[@]}"; do
      if ! "$binary" -rss_limit_mb=2048 -timeout=10 "$input" >"$build/replay.log" 2>&1; then
        cat "$build/replay.log" >&2
        failed+=("$target on $input")
        replay_failed=1
      fi
    done
    ((replay_failed)) && continue
  fi
  corpus_dir=$build/corpus/$target
  if [[ -n "${TPUEMU_FUZZ_RUNS:-}" ]]; then  # reproducible: start from the seeds only
    corpus_dir=$build/corpus-reproducible/$target
    rm -rf "$corpus_dir"
  fi
  artifacts=$build/artifacts/$target
  mkdir -p "$corpus_dir" "$artifacts"
  extra=()
  if [[ -f $seeds/$target.dict ]]; then extra+=(-dict="$seeds/$target.dict"); fi
  echo "fuzz: $target for ${seconds}s"
  if [[ -n "${TPUEMU_FUZZ_RUNS:-}" ]]; then extra+=(-seed=1 -runs="$TPUEMU_FUZZ_RUNS"); fi
  if ! "$binary" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "${extra[@]}" "$corpus_dir" "$seeds/$target"; then
    failed+=("$target (see $artifacts/)")
  fi
done

if ((${#failed[@]})); then
  printf 'fuzz: FAILED: %s\n' "${failed[@]}" >&2
  echo "fuzz: save each crashing input under fuzz/regressions/<target>/ once the bug is understood" >&2
  exit 1
fi
echo "fuzz: no crashes"
