"""The tools' face: what `tilefuse-opt` and `tilefuse-run` print for a person's mistakes
and requests. Run in-process; every error is one line and exit status 1, no traceback."""

import json
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pytest

from tilefuse.pipeline import STAGE_NAMES
from tilefuse.tools import opt, run

SAMPLES = Path(__file__).parent.parent / "samples"
SOFTMAX, RELU_ADD = str(SAMPLES / "softmax.mlir"), str(SAMPLES / "relu_add.mlir")
DUMP = "// -----// IR Dump After {} //----- //"


def one_line_error(capsys, argv, tool=opt.main) -> str:
    """Run `tool(argv)`: exit status 1, one line on stderr, no traceback; that line."""
    assert tool(argv) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    return err.strip()


# -- -p specs --------------------------------------------------------------------------


@pytest.mark.parametrize(("spec", "message"), [
    ("fusion-groups{", "error: -p 'fusion-groups{': expected argument name here at column 15"),
    ("a,,b", "error: -p 'a,,b': expected pass name here at column 3"),
    ("fusion-groups{target=}", "option target has no value: write target=VALUE"),
    ("fusion-groups{target=t.json}", 'the value of target must be quoted: target="t.json"'),
    ("fusion-groups{target=/x.json}", 'the value of target must be quoted: target="/x.json"'),
])  # fmt: skip
def test_a_pass_spec_that_does_not_parse_is_one_line(spec, message, capsys):
    assert message in one_line_error(capsys, [SOFTMAX, "-p", spec])


def test_a_quoted_option_value_parses(tmp_path, capsys):
    (tmp_path / "t.json").write_text(json.dumps({"base": "h200", "smem_per_block": 8192}))
    spec = f'linalg-generalize,fusion-groups{{target="{tmp_path / "t.json"}"}}'
    assert opt.main([SOFTMAX, "-p", spec]) == 0
    assert "tilefuse.group" in capsys.readouterr().out


def test_an_unknown_pass_lists_the_passes(capsys):
    err = one_line_error(capsys, [SOFTMAX, "-p", "linalg-generalise"])
    assert err.startswith("error: -p: unknown pass 'linalg-generalise' (did you mean "
                          "linalg-generalize?); the passes are inline-calls, ")  # fmt: skip
    assert "horizontal-fusion" in err and "canonicalize" in err


def test_an_unknown_pass_option_lists_the_options(capsys):
    err = one_line_error(capsys, [SOFTMAX, "-p", "tile-and-fuse{tgt=a100}"])
    assert err.startswith("error: -p tile-and-fuse: ")
    assert err.endswith("options: target (str, default h200), smem_budget (int, default 0), "
                        "allow_tf32 (bool, default false)")


# -- xdsl-opt's options ------------------------------------------------------------------


def test_time_passes_and_print_between_passes(capsys):
    argv = [RELU_ADD, "-p", "canonicalize,cse,dce", "--time-passes", "--print-between-passes"]
    assert opt.main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    timed = [line.split(" took ")[0] for line in lines if line.endswith(" seconds")]
    assert timed == ["Pass canonicalize", "Pass cse", "Pass dce"]
    assert [line for line in lines if line.startswith("IR after")] == [
        "IR after canonicalize:", "IR after cse:"]  # fmt: skip


def test_print_ir_after_all_still_verifies_and_dumps(capsys):
    assert opt.main([RELU_ADD, "-p", "canonicalize,cse", "--print-ir-after-all"]) == 0
    err = capsys.readouterr().err
    assert err.count("// -----// IR Dump After") == 2 and DUMP.format("cse") in err


# -- -t/--emit and --target --------------------------------------------------------------


