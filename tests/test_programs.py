"""Every program under tests/programs: compiled, run (interpreter), checked."""

from pathlib import Path

import pytest

from tilefuse.tools.run import main

PROGRAMS = sorted((Path(__file__).parent / "programs").glob("*.mlir"))


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_program_matches_reference(path, capsys):
    assert main([str(path), "--check"]) == 0
    assert "MISMATCH" not in capsys.readouterr().out
