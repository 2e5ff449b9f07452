"""Run the lit + filecheck golden tests; pytest's closing line is what CI reads."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

FILECHECK_DIR = Path(__file__).parent / "filecheck"


def test_lit_golden_files():
    lit = shutil.which("lit")
    if lit is None:
        pytest.fail("lit is not installed: pip install -e '.[test]'")
    if shutil.which("filecheck") is None:
        pytest.fail("filecheck is not installed: pip install -e '.[test]'")
    result = subprocess.run(
        [sys.executable, lit, "-v", str(FILECHECK_DIR)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-20000:] + result.stderr[-5000:]
    assert "Passed" in result.stdout
