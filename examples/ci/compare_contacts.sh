#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# docs/comparing.md's CI example: the demo engine built twice, once with its physics/contacts made
# slower on purpose (SIMPROF_DEMO_SLOW_CONTACTS_PERCENT), each run by speed_benchmark --json, the
# two records compared by `simprof compare`. Exits with compare's status: 1 when the slowdown is
# found (as it should be), 0 when it is not, 2 when the records cannot be compared.
#   examples/ci/compare_contacts.sh [PERCENT] [OUT_DIR]     (defaults: 5, ./compare-demo)
set -euo pipefail
percent=${1:-5}
out=${2:-compare-demo}
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
for side in base slow; do
  slow=0
  [ "$side" = slow ] && slow=$percent
  cmake -S "$root" -B "$out/build-$side" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSIMPROF_CUDA=OFF \
    -DSIMPROF_BUILD_TESTS=OFF -DSIMPROF_BUILD_BENCH=OFF -DSIMPROF_C_API=OFF \
    -DSIMPROF_DEMO_SLOW_CONTACTS_PERCENT="$slow" >/dev/null
  cmake --build "$out/build-$side" --target speed_benchmark simprof >/dev/null
  "$out/build-$side/examples/speed_benchmark" --backend cpu --n-envs 1024 --steps 3000 --quiet \
    --json "$out/$side.json" >/dev/null
done
"$out/build-base/python/simprof/simprof" compare --svg "$out/compare.svg" "$out/base.json" \
  "$out/slow.json"
