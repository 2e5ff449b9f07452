"""
The warp-specialised FlashAttention kernel: a tile grid whose plan says `consumers = N`
(`tile_plan.warp_specialized_attention`) printed in Gluon, FlashAttention-3's schedule
on Hopper.

The grid's tile program is the ordinary one tile-and-fuse builds (64 query rows, a loop
over key tiles carrying the running max, the row sums and the output accumulator). It is
printed as three functions and the kernel that forks them (`gl.warp_specialize`):

- the **producer** (one warp) walks the key loops of the program's first tile and loads
  every key and value tile by TMA into a ring of shared-memory slots (an mbarrier per slot
  the copy completes; another each consumer arrives on when it is done with the slot);
- each of the N **consumers** (a warpgroup, 64 query rows: tile `N * program + c`) prints
  the tile program itself, except: the Q tile is stored to shared memory once; the two
  contractions are asynchronous `warpgroup_mma`s reading K and V from the ring; and each
  key loop runs software-pipelined: iteration t issues S_t = Q K_t^T and O += P_{t-1}
  V_{t-1}, waits for S_t only, computes the softmax step of S_t (the loop body's other
  ops, printed once as a helper function) while the P V product runs, then waits for it
  and rescales O. That is the loop body's own arithmetic reordered: the body computes
  O_t = corr_t * O_{t-1} + P_t V_t, the pipeline (O_{t-1} + P_{t-1} V_{t-1}) * corr_t,
  the same value after the last tile's product is added.

The consumers' tiles share their batch and head and their key loops: the plan admits a
grid whose query tiles come in pairs of one batch and head, and key loops whose bounds do
not depend on the query tile (no causal bound), which the printer checks again here
(`NotWarpSpecialized` otherwise: the group is then printed as a Triton kernel).

Gluon's tensor vocabulary is Triton's under another module: the consumer's ops are printed
by the Triton printer and each line's `tl.<name>` becomes `gl.<name>` (`GLUON_NAMES`; a
name Gluon lacks refuses the lowering), the prelude's helpers their Gluon twins
(`GLUON_PRELUDE`). Tensors the printer makes without a layout (aranges, fills) get theirs
from the MMA results they meet (Gluon's layout inference); the carried values are given
theirs explicitly.

Under `TRITON_INTERPRET=1` Gluon does not run: the host launches the Triton kernel of the
same tile program there (`module.py`), and both are tested for the same numbers.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace

from xdsl.dialects import arith, scf, tensor
from xdsl.dialects.builtin import IntegerAttr, TensorType
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Operation, SSAValue

from tilefuse.analysis.dataflow import is_contraction
from tilefuse.backend.triton.generic import GenericPrinter
from tilefuse.backend.triton.kernel import KernelPrinter, without_dead_values
from tilefuse.backend.triton.signature import POINTER, KernelSignature
from tilefuse.ir.dtypes import dtype_bytes
from tilefuse.ir.structured import as_structured, element_type
from tilefuse.ir.tilefuse import GroupOp, LoadOp, TileGridOp

GLUON_NAMES = frozenset((
    "where", "exp", "exp2", "log", "log2", "maximum", "minimum", "full", "arange", "sum", "max",
    "min", "abs", "sqrt", "rsqrt", "fma", "erf", "floor", "ceil", "sin", "cos", "load", "store",
    "permute", "reshape", "expand_dims", "cdiv", "program_id", "static_range", "float32",
    "float64", "bfloat16", "float16", "int1", "int8", "int16", "int32", "int64", "uint8", "uint16",
    "uint32", "uint64",
))  # fmt: skip
"""`tl` names Gluon's language module has under the same name and meaning."""

KEEP_TL = frozenset(("PropagateNan", "constexpr"))
"""`tl` names a Gluon kernel uses as they are (Triton's enum and constexpr)."""

GLUON_TWINS = {"_max_nan": "_gl_max_nan", "_round_bf16": "_gl_round_bf16", "_to_bf16": "_gl_to_bf16",
               "_round_f16": "_gl_round_f16", "_to_f16": "_gl_to_f16", "_erf": "_gl_erf"}  # fmt: skip
"""Prelude helpers (`prelude.py`) and their Gluon twins (`GLUON_PRELUDE`): the GPU
branch of each, as Gluon never runs under the interpreter."""

