"""One pipeline: every tool compiles through `pipeline.STAGES`, so they agree.

`tilefuse-run` / `tilefuse.runtime.compile`, `tilefuse-opt --emit triton`, `--report`
and the autotuner each once had their own pass list, and two of them failed on a
program with a helper function that the others compiled.
"""

import re
from pathlib import Path

import numpy as np
import pytest

from tests.device import on_device
from tilefuse.frontend.program import load_program, random_inputs
from tilefuse.pipeline import (
    DEFAULT_PIPELINE,
    STAGE_NAMES,
    STAGES,
    default_pipeline,
    run_pipeline,
)
from tilefuse.report import analyze_program
from tilefuse.runtime import autotune as at
from tilefuse.runtime import compile
from tilefuse.tools import opt

ROOT = Path(__file__).parent.parent
SAMPLES = sorted((ROOT / "samples").glob("*.mlir"))
HELPER_CALL = ROOT / "tests" / "programs" / "helper_call.mlir"


def _kernels_only(source: str) -> str:
    """A generated module without its first line (which names the source)."""
    return source.split("\n", 1)[1]


def test_readme_draws_the_stages():
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"## The pipeline\n\n```\n(.*?)```", readme, re.DOTALL)
    assert block is not None, "README.md has no pipeline block under '## The pipeline'"
    steps = [s.strip().split("{")[0] for s in block.group(1).split("->")]
    assert tuple(s for s in steps if not s.startswith(("(", "-"))) == STAGE_NAMES


def test_the_pipeline_string_is_derived_from_the_stages():
    assert default_pipeline("h200") == DEFAULT_PIPELINE
    names = [s.split("{")[0] for s in DEFAULT_PIPELINE.split(",")]
    assert tuple(names) == STAGE_NAMES
    targeted = [s.name for s in STAGES if s.targeted]
    assert all(f"{n}{{target=a100}}" in default_pipeline("a100") for n in targeted)


def test_cut_pipelines_compose_to_the_whole():
    whole = run_pipeline(load_program(SAMPLES[0]))
    front = run_pipeline(load_program(SAMPLES[0]), until="fusion-groups")
    back = run_pipeline(front, start="tile-and-fuse")
    assert str(back) == str(whole)


def test_unknown_stage_is_a_clear_error():
    with pytest.raises(ValueError, match="no stage named 'tile-fuse'; the stages are"):
        run_pipeline(load_program(SAMPLES[0]), until="tile-fuse")


@pytest.mark.parametrize("path", [*SAMPLES, HELPER_CALL], ids=lambda p: p.stem)
def test_report_emit_and_compile_agree(path, capsys):
    program = compile(path)
    report = analyze_program(load_program(path), "h200")
    assert report.launches == len(program.kernels)
    assert opt.main([str(path), "--emit", "triton"]) == 0
    assert capsys.readouterr().out.rstrip("\n") == program.source.rstrip("\n")


@pytest.mark.parametrize("name", ["helper_call", "softmax", "mlp", "four_layernorms"])
def test_autotune_builds_what_compile_builds(name, tmp_path, monkeypatch):
    monkeypatch.setenv("TILEFUSE_CACHE", str(tmp_path))
    path = HELPER_CALL if name == "helper_call" else ROOT / "samples" / f"{name}.mlir"
    module = load_program(path)
    args = [on_device(np.asarray(a)) for a in random_inputs(module, 0)]
    # Every candidate timed equal: the autotuner keeps each group's first, the model's plan.
    tuned, result = at.autotune(path, args, limit=1, timer=lambda launch: 1.0)
    assert set(result.picks.values()) <= {0}
    assert _kernels_only(tuned.source) == _kernels_only(compile(path).source)
