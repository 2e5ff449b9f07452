"""Test-wide setup: without a GPU, kernels run in Triton's interpreter.

TRITON_INTERPRET must be set before triton is first imported (triton decides at
import time whether its own library functions are interpreted), so it is set
here, before any test module imports anything.
"""

import os

import pytest
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

# CI runs a fixed set of random programs (reproducible landings); elsewhere each
# run draws new ones.
from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


def pytest_addoption(parser):
    parser.addoption("--zoo", action="store_true",
                     help="run the whole model zoo (tests/test_zoo.py), not only its fast subset")  # fmt: skip


def pytest_configure(config):
    config.addinivalue_line("markers", "zoo: a zoo model outside the fast subset (run with --zoo)")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--zoo"):
        return
    skip = pytest.mark.skip(reason="the whole zoo runs with --zoo")
    for item in items:
        if "zoo" in item.keywords:
            item.add_marker(skip)
