"""Backends: turn generated Triton kernel source into code for a real GPU."""
