"""
`tilefuse-opt`: the optimizer driver, built on xDSL's `xDSLOptMain`.

It adds to xdsl-opt: the dialects and passes of tilefuse only, source locations
on every op, MLIR's `// -----// IR Dump After <pass> //----- //` dumps
(`--print-ir-after-all`), a dump directory (`--dump-dir`, `$TILEFUSE_DEBUG_DIR`),
re-specialisation of a program's sizes and element type (`--set-dim N=8192`,
`--set-dtype bf16`), and user errors printed as `file:line:col: error: ...` with
exit status 1 instead of a traceback (`--debug` shows the traceback).
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import io
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline, get_pass_option_infos
from xdsl.printer import Printer
from xdsl.targets.mlir import MLIRTarget
from xdsl.utils.arg_spec import ArgSpec, parse_pipeline, parse_spec
from xdsl.utils.exceptions import (
    ArgSpecParseError,
    DiagnosticException,
    ParseError,
    PassFailedException,
)
from xdsl.utils.target import Target
from xdsl.xdsl_opt_main import xDSLOptMain

from tilefuse.analysis.cost.target import (
    DEFAULT_TARGET,
    TargetError,
    get_target,
    target_names,
)
from tilefuse.backend.triton.emit import emit_triton
from tilefuse.dump import ProgramDump, debug_root, dump_ir, open_program_dump
from tilefuse.frontend.parse import decode_source, parse_module, verify
from tilefuse.frontend.specialize import SpecializeError, specialize
from tilefuse.ir import forms
from tilefuse.ir.context import register_dialects
from tilefuse.ir.diagnostics import CompileError, os_error_message
from tilefuse.ir.dynamic import DimRange, is_dynamic, parse_range
from tilefuse.passes import get_all_passes
from tilefuse.pipeline import default_pipeline, unmet_stage
from tilefuse.report import analyze_program, format_report, roofline_png

__all__ = ["TilefuseOptMain", "dump_ir", "main", "parse_dim_options", "version_line"]


def tilefuse_version() -> str:
    try:
        return version("tilefuse")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "(not installed)"


def version_line(tool: str) -> str:
    """`tilefuse-run 0.1.0 (tilefuse), on xdsl 0.75.0`."""
    return f"{tool} {tilefuse_version()} (tilefuse), on xdsl {version('xdsl')}"


class TilefuseOptMain(xDSLOptMain):
    """The `tilefuse-opt` command line tool."""

    version_format = f"tilefuse-opt {tilefuse_version()} (tilefuse), on xdsl {{xdsl_version}}"

    observer: PassObserver
    program_dump: ProgramDump | None = None

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
        _rename_emit_option(arg_parser, list(self.available_targets))
        _describe_passes(arg_parser, self.available_passes)
        arg_parser.add_argument(
            "--target",
            dest="gpu",
            default=DEFAULT_TARGET,
            metavar="GPU",
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
            "--dim-range",
            action="append",
            default=[],
            metavar="NAME=LO:HI[:DIV]",
            help="declare the sizes a dynamic (?) dim takes: x.0=1:4096 for dim 0 of %%x "
            "(x.0=16:4096:16: multiples of 16 only); one for each dynamic dim of the entry function",
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
            "--dump-dir",
            metavar="DIR",
            help="write each program's IR after every pass, its report and its kernels "
            "to a folder under DIR (default $TILEFUSE_DEBUG_DIR)",
        )
        arg_parser.add_argument(
            "--debug", action="store_true", help="show Python tracebacks on errors"
        )

    def setup_pipeline(self) -> None:
        if self.args.roofline_png and not self.args.report:
            raise CompileError("--roofline-png draws the report's roofline: add --report")
        get_target(self.args.gpu)  # an unknown --target is an error even if unused
        if self.args.target == "triton" and not self.args.passes:
            # `--emit triton` alone compiles: the default pipeline is its `-p`.
            self.args.passes = default_pipeline(self.args.gpu)
        self.observer = PassObserver(self.args)
        passes = tuple(
            _make_pass(self.available_passes[s.name], s)
            for s in parse_passes(list(self.available_passes), self.args.passes)
        )
        self.pipeline = PassPipeline(passes, self.observer)

    def output_resulting_program(self, prog: ModuleOp) -> str:
        if self.args.report:
            report = analyze_program(prog, self.args.gpu, after_each=self.observer.after)
            if self.args.roofline_png:
                roofline_png(report, self.args.roofline_png)
            return self._dumped("report.txt", format_report(report))
        if self.args.target == "triton":
            out = io.StringIO()
            ran = tuple(p.name for p in self.pipeline.passes)
            TritonTarget(self.get_input_name(), ran).emit(self.ctx, prog, out)
            return self._dumped("kernels.py", out.getvalue())
        return super().output_resulting_program(prog)

    def _dumped(self, filename: str, text: str) -> str:
        if self.program_dump is not None:
            self.program_dump.write(filename, text)
        return text

    def get_input_stream(self) -> tuple[IO[bytes], str]:
        if self.args.input_file == "-":  # MLIR's spelling of stdin
            self.args.input_file = None
        stream, _ = super().get_input_stream()
        return stream, "mlir"  # as mlir-opt, every file is read as MLIR

    def parse_chunk(
        self, chunk: IO[bytes], file_extension: str, start_offset: int = 0
    ) -> ModuleOp | None:
        text = decode_source(chunk.read(), self.get_input_name(), start_offset)
        dims = parse_dim_options(self.args.set_dim)
        text = specialize(text, dims, self.args.set_dtype)
        ranges = dict(_parse_range_option(item) for item in self.args.dim_range)
        module = parse_module(self.ctx, text, self.get_input_name(), start_offset,
                              dim_ranges=ranges or None)  # fmt: skip
        if debug_root(self.args.dump_dir) is not None:
            self.program_dump = open_program_dump(
                self.args.dump_dir, self.get_input_name(), module, self.args.gpu
            )
            self.observer.dump = self.program_dump
        return module


@dataclass
class PassObserver:
    """What runs between two passes of `-p`: the verifier, xdsl-opt's `--time-passes`
    and `--print-between-passes`, MLIR's dumps (`--print-ir-after-all`) and the dump
    directory. `after` alone is `run_pipeline`'s `after_each` (for `--report`)."""

    args: argparse.Namespace
    dump: ProgramDump | None = None
    start: float = dataclasses.field(default_factory=time.perf_counter)

    def __call__(
        self, previous: ModulePass | None, module: ModuleOp, next_pass: ModulePass | None
    ) -> None:
        if self.args.time_passes and previous is not None:
            print(f"Pass {previous.name} took {time.perf_counter() - self.start} seconds")
        if not self.args.disable_verify:
            verify(module, dynamic=is_dynamic(module))
        if previous is not None:
            self.after(previous.name, module)
            if next_pass is not None and self.args.print_between_passes:
                print(f"IR after {previous.name}:")
                Printer(stream=sys.stdout).print_op(module)
                print("\n\n\n")
        if self.args.time_passes and next_pass is not None:
            self.start = time.perf_counter()

    def after(self, stage: str, module: ModuleOp) -> None:
        if self.args.print_ir_after_all:
            dump_ir(stage, module, sys.stderr)
        if self.dump is not None:
            self.dump.stage(stage, module)


