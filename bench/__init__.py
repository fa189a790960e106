"""Benchmarks for keda-ray-scaler: ``python -m bench [NAME]`` (``make bench``).

Every ``bench/*_bench.py`` module exposes ``main() -> None`` and prints its figures, each
with its target and PASS/FAIL. Helpers shared by the benchmarks live beside them:
``instances`` (seeded random and scaled instances), ``milp`` (the exact optimum with
``scipy.optimize.milp``) and ``ray_compare`` (Ray's own autoscaler v2 scheduler on the same
instance).
"""
