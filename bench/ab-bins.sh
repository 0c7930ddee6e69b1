#!/usr/bin/env bash
# Times bench_ops binaries (builds of two commits, say) against each other, each alone,
# alternating: ROUNDS times, every binary in turn runs `BENCH_ONLY=OP` (its own median of 15
# after 2 warm-ups) on THREADS rayon threads; prints each binary's median over the rounds and
# the rounds' figures (GFLOP/s or GB/s, whatever bench_ops prints).
#
#   bench/ab-bins.sh ROUNDS OP THREADS BIN [BIN...]
set -eu
R=$1; OP=$2; TH=$3; shift 3
for _ in $(seq "$R"); do
  for b in "$@"; do
    RAYON_NUM_THREADS=$TH BENCH_ONLY=$OP "$b" | sed "s|^|$(basename "$b") |"
  done
done | python3 -c '
import sys, collections, statistics
v = collections.defaultdict(list)
for l in sys.stdin:
    f = l.split()
    v[" ".join(f[:3])].append(float(f[5]))
for k in sorted(v):
    print(f"{k:40} median {statistics.median(v[k]):7.1f}  {v[k]}")
'