GLUON_PRELUDE = '''
# Gluon (Hopper, warp-specialised attention): Triton 3.6 names the TMA copies
# async_copy_*, 3.9 async_load / async_store; thread_barrier became barrier.
from triton.experimental import gluon  # noqa: E402
from triton.experimental.gluon import language as gl  # noqa: E402
from triton.experimental.gluon.language.nvidia.hopper import (  # noqa: E402
    fence_async_shared,
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_wait,
)

_tma_load = getattr(tma, "async_load", None) or tma.async_copy_global_to_shared


@gluon.jit
def _gl_max_nan_combine(a, b):
    return gl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@gluon.jit
def _gl_max_nan(x, axis: gl.constexpr):
    return gl.reduce(x, axis, _gl_max_nan_combine)


@gluon.jit
def _gl_round_bf16(x):
    return x.to(gl.bfloat16).to(gl.float32)


@gluon.jit
def _gl_to_bf16(x):
    return x.to(gl.bfloat16)


@gluon.jit
def _gl_round_f16(x):
    return x.to(gl.float16).to(gl.float32)


@gluon.jit
def _gl_to_f16(x):
    return x.to(gl.float16)


# libdevice's erff: the values prelude._erf's GPU branch computes without a branch
# (Triton 3.6's libdevice; 3.9's has other coefficients for |x| >= 1.00296, within 1 ulp).
@gluon.jit
def _gl_erf(x):
    return gl.erf(x)
'''

_TL = re.compile(r"\btl\.(\w+)")
_HELPER = re.compile(r"\b(_\w+)\(")


class NotWarpSpecialized(Exception):
    """The tile program is not one this printer can print warp-specialised (why)."""


@dataclass(frozen=True)
class KeyLoop:
    """One loop over key tiles of the program, its parts by role."""

    loop: scf.ForOp
    k_load: LoadOp
    v_load: LoadOp
    scores: linalg.GenericOp
    """S = Q K^T of one key tile (its init a zero fill)."""
    output: linalg.GenericOp
    """O = P V + the rescaled accumulator."""
    rescale: linalg.GenericOp
    """The accumulator times the softmax correction (`output`'s init)."""
    acc: int
    """The output accumulator's position among the loop's carried values."""
    step_ops: tuple[Operation, ...]
    """The softmax step: every other op of the body, in order."""


@dataclass(frozen=True)
class AttentionProgram:
    grid: TileGridOp
    q_load: LoadOp
    loops: tuple[KeyLoop, ...]


def _contraction(op: Operation) -> bool:
    s = as_structured(op)
    return s is not None and is_contraction(s)


def analyze(grid: TileGridOp) -> AttentionProgram:
    """The program's Q load and key loops; `NotWarpSpecialized` if it has another form."""
    body = grid.body.block
    loops = [op for op in body.ops if isinstance(op, scf.ForOp)]
    if not loops:
        raise NotWarpSpecialized("no key loop")
    if any(isinstance(op, scf.ForOp) for loop in loops for op in loop.body.walk() if op is not loop):
        raise NotWarpSpecialized("a loop inside the key loop")
    parts = tuple(_key_loop(loop) for loop in loops)
    q = {p.scores.operands[0] for p in parts} | {p.scores.operands[1] for p in parts}
    q -= {p.k_load.result for p in parts}
    q_loads = [v.owner for v in q if isinstance(v.owner, LoadOp) and v.owner.parent_block() is body]
    if len(q) != 1 or len(q_loads) != 1:
        raise NotWarpSpecialized("the score products do not share one Q tile loaded before the loops")
    for p in parts:  # (the key tiles run along the scores' second dim: S = Q K^T)
        if p.scores.operands[0] is not q_loads[0].result:
            raise NotWarpSpecialized("Q is not the score product's first operand")
    if any(use.operation not in {p.scores for p in parts} for use in q_loads[0].result.uses):
        # (the kernel keeps Q in shared memory in its storage type, for the products only)
        raise NotWarpSpecialized("the Q tile is read by other ops than the score products")
    return AttentionProgram(grid, q_loads[0], parts)


def _key_loop(loop: scf.ForOp) -> KeyLoop:
    body = loop.body.block
    loads = [op for op in body.ops if isinstance(op, LoadOp)]
    dots = [op for op in body.ops if _contraction(op)]
    if len(loads) != 2 or len(dots) != 2:
        raise NotWarpSpecialized("a key loop body with other loads or products than K, V and two")
    scores, output = dots
    k_load, v_load = loads
    if k_load.result not in scores.operands[:2] or v_load.result is not output.operands[1]:
        raise NotWarpSpecialized("the K and V tiles are not the products' key operands")
    rescale = output.outputs[0].owner if isinstance(output, linalg.GenericOp) else None
    yielded = list(body.last_op.operands) if isinstance(body.last_op, scf.YieldOp) else []
    if not isinstance(rescale, linalg.GenericOp) or output.results[0] not in yielded:
        raise NotWarpSpecialized("the P x V product does not accumulate into a rescaled carried value")
    acc = yielded.index(output.results[0])
    if body.args[1 + acc] not in rescale.operands or len(rescale.inputs) != 2:
        raise NotWarpSpecialized("the accumulator's rescale is not the carried value times a factor")
    init = scores.outputs[0].owner
    skip = {k_load, v_load, scores, output, rescale, body.last_op}
    if isinstance(init, Operation) and init.parent_block() is body and len(list(scores.outputs[0].uses)) == 1:
        skip.add(init)
        if isinstance(init, linalg.GenericOp) and init.outputs and isinstance(init.outputs[0].owner, Operation):
            skip.add(init.outputs[0].owner)  # (the fill's tensor.empty)
    step = tuple(op for op in body.ops if op not in skip)
    return KeyLoop(loop, k_load, v_load, scores, output, rescale, acc, step)