@dataclass(frozen=True)
class TritonTarget(Target):
    """`--emit triton`: print the Triton module of IR the pipeline has tiled.

    It runs no pass: a module that has not been through a stage the printer needs
    (see `pipeline.unmet_stage`) is an error naming that stage, or the group that
    tile-and-fuse left untiled."""

    source_name: str = "<input>"
    ran: tuple[str, ...] = ()
    """The passes that ran (to tell a group tile-and-fuse refused from one it never saw)."""
    name = "triton"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        missing = unmet_stage(module)
        untiled = forms.first_untiled_group(module)
        if missing == "tile-and-fuse" and untiled is not None and missing in self.ran:
            raise CompileError.at(
                untiled,
                f"@{untiled.sym_name.data} was left untiled by tile-and-fuse (see its "
                f"warning): --emit triton prints only tiled groups",
            )
        if missing is not None:
            raise CompileError(
                f"--emit triton prints tiled IR, but this module has not been "
                f"through {missing}: add it to -p (the default pipeline is "
                f"`python -m tilefuse.pipeline`), or give no -p to run them all"
            )
        output.write(emit_triton(module, self.source_name))


def _make_pass(factory: Callable[[], type[ModulePass]], spec: ArgSpec) -> ModulePass:
    """The pass `spec` names, with its options; a bad option names the valid ones."""
    cls = factory()
    try:
        return cls.from_pass_spec(spec)
    except ValueError as e:
        raise CompileError(f"-p {spec.name}: {e}; {pass_options(cls)}") from e


def pass_options(cls: type[ModulePass]) -> str:
    """`options: target (str, default h200), smem_budget (int, default 0)`."""
    infos = [f"{o.name} ({o.expected_type.strip(chr(39))}, default {o.default_value})"
             for o in get_pass_option_infos(cls)]  # fmt: skip
    return f"options: {', '.join(infos)}" if infos else "no options"


