"""`split-accumulator-init`: sums that started from a tensor start from zero, the tensor
added in their epilogue; through the kernels in the interpreter, against torch."""

import numpy as np
import pytest
import torch

from tests.device import on_device
from tilefuse.runtime.compiled import compile


def test_a_matmul_into_an_argument_adds_it_in_the_epilogue():
    """`c + a @ b` written as the matmul accumulating into `c` (a function argument):
    one kernel, `c` read in its epilogue, the sum as numpy's."""
    text = """
func.func @addmm(%a: tensor<24x40xf32>, %b: tensor<40x16xf32>, %c: tensor<24x16xf32>) -> tensor<24x16xf32> {
  %y = linalg.matmul ins(%a, %b : tensor<24x40xf32>, tensor<40x16xf32>) outs(%c : tensor<24x16xf32>) -> tensor<24x16xf32>
  func.return %y : tensor<24x16xf32>
}
"""
    prog = compile(text)
    assert len(prog.kernels) == 1
    assert "acc = tl.full(" in prog.source and "acc = tl.load(" not in prog.source  # (c: the epilogue's)
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(s).astype(np.float32) for s in ((24, 40), (40, 16), (24, 16)))
    (out,) = prog(*(on_device(torch.from_numpy(t)) for t in (a, b, c)))
    np.testing.assert_allclose(out.cpu().numpy(), c + a @ b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("bias", [True, False])
def test_a_convolution_with_a_bias_is_one_kernel(bias):
    """torch-mlir accumulates a convolution into its bias broadcast to the output: the
    broadcast was a kernel of its own writing the output-sized tensor; now the bias is
    added in the convolution's epilogue (one kernel with a bias or without)."""
    pytest.importorskip("torch_mlir")
    import tilefuse.torch as tt

    torch.manual_seed(0)
    conv, x = torch.nn.Conv2d(3, 8, 4, stride=4, bias=bias).eval(), torch.randn(2, 3, 16, 12)
    with torch.no_grad():
        prog = tt.compile(conv, x)
        got, want = prog(x), conv(x)
    assert len(prog.program.kernels) == 1
    assert torch.allclose(got, want, rtol=1e-4, atol=1e-5)
