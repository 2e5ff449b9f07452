"""
The warp-specialised Gluon GEMM of `gemm_gluon.py` (`gemm_ws`) run on the CPU by the
Gluon emulator of the tests (`tests/gluon_emulator.py`: a thread a partition, mbarriers
with phases, arrival counts and transaction bytes, TMA copies landing as late as the
protocol allows, `warpgroup_mma`s computed at their wait with their shared-memory operands
checked unchanged, deadlocks and races raised), against torch's f32 reference of
`gemm_short_k.py`.

Every variant's BM/BN/BK/STAGES, every epilogue (bias, res, gelu), on shapes that give a
program several tiles and both consumers work, wrap each ring several times (steps >
2 x STAGES), take fewer steps than the ring has slots, leave programs or consumers without
a tile, and mask the epilogue (M and N not multiples of the tile). `bias`, `res` and `out`
lie inside NaN-filled storage: a pointer access past them shows as NaN or as a changed
guard. Then bugs planted in the kernel's text, each of which the run must catch (the
first version's shared ring among them).

    PYTHONPATH=$PWD python tools/experiments/gemm_gluon_emulated.py            # all
    PYTHONPATH=$PWD python tools/experiments/gemm_gluon_emulated.py --quick    # one variant
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent.parent)]

# (first: it imports tilefuse's runtime, which switches Triton's interpreter on before
# triton is imported; the kernel's module only needs triton importable)
from tests.gluon_emulator import emulate, host_descriptor  # noqa: E402, I001

from gemm_gluon import VARIANTS  # noqa: E402
from gemm_short_k import KINDS, _reference  # noqa: E402

SOURCE = (HERE / "gemm_gluon.py").read_text()
EPILOGUES = ["bias", "res", "gelu"]
PAD = 256
"""NaN elements before and after each pointer argument's elements."""