def test_a_bad_output_format_names_emit(capsys):
    with pytest.raises(SystemExit) as e:
        opt.main([SOFTMAX, "--emit", "cuda"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "argument -t/--emit: invalid choice: 'cuda' (choose from mlir, triton)" in err
    assert "[-t FORMAT]" in err and "[--target GPU]" in err and "--target:" not in err


def test_help_says_emit_is_the_format_and_target_the_gpu(capsys):
    with pytest.raises(SystemExit):
        opt.main(["--help"])
    out = capsys.readouterr().out
    assert "-t FORMAT, --emit FORMAT" in out and "output format: mlir or triton" in out
    assert "--target GPU" in out and "GPU to compile for" in out


def test_an_unknown_gpu_is_an_error_even_when_unused(capsys):
    err = one_line_error(capsys, [RELU_ADD, "--target", "b200"])
    assert err.startswith("error: unknown target 'b200'; known targets are a100")


def test_roofline_png_needs_report(tmp_path, capsys):
    png = tmp_path / "r.png"
    err = one_line_error(capsys, [SOFTMAX, "--roofline-png", str(png)])
    assert err == "error: --roofline-png draws the report's roofline: add --report"
    assert not png.exists()


# -- --help and --version ----------------------------------------------------------------


def test_help_describes_every_pass_and_its_options(capsys):
    with pytest.raises(SystemExit) as e:
        opt.main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "\npasses (-p NAME{option=value ...}):\n" in out
    assert ("  tile-and-fuse      Tile every fusion group from the target's budgets and fuse "
            "its ops per tile.\n") in out  # fmt: skip
    assert "options: target (str, default h200), smem_budget (int, default 0)" in out
    assert "  cse                Eliminate common subexpressions." in out
    for name in ("inline-calls", "linalg-generalize", "split-reduction", "flash-attention",
                 "fusion-groups", "horizontal-fusion", "canonicalize", "dce"):  # fmt: skip
        line = next(line for line in out.splitlines() if line.startswith(f"  {name} "))
        assert len(line.split(None, 1)) == 2, line  # a description follows the name


@pytest.mark.parametrize("tool", [opt.main, run.main], ids=["opt", "run"])
def test_version_names_tilefuse_and_xdsl(tool, capsys):
    with pytest.raises(SystemExit) as e:
        tool(["--version"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "(tilefuse)" in out and f"on xdsl {version('xdsl')}" in out
    assert "xdsl-opt built from" not in out


# -- what the lead mended: tests that they stay mended -----------------------------------


def test_report_refuses_a_pipeline_that_groups(capsys):
    err = one_line_error(capsys, [SOFTMAX, "-p", "linalg-generalize,fusion-groups", "--report"])
    assert "--report prices the program before fusion-groups" in err


def test_emit_triton_after_a_cut_pipeline_names_the_missing_stage(capsys):
    err = one_line_error(capsys, [SOFTMAX, "-p", "fusion-groups,tile-and-fuse", "--emit", "triton"])
    assert err.startswith(f"{SOFTMAX}:11:3: error: 'linalg.fill' op must be generalized")
    assert "run linalg-generalize first" in err


def test_emit_triton_without_p_dumps_every_stage(capsys):
    assert opt.main([RELU_ADD, "--emit", "triton", "--print-ir-after-all"]) == 0
    captured = capsys.readouterr()
    assert "@triton.jit" in captured.out
    dumps = [line for line in captured.err.splitlines() if line.startswith("// -----//")]
    assert dumps == [DUMP.format(s) for s in STAGE_NAMES]


def test_report_dumps_its_stages(capsys):
    assert opt.main([RELU_ADD, "--report", "--print-ir-after-all"]) == 0
    captured = capsys.readouterr()
    assert "== fusion report: @relu_add on h200" in captured.out
    assert DUMP.format("flash-attention") in captured.err
    assert DUMP.format("tile-and-fuse") in captured.err


def test_a_pass_option_is_not_overridden_by_emit(capsys):
    """`--emit triton` runs no pass: a group the user's budget leaves untiled is an error
    naming it, not a kernel tiled with the default budget."""
    spec = "linalg-generalize,fusion-groups{target=a100},tile-and-fuse{smem_budget=100}"
    assert opt.main([SOFTMAX, "-p", spec, "--emit", "triton"]) == 1
    captured = capsys.readouterr()
    warning, error = captured.err.splitlines()
    assert "warning: 'tilefuse.group' op left untiled" in warning and "budget 0.1 KB" in warning
    assert error == (f"{SOFTMAX}:45:3: error: 'tilefuse.group' op @fused_kernel_0 was left "
                     "untiled by tile-and-fuse (see its warning): --emit triton prints only "
                     "tiled groups")  # fmt: skip
    assert "@triton.jit" not in captured.out


def test_a_json_target_keeps_the_reports_tiles(tmp_path, capsys):
    target = tmp_path / "t.json"
    target.write_text(json.dumps({"base": "h200", "smem_per_block": 8192}))
    assert opt.main([SOFTMAX, "--report", "--target", str(target)]) == 0
    out = capsys.readouterr().out
    tiles = out.split("\ntiles:\n")[1].splitlines()[0]
    assert tiles.split()[0] == "fused_kernel_0" and "of 8 KB" in tiles


# -- tilefuse-run --inputs and --save-outputs ----------------------------------------------


def _relu_add_inputs(path: Path, **arrays) -> str:
    x = np.random.default_rng(0).standard_normal((37, 300))
    np.savez(path, **{name: x.astype(dtype) for name, dtype in arrays.items()})
    return str(path)


@pytest.mark.parametrize("dtype", ["float64", "int32", "float16"])
def test_inputs_of_another_dtype_are_refused(dtype, tmp_path, capsys):
    inputs = _relu_add_inputs(tmp_path / "in.npz", arg0=dtype, arg1="float32")
    err = one_line_error(capsys, [RELU_ADD, "--inputs", inputs], run.main)
    assert err == (f"error: --inputs {inputs}: arg0 (%x) of @relu_add is f32 (numpy float32), "
                   f"but the array is {dtype}: save it with .astype(np.float32)")  # fmt: skip


def test_a_float_array_for_an_integer_argument_is_refused(tmp_path, capsys):
    program = tmp_path / "int.mlir"
    program.write_text("func.func @f(%n: tensor<4xi32>) -> tensor<4xi32> {\n"
                       "  func.return %n : tensor<4xi32>\n}\n")  # fmt: skip
    inputs = tmp_path / "in.npz"
    np.savez(inputs, arg0=np.full(4, 2.7))
    err = one_line_error(capsys, [str(program), "--inputs", str(inputs)], run.main)
    assert "arg0 (%n) of @f is i32 (numpy int32), but the array is float64" in err


def test_inputs_named_otherwise_say_what_the_file_holds(tmp_path, capsys):
    inputs = _relu_add_inputs(tmp_path / "named.npz", x="float32", y="float32")
    err = one_line_error(capsys, [RELU_ADD, "--inputs", inputs], run.main)
    assert err == (f"error: {inputs} lacks arg0, arg1 (arrays arg0, arg1, ... in argument "
                   "order); it holds x, y")  # fmt: skip


def test_save_outputs_says_where_it_wrote(tmp_path, capsys):
    inputs = _relu_add_inputs(tmp_path / "in.npz", arg0="float32", arg1="float32")
    out = tmp_path / "out.npz"
    assert run.main([RELU_ADD, "--inputs", inputs, "--save-outputs", str(out)]) == 0
    assert f"  wrote out0 to {out}\n" in capsys.readouterr().out
    assert np.load(out)["out0"].shape == (37, 300)


# -- the dump directory ------------------------------------------------------------------

STAGE_FILES = ["00-input.mlir", *(f"{i:02d}-{s}.mlir" for i, s in enumerate(STAGE_NAMES, 1))]


def _program_folder(root: Path, stem: str) -> Path:
    (folder,) = root.iterdir()
    assert folder.name.startswith(f"{stem}-") and len(folder.name) == len(stem) + 9
    return folder


def test_run_dump_dir_holds_stages_report_and_kernels(tmp_path, capsys):
    assert run.main([RELU_ADD, "--dump-dir", str(tmp_path)]) == 0
    folder = _program_folder(tmp_path, "relu_add")
    assert f"tilefuse: dumping {RELU_ADD} to {folder}" in capsys.readouterr().err
    assert sorted(p.name for p in folder.iterdir()) == [*STAGE_FILES, "kernels.py", "report.txt"]
    fused = (folder / STAGE_FILES[1 + STAGE_NAMES.index("fusion-groups")]).read_text()
    assert fused.startswith(DUMP.format("fusion-groups") + "\n") and "tilefuse.group" in fused
    assert "func.func @relu_add" in (folder / "00-input.mlir").read_text()
    assert "@triton.jit" in (folder / "kernels.py").read_text()
    assert "== fusion report: @relu_add on h200" in (folder / "report.txt").read_text()


def test_the_debug_dir_environment_variable_is_the_default(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TILEFUSE_DEBUG_DIR", str(tmp_path))
    assert opt.main([RELU_ADD, "--emit", "triton"]) == 0
    folder = _program_folder(tmp_path, "relu_add")
    assert sorted(p.name for p in folder.iterdir()) == [*STAGE_FILES, "kernels.py"]
    assert (folder / "kernels.py").read_text() == capsys.readouterr().out


def test_opt_dump_dir_with_report_and_own_passes(tmp_path, capsys):
    assert opt.main([RELU_ADD, "-p", "canonicalize", "--report", "--dump-dir", str(tmp_path)]) == 0
    folder = _program_folder(tmp_path, "relu_add")
    names = sorted(p.name for p in folder.iterdir())
    assert names[:3] == ["00-input.mlir", "01-canonicalize.mlir", "02-inline-calls.mlir"]
    assert "report.txt" in names and "kernels.py" not in names
    assert (folder / "report.txt").read_text() == capsys.readouterr().out


def test_compile_takes_a_dump_dir(tmp_path, capsys):
    from tilefuse.runtime import compile

    prog = compile(RELU_ADD, dump_dir=tmp_path)
    folder = _program_folder(tmp_path, "relu_add")
    assert (folder / "kernels.py").read_text() == prog.source
    compile(RELU_ADD, "a100", dump_dir=tmp_path)  # another target: another folder
    assert len(list(tmp_path.iterdir())) == 2


# -- xdsl-opt sees tilefuse ----------------------------------------------------------------


def test_the_xdsl_universe_offers_our_passes_dialect_and_target():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    from xdsl.universe import Universe

    from tilefuse.tools.universe import UNIVERSE

    pyproject = tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text())
    assert pyproject["project"]["entry-points"]["xdsl.universe"] == {
        "tilefuse": "tilefuse.tools.universe:UNIVERSE"}  # fmt: skip
    assert isinstance(UNIVERSE, Universe)
    # ours, not xDSL's (no clash): the stages and the one opt-in pass
    assert sorted(UNIVERSE.all_passes) == sorted([*STAGE_NAMES, "fold-softmax-scale"])
    assert UNIVERSE.all_passes["fusion-groups"]().name == "fusion-groups"
    assert UNIVERSE.all_dialects["tilefuse"]().name == "tilefuse"
    assert UNIVERSE.all_targets["triton"]().name == "triton"
    from xdsl.universe import XDSL_UNIVERSE

    for kind in ("all_passes", "all_dialects", "all_targets"):
        assert not set(getattr(UNIVERSE, kind)) & set(getattr(XDSL_UNIVERSE, kind))


def test_the_universe_imports_nothing_heavy():
    import subprocess
    import sys

    code = ("import sys, tilefuse.passes; print(sorted(m for m in sys.modules "
            "if m.startswith(('tilefuse.', 'triton', 'torch'))))")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['tilefuse.passes']"


# -- the roofline plot -----------------------------------------------------------------


def test_the_roof_bends_at_the_ridge_point():
    from tilefuse.analysis.cost.target import get_target
    from tilefuse.report import roof_line

    h200 = get_target("h200")
    xs, ys = roof_line(h200)
    peak = h200.peak_flops("f32", tensor_cores=False)
    ridge = peak / h200.hbm_bandwidth
    assert ridge in xs and ys[xs.index(ridge)] == peak
    assert all(y == min(peak, x * h200.hbm_bandwidth) for x, y in zip(xs, ys, strict=True))


def test_roofline_png_labels_every_kernel(tmp_path, monkeypatch, capsys):
    pytest.importorskip("matplotlib")
    from matplotlib.axes import Axes

    labels = []
    original = Axes.annotate

    def annotate(ax, text, *args, **kwargs):
        labels.append(text)
        return original(ax, text, *args, **kwargs)

    monkeypatch.setattr(Axes, "annotate", annotate)
    png = tmp_path / "r.png"
    assert opt.main([SOFTMAX, "--report", "--roofline-png", str(png)]) == 0
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert "fused_kernel_0" in labels and len(labels) == 1 + 4  # the fused kernel, 4 ops