def gluon_line(line: str) -> str:
    """A line the Triton printer wrote, in Gluon's names (`NotWarpSpecialized` for a
    name Gluon has not)."""

    def name(m: re.Match) -> str:
        n = m[1]
        if n in KEEP_TL:
            return m[0]
        if n not in GLUON_NAMES:
            raise NotWarpSpecialized(f"tl.{n} has no Gluon counterpart here")
        return f"gl.{n}"

    def helper(m: re.Match) -> str:
        return f"{GLUON_TWINS.get(m[1], m[1])}("

    return _HELPER.sub(helper, _TL.sub(name, line))


class _GluonPrinter(KernelPrinter):
    """The Triton kernel printer writing Gluon: its lines translated (`gluon_line`);
    helpers the printed ops call must have Gluon twins."""

    def emit(self, line: str) -> None:
        line = gluon_line(line)
        super().emit(line)
        for h in _HELPER.findall(line):
            if h.startswith("_") and h not in GLUON_TWINS.values() and not h.startswith("_tma"):
                raise NotWarpSpecialized(f"the helper {h} has no Gluon twin")


@dataclass
class WarpSpecialized:
    """The printed kernel and what launching it takes."""

    text: str
    signature: KernelSignature


class AttentionPrinter:
    """Prints `program` (a group's only grid) as the warp-specialised kernel `name`."""

    def __init__(self, name: str, group: GroupOp, program: AttentionProgram, consumers: int):
        self.name, self.group, self.p, self.consumers = name, group, program, consumers
        grid = program.grid
        plan = grid.plan
        assert plan is not None
        self.stages = grid.num_stages.value.data
        q_tile = [n for n in program.q_load.result.type.get_shape() if n != 1]
        k_tile = [n for n in program.loops[0].k_load.result.type.get_shape() if n != 1]
        v_tile = [n for n in program.loops[0].v_load.result.type.get_shape() if n != 1]
        if len(q_tile) != 2 or len(k_tile) != 2 or len(v_tile) != 2:
            raise NotWarpSpecialized("Q, K or V tiles are not 2-D")
        self.bm, self.d = q_tile
        self.bn, self.dv = v_tile
        if k_tile != [self.bn, self.d]:
            raise NotWarpSpecialized("K's tile is not [key tile, head dim]")
        dtype = element_type(program.q_load.source.type)
        if dtype_bytes(program.q_load.source.type) != 2 or any(
                element_type(loop.k_load.source.type) != dtype or element_type(loop.v_load.source.type) != dtype
                for loop in program.loops):  # fmt: skip
            raise NotWarpSpecialized("Q, K and V are not of one 16-bit type")
        self.dtype = "gl.bfloat16" if str(dtype) == "bf16" else "gl.float16"
        for loop in program.loops:  # (the rings' and Q's shared-memory tiles are [rows, head])
            _check_order(loop.scores, 0, "Q", reduced_last=True)
            _check_order(loop.scores, 1, "K", reduced_last=True)
            _check_order(loop.output, 1, "V", reduced_last=False)
        ks = {(loop.k_load.source, loop.v_load.source) for loop in program.loops}
        if len(ks) != 1:
            raise NotWarpSpecialized("the key loops read other K or V tensors")
        (self.k_source, self.v_source), = ks
        self.fastest = KernelPrinter._id_order(grid, range(len(grid.grid_shape)))[-1]
        """The query tiles' grid dim (the fastest program id: `_check_pairs`)."""
        self._check_pairs()

    def _check_pairs(self) -> None:
        """The consumers' consecutive tiles share batch, head and key loops: the query dim
        is the fastest program id with an even tile count (a run-time count is rounded up
        to one: the last program's second tile lies past the rows, its loads and stores
        masked as any edge tile's), and no key loop bound nor K/V offset depends on it."""
        grid = self.p.grid
        fastest = self.fastest
        if grid.grid_shape[fastest] >= 0 and grid.grid_shape[fastest] % self.consumers:
            raise NotWarpSpecialized("an odd number of query tiles")
        q_pid = grid.program_ids[fastest]
        rows = self.bm * self.consumers
        self.causal = any(_reads_pair(v, q_pid, rows) for loop in self.p.loops
                          for v in (loop.loop.lb, loop.loop.ub))  # fmt: skip
        """Key loops bounded by the program's rows (a causal mask): programs run from the
        last (the longest loops) to the first, so the short ones fill the last wave."""
        for loop in self.p.loops:
            for v in (loop.loop.lb, loop.loop.ub, loop.loop.step, *loop.k_load.offsets, *loop.v_load.offsets):
                if _depends_on(v, q_pid, rows):
                    raise NotWarpSpecialized("a key loop bound or K/V offset depends on the query tile")

    # -- the kernel -------------------------------------------------------------------

    def print(self) -> WarpSpecialized:
        steps = [self._step_helper(i, loop) for i, loop in enumerate(self.p.loops)]
        consumer, loader = self._consumer(steps), self._loader()
        # (the parameters as the Triton kernel's from what the partitions read: an input
        # read only for a size passes that size alone, a size none names is the host's)
        triton = self._printer().signature([*consumer, *loader])
        names = [p.name for p in triton.params]
        ring = "k_smem, v_smem, k_ready, k_empty, v_ready, v_empty"
        consumer_text = "\n".join(["@gluon.jit", f"def {self.name}_consumer({', '.join(names)}, {ring}, q_smem, "
                                                  "consumer: gl.constexpr):", *consumer])  # fmt: skip
        loader_text = "\n".join(["@gluon.jit", f"def {self.name}_loader({', '.join(names)}, {ring}):", *loader])
        k_index = list(self.group.entry.args).index(self.k_source)
        v_index = list(self.group.entry.args).index(self.v_source)
        described = [p if p.kind is not POINTER or p.tensor not in (k_index, v_index)
                     else replace(p, descriptor=True) for p in triton.params]  # fmt: skip
        sig = KernelSignature(self.name, tuple(described), 4, self.stages, *self._programs(triton),
                              whole_sizes=triton.whole_sizes,  # (checked at launch, as the twin's)
                              host_sizes=triton.host_sizes)  # fmt: skip
        entry = self._entry(names, sig.unspecialized)
        text = "\n\n\n".join([*(st.text for st in steps), loader_text, consumer_text, entry])
        return WarpSpecialized(text, sig)

    def _programs(self, triton: KernelSignature) -> tuple[int, tuple[tuple[str, int], ...]]:
        """The launch's programs (`KernelSignature.programs`, `grid_sizes`) from the
        signature of the grid printed with its query tiles in groups (`triton`, whose
        run-time query count is already in groups' rows): a program a group."""
        shape = self.p.grid.grid_shape
        if not self.p.grid.sizes:
            return math.prod(shape) // self.consumers, ()
        static = triton.programs // self.consumers if shape[self.fastest] >= 0 else triton.programs
        return static, triton.grid_sizes

    def _printer(self) -> _GluonPrinter:
        """A printer of the grid's ops in Gluon, its query tiles counted in groups."""
        pr = _GluonPrinter(self.name, self.group, [self.p.grid])
        pr.tiles_together = {self.fastest: self.consumers}
        return pr

    def _program(self) -> str:
        """The program's index: launch order, or reversed (`causal`)."""
        if not self.causal:
            return "gl.program_id(0)"
        if self.p.grid.sizes:
            return "(gl.num_programs(0) - 1 - gl.program_id(0))"
        return f"({math.prod(self.p.grid.grid_shape) // self.consumers - 1} - gl.program_id(0))"

    def _layouts(self) -> list[str]:
        bm, bn, dv = self.bm, self.bn, self.dv
        return [
            f"s_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], "
            f"instr_shape=[16, {bn}, 16])",
            f"o_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], "
            f"instr_shape=[16, {dv}, 16])",
            "p_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=o_layout, k_width=2)",
            "row_s: gl.constexpr = gl.SliceLayout(1, s_layout)",
            "row_o: gl.constexpr = gl.SliceLayout(1, o_layout)",
            f"q_layout: gl.constexpr = {_blocked(bm, self.d)}",
        ]

    def _smem_layout(self, block: list[int]) -> str:
        return f"gl.NVMMASharedLayout.get_default_for({block}, {self.dtype})"

    def _entry(self, names: list[str], unspecialized: tuple[str, ...]) -> str:
        """The kernel: shared memory and barriers made, the partitions forked
        (`unspecialized`: parameters Triton must not specialise, run-time sizes)."""
        c, st = self.consumers, self.stages
        bm, d = self.bm, self.d
        kb, vb = self._box(self.k_source), self._box(self.v_source)
        ring = ("k_smem", "v_smem", "k_ready", "k_empty", "v_ready", "v_empty")
        lines = [
            f"@gluon.jit(do_not_specialize={list(unspecialized)!r})" if unspecialized else "@gluon.jit",
            f"def {self.name}({', '.join(names)}):",
            f"    q_smem = gl.allocate_shared_memory({self.dtype}, [{c}, {bm}, {d}], {self._smem_layout([bm, d])})",
            f"    k_smem = gl.allocate_shared_memory({self.dtype}, {[st, *kb]}, {self._smem_layout(kb)})",
            f"    v_smem = gl.allocate_shared_memory({self.dtype}, {[st, *vb]}, {self._smem_layout(vb)})",
        ]
        for bar in ring[2:]:
            lines.append(f"    {bar} = gl.allocate_shared_memory(gl.int64, [{st}, 1], mbarrier.MBarrierLayout())")
        lines.append(f"    for i in gl.static_range({st}):")
        for bar in ring[2:]:
            count = c if bar.endswith("empty") else 1
            lines.append(f"        mbarrier.init({bar}.index(i), count={count})")
        args = ", ".join([*names, *ring])
        parts = [f"        ({self.name}_consumer, ({args}, q_smem, {i})),"
                 for i in range(c)]  # fmt: skip
        warps, regs = [4] * (c - 1) + [1], [240] * (c - 1) + [24]
        lines += ["    gl.warp_specialize([", *parts, f"        ({self.name}_loader, ({args},)),",
                  f"    ], {warps}, {regs})"]  # fmt: skip
        lines.append(f"    for i in gl.static_range({st}):")
        for bar in ring[2:]:
            lines.append(f"        mbarrier.invalidate({bar}.index(i))")
        return "\n".join(lines)

    def _loader(self) -> list[str]:
        """The producer's body: the program's first tile's key loops, each key and value
        tile into the next ring slot once both consumers are done with it."""
        pr = self._printer()
        grid = self.p.grid
        pr.assign("pid", f"{self._program()} * {self.consumers}")
        pr.print_program_ids(grid, "pid")
        for op in grid.body.block.ops:
            if _is_scalar(op):
                pr.print_op(op)
        k, v = self.k_source, self.v_source
        descs = {}
        for src, box in ((k, self._box(k)), (v, self._box(v))):
            descs[src] = pr.names.fresh(f"{pr.base[src]}_desc")
            shape = [str(n) if n >= 0 else pr.sizes[(src, i)] for i, n in enumerate(src.type.get_shape())]
            strides = [*pr.strides[src][:-1], "1"]
            pr.assign(descs[src], f"tma.make_tensor_descriptor({pr.ptr[src]}, shape=[{', '.join(shape)}], "
                                  f"strides=[{', '.join(strides)}], block_shape={box}, "
                                  f"layout={self._smem_layout(box)})")  # fmt: skip
        pr.assign("it", "0")
        st = self.stages
        for loop in self.p.loops:
            lp = loop.loop
            iv = pr.names(lp.body.block.args[0], "k")
            pr.emit(f"for {iv} in range({pr.ref(lp.lb)}, {pr.ref(lp.ub)}, {pr.ref(lp.step)}):")
            pr.push()
            for op in lp.body.block.ops:
                if _is_scalar(op):
                    pr.print_op(op)
            pr.assign("slot", f"it % {st}")
            pr.assign("phase", f"((it // {st}) & 1) ^ 1")
            for src, load, ring in ((k, loop.k_load, "k"), (v, loop.v_load, "v")):
                at = ", ".join(pr.ref(o) for o in load.offsets)
                pr.emit(f"mbarrier.wait({ring}_empty.index(slot), phase)")
                pr.emit(f"mbarrier.expect({ring}_ready.index(slot), {2 * math.prod(self._box(src))})")
                pr.emit(f"_tma_load({descs[src]}, [{at}], {ring}_ready.index(slot), {ring}_smem.index(slot))")
            pr.assign("it", "it + 1")
            pr.pop()
        return pr.lines

    def _box(self, src: SSAValue) -> list[int]:
        """The TMA box of `src`'s tiles: the load's tile, unit dims included."""
        load = self.p.loops[0].k_load if src is self.k_source else self.p.loops[0].v_load
        return list(load.result.type.get_shape())

    def _step_helper(self, i: int, loop: KeyLoop) -> _Step:
        """The softmax step of key loop `i` as a helper function: the body's ops besides
        the loads, the two products and the rescale, from the score tile `s` and the key
        offset `k` to the values the rest of the body reads (the probabilities, the
        correction, the carried values' next ones)."""
        body = loop.loop.body.block
        hp = self._printer()
        mine = {r for op in loop.step_ops for r in op.results}
        inner = {r for op in loop.step_ops for o in op.walk() for r in o.results} | mine
        params: list[str] = ["s", "k"]
        hp.names.of[loop.scores.results[0]] = "s"
        hp.names.of[body.args[0]] = "k"
        hp.names.used |= {"s", "k"}
        carried = [j for j in range(len(body.args) - 1) if j != loop.acc]
        for j in carried:
            name = hp.names.fresh(f"c{j}")
            hp.names.of[body.args[1 + j]] = name
            params.append(name)
        free: list[SSAValue] = []
        for op in loop.step_ops:
            for o in op.walk():
                for v in o.operands:
                    if v in inner or v in hp.names.of or v in free or _in_region_of(v, loop.step_ops):
                        continue
                    if isinstance(v.owner, Operation) and v.owner.parent_block() is body:
                        raise NotWarpSpecialized("the softmax step reads a value of the key loop's other ops")
                    free.append(v)
        for n, v in enumerate(free):
            name = hp.names.fresh(f"x{n}")
            hp.expr.pop(v, None)  # (a run-time size is a kernel parameter: the helper's own here)
            hp.names.of[v] = name
            params.append(name)
        for op in loop.step_ops:
            hp.print_op(op)
        readers = [loop.rescale, loop.output, body.last_op]
        returned = list(dict.fromkeys(v for r in readers for v in r.operands
                                      if v in mine and not isinstance(v.owner, tensor.EmptyOp)))
        hp.emit(f"return {', '.join(hp.ref(v) for v in returned)}")
        if any("gl.load(" in line or "gl.store(" in line for line in hp.lines):
            raise NotWarpSpecialized("the softmax step reads or writes memory")
        name = f"{self.name}_step{i}"
        text = "\n".join(["@gluon.jit", f"def {name}({', '.join(params)}):",
                          *without_dead_values(hp.lines)])  # fmt: skip
        return _Step(name, text, carried, free, returned)

    def _consumer(self, steps: list[_Step]) -> list[str]:
        """One consumer warpgroup's body: the tile program of tile `consumers * program +
        consumer`, its key loops pipelined."""
        pr = self._printer()
        grid = self.p.grid
        pr.names.used |= {"consumer", "q_tile", "s", "p_op", "it", "slot", "phase", "prev_slot", "prev_phase"}
        pr.assign("pid", f"{self._program()} * {self.consumers} + consumer")
        pr.print_program_ids(grid, "pid")
        for line in self._layouts():
            pr.emit(line)
        pr.assign("q_tile", "q_smem.index(consumer)")
        pr.assign("it", "0")
        loops = {lp.loop: (lp, st) for lp, st in zip(self.p.loops, steps, strict=True)}
        for op in grid.body.block.ops:
            if op is self.p.q_load:
                # (its offsets only its own: they take the Q tile's layout, which no
                # other tile of the program has)
                pr.scopes.append({})
                pr.print_op(op)
                pr.scopes.pop()
                pr.emit(f"q_tile.store(gl.set_auto_layout({pr.ref(op.result)}, q_layout))")
                pr.emit("fence_async_shared()")
            elif isinstance(op, scf.ForOp):
                self._key_loop(pr, *loops[op])
            else:
                pr.print_op(op)
        return without_dead_values(pr.lines)

    def _key_loop(self, pr: _GluonPrinter, loop: KeyLoop, step: _Step) -> None:
        """A key loop, pipelined (the module docstring): a first tile, the rest in a loop,
        the last P x V product after it."""
        lp, body = loop.loop, loop.loop.body.block
        bn = self.bn
        names = []
        for j, (init, res) in enumerate(zip(lp.iter_args, lp.results, strict=True)):
            layout = "o_layout" if j == loop.acc else "row_s"
            y = body.last_op.operands[j]
            hint = res.name_hint or y.name_hint or ("acc" if j == loop.acc else "carried")
            name = pr.names.fresh(hint)
            made = isinstance(init.owner, Operation) and not isinstance(init.owner, scf.ForOp)
            fix = "gl.set_auto_layout" if made else "gl.convert_layout"
            pr.assign(name, f"{fix}({pr.ref(init)}, {layout})")
            pr.names.of[body.args[1 + j]] = pr.names.of[res] = name
            names.append(name)
        acc = names[loop.acc]
        lb, ub, stp = pr.ref(lp.lb), pr.ref(lp.ub), pr.ref(lp.step)
        tiles = pr.assign(pr.names.fresh("tiles"), f"({ub} - {lb} + {stp} - 1) // {stp}")
        iv = pr.names(body.args[0], "k")
        zero = f"gl.zeros([{self.bm}, {bn}], gl.float32, layout=s_layout)"
        pr.emit(f"if {tiles} > 0:")
        pr.push()
        pr.assign(iv, lb)
        self._slot(pr, "it", "slot", "phase")
        pr.emit("mbarrier.wait(k_ready.index(slot), phase)")
        pr.assign("s", f"warpgroup_mma(q_tile, k_smem.index(slot).reshape([{bn}, {self.d}]).permute((1, 0)), {zero}, use_acc=False, "
                       "is_async=True)")  # fmt: skip
        pr.assign("s", "warpgroup_mma_wait(0, deps=(s, ))")
        pr.emit("mbarrier.arrive(k_empty.index(slot), count=1)")
        self._step(pr, loop, step, iv, names)
        pr.assign("it", "it + 1")
        tv = pr.names.fresh("t")
        pr.emit(f"for {tv} in range(1, {tiles}):")
        pr.push()
        pr.assign(iv, f"{lb} + {tv} * {stp}")
        self._slot(pr, "it", "slot", "phase")
        self._slot(pr, "it - 1", "prev_slot", "prev_phase")
        pr.emit("mbarrier.wait(k_ready.index(slot), phase)")
        pr.assign("s", f"warpgroup_mma(q_tile, k_smem.index(slot).reshape([{bn}, {self.d}]).permute((1, 0)), {zero}, use_acc=False, "
                       "is_async=True)")  # fmt: skip
        pr.emit("mbarrier.wait(v_ready.index(prev_slot), prev_phase)")
        pr.assign(acc, f"warpgroup_mma(p_op, v_smem.index(prev_slot).reshape([{bn}, {self.dv}]), {acc}, is_async=True)")
        pr.assign("s", "warpgroup_mma_wait(1, deps=(s, ))")
        pr.emit("mbarrier.arrive(k_empty.index(slot), count=1)")
        self._step(pr, loop, step, iv, names, drained=True)
        pr.assign("it", "it + 1")
        pr.pop()
        self._slot(pr, "it - 1", "prev_slot", "prev_phase")
        pr.emit("mbarrier.wait(v_ready.index(prev_slot), prev_phase)")
        pr.assign(acc, f"warpgroup_mma(p_op, v_smem.index(prev_slot).reshape([{bn}, {self.dv}]), {acc}, is_async=True)")
        pr.assign(acc, f"warpgroup_mma_wait(0, deps=({acc}, ))")
        pr.emit("mbarrier.arrive(v_empty.index(prev_slot), count=1)")
        pr.pop()
        if loop is self.p.loops[-1]:  # (the epilogue meets them with the accumulator)
            for j, name in enumerate(names):
                if j != loop.acc:
                    pr.assign(name, f"gl.convert_layout({name}, row_o)")

    def _step(self, pr: _GluonPrinter, loop: KeyLoop, step: _Step, iv: str, names: list[str],
              drained: bool = False) -> None:  # fmt: skip
        """The softmax step's call, the accumulator's rescale (after the previous P x V
        product, when one is in flight: `drained`) and the next probabilities as the
        second product's register operand."""
        body = loop.loop.body.block
        acc = names[loop.acc]
        yielded = list(body.last_op.operands)
        targets = []
        for v in step.returned:
            at = [j for j, y in enumerate(yielded) if y is v and j != loop.acc]
            targets.append(names[at[0]] if at else pr.names.fresh(v.name_hint or "r"))
        args = ["s", iv, *(names[j] for j in step.carried), *(pr.ref(v) for v in step.free)]
        pr.emit(f"{', '.join(targets)}, = {step.name}({', '.join(args)})")
        for t in targets:
            pr.forget(t)
            pr.defined.add(t)
        for v, t in zip(step.returned, targets, strict=True):
            pr.names.of[v] = t
        if drained:
            pr.assign(acc, f"warpgroup_mma_wait(0, deps=({acc}, ))")
            self._slot(pr, "it - 1", "prev_slot", "prev_phase")
            pr.emit("mbarrier.arrive(v_empty.index(prev_slot), count=1)")
        factor = next(v for v in loop.rescale.inputs if v is not body.args[1 + loop.acc])
        pr.names.of[factor] = pr.assign(pr.names.fresh("corr"), f"gl.convert_layout({pr.ref(factor)}, row_o)")
        GenericPrinter(pr, as_structured(loop.rescale)).print()  # pyright: ignore[reportArgumentType]
        rescaled = pr.ref(loop.rescale.results[0])
        if rescaled != acc:
            pr.assign(acc, rescaled)
        p = pr.ref(loop.output.operands[0])
        pr.assign("p_op", f"gl.convert_layout(({p}).to({self.dtype}), p_layout)")

    def _slot(self, pr: _GluonPrinter, it: str, slot: str, phase: str) -> None:
        pr.assign(slot, f"({it}) % {self.stages}")
        pr.assign(phase, f"(({it}) // {self.stages}) & 1")


