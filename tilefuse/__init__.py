"""tilefuse: a tile-and-fuse compiler from MLIR linalg tensor programs to fused Triton
kernels, built on xDSL. `tilefuse.runtime.compile` is the Python entry point;
`tilefuse-opt` and `tilefuse-run` are the tools."""
