"""The static launcher's argument handling (launches themselves need a GPU:
tests/test_gpu_compile.py and the samples on the device)."""

import types

import pytest

from tilefuse.launcher import StaticLauncher, Unsupported, kernel_parameters


def _src(names, signature, constants=()):
    fn = types.SimpleNamespace(arg_names=list(names))
    return types.SimpleNamespace(fn=fn, signature=signature, constants=dict.fromkeys(constants, 1))


def test_constexprs_and_specialised_constants_are_not_parameters():
    # Triton 3.6 keys by name; a stride equal to 1 became a constant.
    src = _src(["x", "x_s0", "x_s1", "n", "y", "BLOCK"],
               {"x": "*bf16", "x_s0": "i32", "x_s1": "constexpr", "n": "i64", "y": "*fp32",
                "BLOCK": "constexpr"},
               constants=["x_s1"])  # fmt: skip
    assert kernel_parameters(src) == ([0, 1, 3, 4], "OilO")


def test_index_keys_and_tuple_constants():
    # Older Triton keys the signature by position and constants by 1-tuples.
    src = _src(["a", "b", "c"], {0: "*fp16", 1: "i32", 2: "fp32"}, constants=[(1,)])
    assert kernel_parameters(src) == ([0, 2], "Of")


def test_an_unknown_argument_type_is_refused():
    with pytest.raises(Unsupported, match="nvTmaDesc"):
        kernel_parameters(_src(["d"], {"d": "nvTmaDesc"}))


@pytest.mark.parametrize("metadata", [
    {"global_scratch_size": 128}, {"profile_scratch_size": 8}, {"launch_pdl": True},
    {"launch_cooperative_grid": True}, {"num_ctas": 2},
])  # fmt: skip
def test_kernels_needing_more_than_a_plain_launch_are_refused(metadata):
    meta = types.SimpleNamespace(num_warps=4, shared=0, **metadata)
    with pytest.raises(Unsupported):
        StaticLauncher(_src(["x"], {"x": "*fp32"}), meta)


def test_without_torch_s_launcher_triton_s_is_used():
    """The CPU build of torch has no `_StaticCudaLauncher`: constructing ours
    raises ImportError, which `static_launchers` answers with Triton's."""
    try:
        from torch._C import _StaticCudaLauncher  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError):
            StaticLauncher(_src([], {}), types.SimpleNamespace(num_warps=4, shared=0))
    else:
        pytest.skip("this torch has the static launcher")
