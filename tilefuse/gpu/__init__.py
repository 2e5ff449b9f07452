"""GPU toolchain checks without a GPU: AOT compiles for sm_90 and resource checks."""
