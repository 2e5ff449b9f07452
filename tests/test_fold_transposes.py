"""`fold-transposes` (and the permutation folding propagate-reshapes and flash-attention
share, `passes/permutations.py`): the meaning kept on the golden file's functions
(reference evaluator before and after), and timm's head split through the kernels
(interpreter) against eager, with no copy kernel left where every head is read by a
generic."""

import numpy as np
import pytest
import torch
from torch import nn

from tests.golden import golden_functions, results_around
from tilefuse.passes.fold_transposes import FoldTransposesPass


@pytest.mark.parametrize("name", sorted(golden_functions("fold_transposes.mlir")))
def test_the_pass_keeps_the_meaning(name):
    before, after = results_around(golden_functions("fold_transposes.mlir")[name], FoldTransposesPass())
    for b, a in zip(before, after, strict=True):
        np.testing.assert_array_equal(a, b)


class HeadSplit(nn.Module):
    """timm's attention: one qkv Linear, `reshape(B, N, 3, H, D).permute(2, 0, 3, 1, 4)`,
    the heads taken by `unbind` (or by indexing), softmax attention, heads merged."""

    def __init__(self, d: int, heads: int, index: bool = False, scale_q: bool = False,
                 return_heads: bool = False):  # fmt: skip
        super().__init__()
        self.qkv, self.proj, self.heads = nn.Linear(d, 3 * d), nn.Linear(d, d), heads
        self.index, self.scale_q, self.return_heads = index, scale_q, return_heads

    def forward(self, x):
        b, n, c = x.shape
        hd = c // self.heads
        qkv = self.qkv(x).reshape(b, n, 3, self.heads, hd).permute(2, 0, 3, 1, 4)
        q, k, v = (qkv[0], qkv[1], qkv[2]) if self.index else qkv.unbind(0)
        if self.scale_q:
            q = q * hd**-0.5
            a = q @ k.transpose(-2, -1)
        else:
            a = (q @ k.transpose(-2, -1)) * hd**-0.5
        y = self.proj((a.softmax(dim=-1) @ v).transpose(1, 2).reshape(b, n, c))
        return (y, qkv) if self.return_heads else y


@pytest.mark.parametrize(("index", "scale_q"), [(False, False), (True, False), (False, True)])
def test_timm_head_split_leaves_no_copy(index, scale_q):
    """The permuted qkv tensor is read by the attention through slices: no kernel copies
    it (was a kernel of its own, 40 us of ViT-B/16's block on an H100)."""
    pytest.importorskip("torch_mlir")
    import tilefuse.torch as tt

    torch.manual_seed(0)
    model, x = HeadSplit(32, 4, index, scale_q).eval(), torch.randn(2, 7, 32)
    with torch.no_grad():
        prog = tt.compile(model, x)
        got, want = prog(x), model(x)
    assert len(prog.program.kernels) == 3, prog.program.source  # qkv, attention, proj
    assert torch.allclose(got, want, rtol=1e-4, atol=1e-5)


def test_a_returned_permutation_is_still_copied_once():
    """Where the permuted tensor is also returned, it is made (one copy) and the heads
    are still read right."""
    pytest.importorskip("torch_mlir")
    import tilefuse.torch as tt

    torch.manual_seed(0)
    model, x = HeadSplit(32, 4, return_heads=True).eval(), torch.randn(2, 7, 32)
    with torch.no_grad():
        prog = tt.compile(model, x)
        (got, heads), (want, want_heads) = prog(x), model(x)
    assert torch.allclose(got, want, rtol=1e-4, atol=1e-5)
    assert torch.allclose(heads, want_heads, rtol=1e-4, atol=1e-5)
