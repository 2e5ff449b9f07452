"""
`tilefuse-opt`: the optimizer driver, built on xDSL's `xDSLOptMain`.

It adds to xdsl-opt: the dialects and passes of tilefuse only, source locations
on every op, MLIR's `// -----// IR Dump After <pass> //----- //` dumps
(`--print-ir-after-all`), re-specialisation of a program's sizes and element
type (`--set-dim N=8192`, `--set-dtype bf16`), and user errors printed as
`file:line:col: error: ...` with exit status 1 instead of a traceback
(`--debug` shows the traceback).
"""

from __future__ import annotations

import argparse
import io
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.printer import Printer
from xdsl.targets.mlir import MLIRTarget
from xdsl.utils.exceptions import DiagnosticException, ParseError, PassFailedException
from xdsl.utils.target import Target
from xdsl.xdsl_opt_main import xDSLOptMain

from tilefuse.analysis.cost.target import DEFAULT_TARGET, TargetError, target_names
from tilefuse.backend.triton.emit import emit_triton
from tilefuse.frontend.parse import decode_source, parse_module, verify
from tilefuse.frontend.specialize import SpecializeError, specialize
from tilefuse.ir.context import register_dialects
from tilefuse.ir.diagnostics import CompileError, os_error_message
from tilefuse.passes import get_all_passes
from tilefuse.pipeline import default_pipeline, unmet_stage
from tilefuse.tools.report import analyze_program, format_report, roofline_png


class TilefuseOptMain(xDSLOptMain):
    """The `tilefuse-opt` command line tool."""

    def register_all_dialects(self) -> None:
        register_dialects(self.ctx)

    def register_all_targets(self) -> None:
        self.available_targets["mlir"] = lambda: MLIRTarget
        self.available_targets["triton"] = lambda: TritonTarget

    def register_all_passes(self) -> None:
        for name, factory in get_all_passes().items():
            self.register_pass(name, factory)

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)
        _rename_emit_option(arg_parser)
        arg_parser.add_argument(
            "--target",
            dest="gpu",
            default=DEFAULT_TARGET,
            metavar="NAME",
            help=f"GPU to compile for: {', '.join(target_names())} or a JSON file "
            f"(default {DEFAULT_TARGET})",
        )
        arg_parser.add_argument(
            "--report",
            action="store_true",
            help="print the fusion report (fused vs unfused cost, timeline, decisions)",
        )
        arg_parser.add_argument(
            "--roofline-png", metavar="FILE", help="with --report: draw the roofline"
        )
        arg_parser.add_argument(
            "--set-dim",
            action="append",
            default=[],
            metavar="NAME=SIZE",
            help="re-specialise a dimension declared in the tilefuse.dims header",
        )
        arg_parser.add_argument(
            "--set-dtype",
            default=None,
            metavar="TYPE",
            help="replace the storage type declared in the tilefuse.dtype header",
        )
        arg_parser.add_argument(
            "--print-ir-after-all",
            action="store_true",
            help="print the IR after every pass, with MLIR's dump header (to stderr)",
        )
        arg_parser.add_argument(
            "--debug", action="store_true", help="show Python tracebacks on errors"
        )

    def setup_pipeline(self) -> None:
        if self.args.target == "triton" and not self.args.passes:
            # `--emit triton` alone compiles: the default pipeline is its `-p`.
            self.args.passes = default_pipeline(self.args.gpu)

        def callback(
            previous: ModulePass | None, module: ModuleOp, next_pass: ModulePass | None
        ) -> None:
            if not self.args.disable_verify:
                verify(module)
            if previous is not None and self.args.print_ir_after_all:
                dump_ir(previous.name, module, sys.stderr)

        self.pipeline = PassPipeline.parse_spec(
            self.available_passes, self.args.passes, callback
        )

    def output_resulting_program(self, prog: ModuleOp) -> str:
        if self.args.report:
            dump = self._dump if self.args.print_ir_after_all else None
            report = analyze_program(prog, self.args.gpu, after_each=dump)
            if self.args.roofline_png:
                roofline_png(report, self.args.roofline_png)
            return format_report(report)
        if self.args.target == "triton":
            out = io.StringIO()
            TritonTarget(self.get_input_name()).emit(self.ctx, prog, out)
            return out.getvalue()
        return super().output_resulting_program(prog)

    @staticmethod
    def _dump(stage: str, module: ModuleOp) -> None:
        dump_ir(stage, module, sys.stderr)

    def get_input_stream(self):
        if self.args.input_file == "-":  # MLIR's spelling of stdin
            self.args.input_file = None
        return super().get_input_stream()

    def parse_chunk(
        self, chunk: IO[bytes], file_extension: str, start_offset: int = 0
    ) -> ModuleOp | None:
        text = decode_source(chunk.read(), self.get_input_name(), start_offset)
        dims = parse_dim_options(self.args.set_dim)
        text = specialize(text, dims, self.args.set_dtype)
        return parse_module(self.ctx, text, self.get_input_name(), start_offset)