@dataclass(frozen=True)
class _Step:
    """A key loop's softmax-step helper: its name and text, the carried positions and the
    outer values it takes (after `s` and `k`), the values it returns."""

    name: str
    text: str
    carried: list[int]
    free: list[SSAValue]
    returned: list[SSAValue]


def _in_region_of(v: SSAValue, ops) -> bool:
    """Is `v` defined inside one of `ops`' regions (a payload's own value)?"""
    owner = v.owner if isinstance(v.owner, Operation) else v.owner.parent_op()
    while owner is not None:
        if owner in ops:
            return True
        owner = owner.parent_op()
    return False


def _check_order(op: linalg.GenericOp, i: int, name: str, reduced_last: bool) -> None:
    """Operand `i` of the product `op` is a tile stored [rows, head]: its last (non-unit)
    dim is the product's reduction dim (`reduced_last`: Q and K, whose head dim the
    score product sums) or its second-to-last is (V, whose key dim P x V sums): as the
    kernel reads it, a [head, rows] tile read as [rows, head] would be a wrong product."""
    s = as_structured(op)
    assert s is not None
    shape = op.operands[i].type.get_shape()
    kept = [d for d, n in zip(s.operand_dims(i), shape, strict=True) if n != 1]
    reduced = set(s.reduction_dims)
    ok = len(kept) == 2 and ((kept[1] in reduced and kept[0] not in reduced) if reduced_last
                             else (kept[0] in reduced and kept[1] not in reduced))  # fmt: skip
    if not ok:
        raise NotWarpSpecialized(f"{name} is not stored {'[rows, head dim]' if reduced_last else '[keys, width]'}")