def shapes(bm: int, bn: int, bk: int, stages: int) -> list[tuple[str, int, int, int, int]]:
    """(what it exercises, M, N, K, programs) for a variant's tile."""
    return [
        # 7 x 2 = 14 tiles over 3 programs (5, 5, 4: consumers 3 + 2, 2 + 2), 7 steps:
        # each ring wraps 7+ times; the last row and column tiles masked, the last K step partial
        ("wrap, masked", 6 * bm + bm // 2, bn + 24, 7 * bk - 24, 3),
        # 3 x 3 = 9 tiles over 2 programs (5, 4), one K step (< STAGES)
        ("1 step, masked", 2 * bm + 8, 2 * bn + 40, bk // 2, 2),
        # 4 x 2 = 8 tiles over 3 programs (3, 3, 2), no mask, STAGES or STAGES + 1 steps
        ("exact", 4 * bm, 2 * bn, 3 * bk, 3),
        # 2 tiles over 3 programs: program 2 has none, consumer 1 none anywhere
        ("idle", bm + 1, bn, 2 * bk + 8, 3),
        # 5 x 1 tiles over 2 programs (3, 2), 2 steps, N less than the tile
        ("2 steps, narrow", 4 * bm + 3, bn // 2 + 8, bk + 8, 2),
    ]  # fmt: skip


def guarded(t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(storage, `t`'s copy inside it between NaN guards)."""
    buf = torch.full((t.numel() + 2 * PAD,), float("nan"), dtype=t.dtype)
    view = buf[PAD : PAD + t.numel()].view(t.shape)
    view.copy_(t)
    return buf, view


def operands(m: int, n: int, k: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(m, k, generator=g).bfloat16()
    w = (torch.randn(n, k, generator=g) / k**0.5).bfloat16()
    b = torch.randn(n, generator=g).bfloat16()
    r = torch.randn(m, n, generator=g).bfloat16()
    return x, w, b, r


def run_one(source: str, variant, kind: str, m: int, n: int, k: int, programs: int) -> str:
    """Runs the kernel once; '' if its output matches the reference, else what went wrong
    (an emulator error is raised)."""
    _, bm, bn, bk, stages, regs = variant
    x, w, b, r = operands(m, n, k)
    (bias_buf, bias), (res_buf, res) = guarded(b), guarded(r)
    out_buf, out = guarded(torch.full((m, n), float("nan"), dtype=torch.bfloat16))
    args = [host_descriptor(x, [bm, bk]), host_descriptor(w, [bn, bk]), bias, res, out, m, n, k]
    consts = dict(BM=bm, BN=bn, BK=bk, STAGES=stages, PROGRAMS=programs, KIND=KINDS[kind], REGS=regs)
    emulate(source, "gemm_ws", programs, args, consts)
    if not all(bool(torch.isnan(buf[:PAD]).all() and torch.isnan(buf[-PAD:]).all())
               for buf in (bias_buf, res_buf, out_buf)):  # fmt: skip
        return "a store past a pointer argument's elements"
    ref = _reference(x, w, b, r, kind)
    got = out.float()
    if torch.isnan(got).any():
        return f"{int(torch.isnan(got).sum())} outputs NaN (unwritten, or read past an argument)"
    err = (got - ref).abs().max().item()
    if not err < 0.05 * ref.abs().max().item():  # gemm_gluon.run's tolerance
        return f"max error {err:.3g} (|ref| <= {ref.abs().max().item():.3g})"
    if not ((got - ref).abs() <= 1e-2 * ref.abs() + 1e-2).all():  # (bf16 roundings only)
        return f"max error {err:.3g}: outside 1% + 0.01 of the reference"
    return ""


def check_all(variants) -> int:
    """Every variant x epilogue x shape; the number of failures."""
    failures = 0
    for variant in variants:
        name, bm, bn, bk, stages, _ = variant
        for label, m, n, k, programs in shapes(bm, bn, bk, stages):
            for kind in EPILOGUES:
                t0 = time.perf_counter()
                try:
                    why = run_one(SOURCE, variant, kind, m, n, k, programs)
                except Exception as e:  # (Deadlock, Race, a protocol assertion)
                    why = f"{type(e).__name__}: {e}"
                failures += bool(why)
                tiles = -(-m // bm) * -(-n // bn)
                print(f"{name:18s} {label:16s} {kind:4s} M{m} N{n} K{k} P{programs} ({tiles} tiles, "
                      f"{-(-k // bk)} steps): {why or 'ok'} [{time.perf_counter() - t0:.1f} s]", flush=True)  # fmt: skip
    return failures


PLANTED = {  # name: ((printed text, replacement), ...)
    "both consumers on ring 0 (the first version's fault)": (
        ("s = WG * STAGES + it % STAGES", "s = it % STAGES"),
        ("empty.index(WG * STAGES + (it - 1) % STAGES)", "empty.index((it - 1) % STAGES)")),
    "a slot released before its MMA's wait": (
        ("acc = warpgroup_mma_wait(1, deps=(acc,))\n            if k > 0:  # the previous step's MMA is done: its slot is free\n"
         "                mbarrier.arrive(empty.index(WG * STAGES + (it - 1) % STAGES), count=1)",
         "mbarrier.arrive(empty.index(s), count=1)\n            acc = warpgroup_mma_wait(1, deps=(acc,))"),
        ("        acc = warpgroup_mma_wait(0, deps=(acc,))\n        mbarrier.arrive(empty.index(WG * STAGES + (it - 1) % STAGES), count=1)",
         "        acc = warpgroup_mma_wait(0, deps=(acc,))")),
    "the ready wait's parity flipped": (
        ("mbarrier.wait(ready.index(s), (it // STAGES) & 1)", "mbarrier.wait(ready.index(s), ((it // STAGES) & 1) ^ 1)"),),
    "the empty wait's parity not flipped": (
        ("mbarrier.wait(empty.index(s), ((it // STAGES) & 1) ^ 1)", "mbarrier.wait(empty.index(s), (it // STAGES) & 1)"),),
    "a byte count one operand short": (
        ("a_desc.block_type.nbytes + b_desc.block_type.nbytes", "a_desc.block_type.nbytes"),),
    "the loader's count not per ring": (("it = (j // 2) * steps + k", "it = j * steps + k"),),
    "the last slot never released": (
        ("        acc = warpgroup_mma_wait(0, deps=(acc,))\n        mbarrier.arrive(empty.index(WG * STAGES + (it - 1) % STAGES), count=1)",
         "        acc = warpgroup_mma_wait(0, deps=(acc,))"),),
    "the epilogue unmasked": (("mask=mask, other=0.0)", "other=0.0)"), ("y.to(gl.bfloat16), mask=mask)", "y.to(gl.bfloat16))")),
    "the result read before the last MMA's wait": (("acc = warpgroup_mma_wait(0, deps=(acc,))", "pass"),),
}  # fmt: skip


def check_planted() -> int:
    """Each planted bug caught on the first variant's 'wrap, masked' shape, every
    epilogue; the number of bugs not caught."""
    variant = VARIANTS[0]
    _, m, n, k, programs = shapes(*variant[1:5])[0]
    missed = 0
    for name, edits in PLANTED.items():
        source = SOURCE
        for old, new in edits:
            assert source.count(old) >= 1, (name, old)
            source = source.replace(old, new)
        seen = []
        for kind in EPILOGUES:
            try:
                why = run_one(source, variant, kind, m, n, k, programs)
            except Exception as e:
                why = f"{type(e).__name__}: {str(e)[:100]}"
            seen.append(why)
        caught = all(seen)
        missed += not caught
        print(f"planted: {name}: {'caught' if caught else 'MISSED'} ({seen[0] or seen[-1]})", flush=True)
    return missed


def main(args: list[str]) -> int:
    variants = VARIANTS[:1] if "--quick" in args else VARIANTS
    failures = check_all(variants) if "--planted-only" not in args else 0
    missed = check_planted() if "--no-planted" not in args else 0
    print(f"{failures} failed runs, {missed} planted bugs missed")
    return 1 if failures or missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