def parse_passes(available: Sequence[str], spec: str) -> list[ArgSpec]:
    """The passes of a `-p` spec; a spec that does not parse, or names a pass that
    does not exist, is a one-line `CompileError`."""
    try:
        specs = list(parse_pipeline(spec))
    except ArgSpecParseError as e:
        raise CompileError(spec_error("-p", spec, e)) from None
    for s in specs:
        if s.name not in available:
            close = difflib.get_close_matches(s.name, available, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise CompileError(
                f"-p: unknown pass '{s.name}'{hint}; the passes are {', '.join(available)}"
            )
    return specs


def spec_error(option: str, spec: str, error: ArgSpecParseError) -> str:
    """xDSL's multi-line spec parse error as one line; an unquoted option value gets
    the spelling that works (`target="t.json"`)."""
    lines = str(error).splitlines()
    column = int(lines[1].rsplit(":", 1)[1])  # "pass-pipeline:1:COLUMN"
    reason = lines[-1].strip()
    where = f"{option} '{spec}'"
    value_start = re.search(r"([\w-]+)=([^\s{},=]*)$", spec[: column - 1])
    if value_start is None:
        return f"{where}: {reason[:1].lower()}{reason[1:]} at column {column}"
    name = value_start.group(1)
    value = (value_start.group(2) + re.match(r"[^\s}]*", spec[column - 1 :]).group()).strip('"')
    if not value:
        return f'{where}: option {name} has no value: write {name}=VALUE ({name}="..." for text)'
    return f'{where}: the value of {name} must be quoted: {name}="{value}"'


def _rename_emit_option(arg_parser: argparse.ArgumentParser, formats: list[str]) -> None:
    """xdsl-opt's output format is `-t/--target`; here it is `-t/--emit` (and
    `--target` is the GPU). A bad format is refused by argparse, naming `--emit`."""
    action = arg_parser._option_string_actions.pop("--target")
    action.option_strings = ["-t", "--emit"]
    action.metavar = "FORMAT"
    action.help = f"output format: {' or '.join(formats)} (default mlir)"

    def output_format(value: str) -> str:
        try:
            name = parse_spec(value).name
        except ArgSpecParseError as e:
            raise argparse.ArgumentTypeError(spec_error("--emit", value, e)) from None
        if name not in formats:
            raise argparse.ArgumentTypeError(
                f"invalid choice: '{name}' (choose from {', '.join(formats)})"
            )
        return value

    action.type = output_format
    arg_parser._option_string_actions["--emit"] = action


UNDOCUMENTED = {
    "cse": "Eliminate common subexpressions.",
    "dce": "Erase ops whose results are unused.",
}
"""Descriptions of the xDSL passes whose class has no docstring."""


def _describe_passes(
    arg_parser: argparse.ArgumentParser, passes: dict[str, Callable[[], type[ModulePass]]]
) -> None:
    """`--help` ends with every pass: the first line of its docstring and its options.
    Built only when help is printed: it imports every pass."""
    plain_help = arg_parser.format_help

    def format_help() -> str:
        lines = ["", "passes (-p NAME{option=value ...}):"]
        for name, factory in passes.items():
            cls = factory()
            doc = (cls.__doc__ or "").strip().splitlines() or [UNDOCUMENTED.get(name, "")]
            lines.append(f"  {name:<18} {doc[0]}")
            lines.append(f"  {'':<18} {pass_options(cls)}")
        return plain_help() + "\n".join(lines) + "\n"

    arg_parser.format_help = format_help  # type: ignore[method-assign]


def _parse_range_option(item: str) -> tuple[str, DimRange]:
    try:
        return parse_range(item)
    except ValueError as e:
        raise SpecializeError(f"--dim-range: {e}") from None


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


USER_ERRORS = (CompileError, SpecializeError, TargetError, ParseError, DiagnosticException,
               PassFailedException)  # fmt: skip
"""What a user can get wrong: printed as one line, exit status 1."""


def run_reporting_errors(main: type[xDSLOptMain], argv: Sequence[str] | None) -> int:
    """Run an xDSL-style tool; user errors become one message and exit status 1."""
    debug = "--debug" in (argv if argv is not None else sys.argv)
    try:
        try:
            tool = main(args=argv)
        except ValueError as e:  # unknown pass or target, bad pass options
            raise CompileError(str(e)) from e
        tool.run()
    except USER_ERRORS as e:
        if debug:
            raise
        print(e if isinstance(e, CompileError) else f"error: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(os_error_message(e), file=sys.stderr)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_reporting_errors(TilefuseOptMain, argv)


if __name__ == "__main__":
    sys.exit(main())
