#!/usr/bin/env bash
# Where one kernel of a GPU test bundle loses its time, on the GPU machine:
#
#   bench/gpu/profile.sh BUNDLE_DIR CASE_FILTER KERNEL_REGEX [LAUNCHES]
#
# Nsight Compute's throughput (SpeedOfLight), occupancy, warp-stall and
# memory sections for the first LAUNCHES (default 1) launches of the kernels
# matching KERNEL_REGEX in the bundle's cases matching CASE_FILTER, then
# ptxas' register and spill counts for those kernels in the bundle's PTX.
set -euo pipefail
b=$1 filter=$2 kernel=$3 n=${4:-1}
ncu --clock-control none --section SpeedOfLight --section Occupancy --section WarpStateStats \
    --section MemoryWorkloadAnalysis --section LaunchStats -k "regex:$kernel" -c "$n" \
    "$b/gpu_runner" "$b" --filter "$filter" --iters 0
ptxas=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
for ptx in "$b"/*/*.ptx; do
    echo "ptxas -v $ptx:"
    "$ptxas" -arch=sm_90 -v "$ptx" -o /dev/null 2>&1 |
        grep -E -A3 "Compiling entry function '[^']*($kernel)" | grep -E "Compiling|registers|spill" || true
done