@dataclass(frozen=True)
class TritonTarget(Target):
    """`--emit triton`: print the Triton module of IR the pipeline has tiled.

    It runs no pass: a module that has not been through a stage the printer needs
    (see `pipeline.unmet_stage`) is an error naming that stage."""

    source_name: str = "<input>"
    name = "triton"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        missing = unmet_stage(module)
        if missing is not None:
            raise CompileError(
                f"--emit triton prints tiled IR, but this module has not been "
                f"through {missing}: add it to -p (the default pipeline is "
                f"`python -m tilefuse.pipeline`), or give no -p to run them all"
            )
        output.write(emit_triton(module, self.source_name))


def _rename_emit_option(arg_parser: argparse.ArgumentParser) -> None:
    """xdsl-opt's output format is `-t/--target`; here it is `-t/--emit`."""
    action = arg_parser._option_string_actions.pop("--target")
    action.option_strings = ["-t", "--emit"]
    arg_parser._option_string_actions["--emit"] = action


def parse_dim_options(options: Sequence[str]) -> dict[str, int]:
    """`["N=8192", "M=16"]` -> `{"N": 8192, "M": 16}`."""
    dims = {}
    for item in options:
        name, _, value = item.partition("=")
        if not value.isdigit():
            raise SpecializeError(f"--set-dim expects NAME=SIZE, got '{item}'.")
        if int(value) < 1:
            raise SpecializeError(f"--set-dim {item}: a dimension needs at least one element.")
        dims[name] = int(value)
    return dims


def dump_ir(pass_name: str, module: ModuleOp, stream: IO[str]) -> None:
    """Print `module` under MLIR's dump header for `pass_name`."""
    print(f"// -----// IR Dump After {pass_name} //----- //", file=stream)
    Printer(stream=stream).print_op(module)
    print("\n", file=stream)


def run_reporting_errors(main: type[xDSLOptMain], argv: Sequence[str] | None) -> int:
    """Run an xDSL-style tool; user errors become one message and exit status 1."""
    debug = "--debug" in (argv if argv is not None else sys.argv)
    try:
        try:
            tool = main(args=argv)
        except ValueError as e:  # unknown pass or target, bad pass options
            raise CompileError(str(e)) from e
        tool.run()
    except CompileError as e:
        if debug:
            raise
        print(e, file=sys.stderr)
        return 1
    except (SpecializeError, TargetError) as e:
        if debug:
            raise
        print(f"error: {e}", file=sys.stderr)
        return 1
    except (ParseError, DiagnosticException, PassFailedException) as e:
        if debug:
            raise
        print(f"error: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(os_error_message(e), file=sys.stderr)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_reporting_errors(TilefuseOptMain, argv)


if __name__ == "__main__":
    sys.exit(main())
