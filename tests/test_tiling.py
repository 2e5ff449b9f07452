"""Tile plans of contractions: warps against the epilogue's inlined library code."""

from tilefuse.backend.triton.emit import emit_triton
from tilefuse.frontend.program import load_program
from tilefuse.pipeline import run_pipeline

MLP_DIMS = {"M": 8192, "D": 4096, "F": 16384}


def tile_lines(sample: str, dims: dict[str, int], dtype: str = "bf16") -> list[str]:
    module = load_program(f"samples/{sample}.mlir", dims, dtype)
    run_pipeline(module, "h200")
    return [line for line in emit_triton(module).splitlines() if line.startswith("# tile")]


def test_an_erf_epilogue_spreads_its_tile_over_more_warps():
    """The up-projection's erf is inlined once per accumulator value a thread
    holds: 128x256 at 16 warps (64 values each), said in the plan; the
    down-projection (bias add) keeps 8 warps on the same tile."""
    up, down = tile_lines("mlp", MLP_DIMS)
    assert up.startswith("# tile 128x256x64(loop)") and "16 warps" in up, up
    assert "1 library call(s) per element of the epilogue" in up, up
    assert "persistent" in up, up  # one library call: the Hopper lowering
    # (the down-projection takes the Hopper lowering: its tile is 128 x 256)
    assert down.startswith("# tile 128x256x64(loop)") and "8 warps" in down, down
    assert "library call" not in down, down


def test_a_cheap_epilogue_keeps_eight_warps():
    (line,) = tile_lines("linear_bias_relu", {"M": 8192, "K": 4096, "N": 4096})
    assert "128x256" in line and "8 warps" in line, line