def _depends_on(v: SSAValue, pid: SSAValue, rows: int) -> bool:
    """Does `v` depend on program id `pid` other than through `(pid * B) // rows` (the
    first row of the program's consumers' tiles, one value for all of them, the tiles
    `B` rows each and `rows / B` of them consecutive: `TileProgramBuilder._row_span`)?"""
    seen, todo = set(), [v]
    while todo:
        x = todo.pop()
        if x is pid:
            return True
        if x in seen:
            continue
        seen.add(x)
        op = x.owner
        if isinstance(op, arith.DivSIOp) and _constant(op.rhs) == rows and _tile_offset(op.lhs, pid, rows):
            continue
        if isinstance(op, Operation):
            todo.extend(op.operands)
    return False


def _reads_pair(v: SSAValue, pid: SSAValue, rows: int) -> bool:
    """Does `v` read the program's first row `(pid * B) // rows` (`_depends_on`)?"""
    seen, todo = set(), [v]
    while todo:
        x = todo.pop()
        if x in seen:
            continue
        seen.add(x)
        op = x.owner
        if isinstance(op, arith.DivSIOp) and _constant(op.rhs) == rows and _tile_offset(op.lhs, pid, rows):
            return True
        if isinstance(op, Operation):
            todo.extend(op.operands)
    return False


def _tile_offset(v: SSAValue, pid: SSAValue, rows: int) -> bool:
    """Is `v` `pid * B` with `B` a divisor of `rows`?"""
    op = v.owner
    if not isinstance(op, arith.MuliOp):
        return False
    a, b = op.operands
    block = _constant(b) if a is pid else _constant(a) if b is pid else None
    return block is not None and block > 0 and rows % block == 0


def _constant(v: SSAValue) -> int | None:
    op = v.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    return None


def _is_scalar(op: Operation) -> bool:
    """Index arithmetic and constants of a tile program (no tensors)."""
    return bool(op.results) and op.dialect_name() == "arith" and not any(
        isinstance(r.type, TensorType) for r in op.results)


def _blocked(rows: int, cols: int) -> str:
    """A coalesced blocked layout for a [rows, cols] 16-bit tile over 4 warps: 8
    elements (16 bytes) a thread along the row."""
    across = max(1, min(32, cols // 8))
    return f"gl.BlockedLayout([1, 8], [{32 // across}, {across}], [4, 1], [1, 0])"

