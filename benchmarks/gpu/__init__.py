"""The parts of the GPU session (``benchmarks/gpu_session.py``): tiny models of every family,
the CUDA-against-CPU correctness checks, training throughput, Paper I at paper scale, the
session's clock and the wheels the GPU machine needs. Importing this package imports no torch."""
