"""The Triton printer: tiled `tilefuse.group`s to `@triton.jit` kernels and a host."""
