"""Interval speed over 1,000,000 included scores: Wilson, Clopper-Pearson, Student-t and a 2,000-resample bootstrap.

    python benchmarks/bench_intervals.py [--n 1000000] [--resamples 2000]

Each method runs once warm-up, then is timed best of three; the data are seeded so every run computes the same
intervals. Figures go into BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from evalglass.core.stats import Method, confidence_interval


def best_of(repeats: int, work: Callable[[], object]) -> float:
    work()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--resamples", type=int, default=2000)
    args = parser.parse_args()
    rng = np.random.default_rng(20261130)
    binary = (rng.random(args.n) < 0.83).astype(np.float64)
    continuous = rng.beta(2.0, 5.0, args.n)
    cases: list[tuple[str, np.ndarray, Method, int]] = [
        ("wilson (binary)", binary, Method.WILSON, 3),
        ("clopper_pearson (binary)", binary, Method.CLOPPER_PEARSON, 3),
        ("student_t (continuous)", continuous, Method.STUDENT_T, 3),
        ("bootstrap_bca (binary)", binary, Method.BOOTSTRAP_BCA, 1),
        ("bootstrap_bca (continuous)", continuous, Method.BOOTSTRAP_BCA, 1),
    ]
    print(f"n = {args.n:,} values, bootstrap resamples = {args.resamples}")
    for label, values, method, repeats in cases:
        seconds = best_of(
            repeats,
            lambda values=values, method=method: confidence_interval(
                values, method=method, seed=0, resamples=args.resamples
            ),
        )
        print(f"  {label:28s} {seconds:8.3f} s")


if __name__ == "__main__":
    main()
