"""Test-wide setup: without a GPU, kernels run in Triton's interpreter.

TRITON_INTERPRET must be set before triton is first imported (triton decides at
import time whether its own library functions are interpreted), so it is set
here, before any test module imports anything.
"""

import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

# CI runs a fixed set of random programs (reproducible landings); elsewhere each
# run draws new ones.
from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")
