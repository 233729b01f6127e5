#!/usr/bin/python3
"""The anchor of bench/README.md: numpy's float32 matmul (OpenBLAS sgemm on
Debian with libopenblas0-pthread) of two N x N matrices, best of 5, host
wall time. Usage: bench/openblas_sgemm.py [N]   (default 2048)"""
import os
import sys
import time

import numpy as np

n = int(sys.argv[1]) if len(sys.argv) > 1 else 2048
rng = np.random.default_rng(1)
a = rng.random((n, n), dtype=np.float32)
b = rng.random((n, n), dtype=np.float32)
a @ b  # warm-up: threads started, pages touched
times = []
for _ in range(5):
    start = time.perf_counter()
    a @ b
    times.append(time.perf_counter() - start)
# The BLAS numpy actually loaded (Debian's alternatives pick it at run time).
with open("/proc/self/maps") as maps:
    libs = sorted({os.path.realpath(line.split()[-1]) for line in maps if "blas" in line.split()[-1]})
print(f"sgemm {n}^3 float32: best {min(times):.4f} s of 5 "
      f"({', '.join(f'{t:.4f}' for t in times)}); {2 * n**3 / min(times) / 1e9:.1f} GFLOP/s, "
      f"{n**3 / min(times) / 1e9:.1f} GMAC/s; {', '.join(libs)}; "
      f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}")
