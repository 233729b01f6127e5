#!/usr/bin/env bash
# Installs tpuemu's build dependencies (Debian 12 packages, idempotent) and
# configures + builds the project into build/ (RelWithDebInfo, Ninja, -j2).
#
# Usage: tools/setup.sh [--no-build]
#   TPUEMU_BUILD_DIR   build directory (default: build)
#   TPUEMU_BUILD_TYPE  CMake build type (default: RelWithDebInfo)
#   TPUEMU_CMAKE_ARGS  extra arguments for the CMake configure step
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  cmake ninja-build pkg-config g++
  libsystemc-dev verilator
  libboost-dev libboost-program-options-dev
  catch2 libspdlog-dev libfmt-dev nlohmann-json3-dev
  libbenchmark-dev
  clang libclang-rt-14-dev
  gtkwave
  graphviz  # --graph F.svg renders with its dot
  jq  # the CLI test scripts read --json reports with it
  python3-numpy  # the docs' steps make and read .npy files with numpy
  python3-dev pybind11-dev python3-pybind11 python3-pytest  # the Python module (python/) and its tests
  libopenmpi-dev openmpi-bin  # one pod over several processes (mpirun)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq -o DPkg::Lock::Timeout=300
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends \
    -o DPkg::Lock::Timeout=300 "${missing[@]}"
fi

[[ "${1:-}" == "--no-build" ]] && exit 0

build_dir=${TPUEMU_BUILD_DIR:-build}
build_type=${TPUEMU_BUILD_TYPE:-RelWithDebInfo}
# shellcheck disable=SC2086
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="$build_type" ${TPUEMU_CMAKE_ARGS:-} >/dev/null
cmake --build "$build_dir" -j2
