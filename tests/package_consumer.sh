#!/usr/bin/env bash
# Installs the build into a fresh prefix, builds tests/package_consumer against
# it with find_package(tpuemu), runs it (a bit-exact add on one v5e), and runs
# the installed binary.
# Usage: package_consumer.sh BUILD_DIR WORKDIR [CXX_FLAGS]   (the sanitizer flags of a sanitized build)
set -euo pipefail
build=$1 work=$2 flags=${3:-}
export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1
src=$(cd "$(dirname "$0")/package_consumer" && pwd)
rm -rf "$work" && mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
test -f "$work/prefix/lib/cmake/tpuemu/tpuemuConfigVersion.cmake"
test -f "$work/prefix/share/tpuemu/chips/v5e.json"
cmake -S "$src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" > "$work/configure.log"
cmake --build "$work/build" > "$work/build.log"
"$work/build/consumer" | tee "$work/consumer.out"
grep -q "0 wrong, second run identical" "$work/consumer.out"
"$work/prefix/bin/tpuemu" chips | grep -q v5e
# The Python package, where the build has one.
site=$(echo "$work"/prefix/lib/python3*/site-packages)
if [[ -d "$site/tpuemu" ]]; then
  PYTHONPATH="$site" /usr/bin/python3 -c "import tpuemu; assert \"v5e\" in tpuemu.chips()"
fi
echo PASS
