"""Printers from tiled IR to code: `triton/` prints Triton kernels and their host."""
