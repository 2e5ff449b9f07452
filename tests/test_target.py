"""Tests for the GPU target descriptions and their JSON loading."""

import json

import pytest

from tilefuse.analysis.cost.target import (
    DEFAULT_TARGET,
    Target,
    TargetError,
    get_target,
    target_for_device,
    target_names,
)


def test_builtin_names():
    assert target_names() == ["a100", "h100", "h100-datasheet", "h200", "h200-datasheet", "v100"]
    assert DEFAULT_TARGET == "h200"
    for name in target_names():
        target = get_target(name)
        assert target.name == name
        assert target.source


def test_shared_memory_numbers():
    # CUDA guide: 96/96 KB (cc 7.0), 164/163 KB (cc 8.0), 228/227 KB (cc 9.0).
    v100, a100, h100, h200 = (get_target(n) for n in ("v100", "a100", "h100", "h200"))
    assert (v100.smem_per_sm, v100.smem_per_block) == (98304, 98304)
    assert (a100.smem_per_sm, a100.smem_per_block) == (167936, 166912)
    assert (h100.smem_per_sm, h100.smem_per_block) == (233472, 232448)
    assert (h200.smem_per_sm, h200.smem_per_block) == (233472, 232448)
    assert v100.smem_reserved_per_block == 0
    assert h200.smem_reserved_per_block == 1024


def test_datasheet_rates():
    h100 = get_target("h100-datasheet")
    assert h100.hbm_bandwidth == 3.35e12
    assert h100.peak_flops("bf16", tensor_cores=True) == 989.4e12
    assert h100.peak_flops("f32", tensor_cores=False) == 66.9e12
    assert get_target("h200-datasheet").hbm_bandwidth == 4.8e12
    assert get_target("h200").hbm_bandwidth == 4.25e12
    # measured on a lent H100 (tools/experiments/target_rates.py)
    assert get_target("h100").hbm_bandwidth == 3.0e12
    assert get_target("h100").peak_flops("bf16", tensor_cores=True) == 688e12
    assert get_target("a100").peak_flops("tf32", tensor_cores=True) == 156e12


def test_ridge_points():
    # 989.4 / 3.35 = 295.34; 989.4 / 4.8 = 206.13; 780 / 4.25 = 183.53.
    assert get_target("h100-datasheet").ridge_point("bf16") == pytest.approx(295.34, abs=0.01)
    assert get_target("h100").ridge_point("bf16") == pytest.approx(229.33, abs=0.01)  # 688 / 3.0
    assert get_target("h200-datasheet").ridge_point("bf16") == pytest.approx(
        206.13, abs=0.01
    )
    assert get_target("h200").ridge_point("bf16") == pytest.approx(183.53, abs=0.01)
    # 66.9 / 3.35 = 19.97 FLOP/B on CUDA cores.
    assert get_target("h100-datasheet").ridge_point("f32", tensor_cores=False) == pytest.approx(
        19.97, abs=0.01
    )


def test_missing_dtype():
    with pytest.raises(TargetError, match="no tensor-core peak for dtype 'bf16'"):
        get_target("v100").peak_flops("bf16", tensor_cores=True)


def test_unknown_name_lists_known_names():
    with pytest.raises(TargetError) as info:
        get_target("h300")
    message = str(info.value)
    assert "'h300'" in message
    for name in target_names():
        assert name in message
    assert isinstance(info.value, ValueError)


def test_targets_are_hashable_and_immutable():
    h100 = get_target("h100")
    assert len({h100, get_target("h100"), get_target("h200")}) == 2
    with pytest.raises(TypeError):
        h100.peak_tensor_flops["bf16"] = 1.0  # type: ignore[index]


@pytest.mark.parametrize("name", ["v100", "a100", "h100", "h100-datasheet", "h200", "h200-datasheet"])
def test_json_round_trip(tmp_path, name):
    target = get_target(name)
    path = tmp_path / "t.json"
    path.write_text(target.to_json())
    assert get_target(str(path)) == target


def test_json_with_base(tmp_path):
    path = tmp_path / "fast-h200.json"
    path.write_text(
        json.dumps(
            {
                "base": "h200",
                "hbm_bandwidth": 4.8e12,
                "peak_tensor_flops": {"bf16": 989.4e12},
            }
        )
    )
    target = get_target(str(path))
    assert target.name == "fast-h200"
    assert target.hbm_bandwidth == 4.8e12
    assert target.peak_flops("bf16", tensor_cores=True) == 989.4e12
    # Untouched entries and fields come from the base.
    assert target.peak_flops("f16", tensor_cores=True) == 780e12
    assert target.sm_count == 132
    assert target.ridge_point("bf16") == pytest.approx(206.13, abs=0.01)


def test_json_full_without_base(tmp_path):
    fields = json.loads(get_target("a100").to_json())
    fields["name"] = "my-a100"
    del fields["smem_reserved_per_block"]
    path = tmp_path / "a.json"
    path.write_text(json.dumps(fields))
    target = get_target(str(path))
    assert target.name == "my-a100"
    assert target.smem_reserved_per_block == 0


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{", "is not valid JSON"),
        ("[1, 2]", "must hold a JSON object"),
        ('{"base": "h200", "sm_cuont": 1}', "unknown key 'sm_cuont'"),
        ('{"base": "h900"}', "unknown base 'h900'"),
        ('{"name": "x"}', "missing key"),
        ('{"base": "h200", "sm_count": -4}', "'sm_count' must be a positive integer"),
        ('{"base": "h200", "sm_count": 1.5}', "'sm_count' must be a positive integer"),
        ('{"base": "h200", "hbm_bandwidth": "fast"}', "'hbm_bandwidth'"),
        ('{"base": "h200", "hbm_bandwidth": NaN}', "'hbm_bandwidth'"),
        ('{"base": "h200", "launch_overhead": -1e-6}', "'launch_overhead'"),
        ('{"base": "h200", "peak_simt_flops": {"f32": 0}}', "'peak_simt_flops'"),
        ('{"base": "h200", "compute_capability": [9]}', "'compute_capability'"),
    ],
)
def test_bad_json(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(TargetError, match=message) as info:
        get_target(str(path))
    assert "bad.json" in str(info.value)


def test_missing_file(tmp_path):
    with pytest.raises(TargetError, match="cannot read target file"):
        get_target(str(tmp_path / "none.json"))


def test_direct_construction_is_checked():
    fields = {f: getattr(get_target("h100"), f) for f in get_target("h100").to_dict()}
    fields["warp_size"] = 0
    with pytest.raises(TargetError, match="'warp_size'"):
        Target(**fields)


@pytest.mark.parametrize(("device", "target"), [
    ("NVIDIA H100 80GB HBM3", "h100"),
    ("NVIDIA H200", "h200"),
    ("NVIDIA A100-SXM4-80GB", "a100"),
    ("Tesla V100-SXM2-16GB", "v100"),
    ("NVIDIA GeForce RTX 4090", DEFAULT_TARGET),  # (no built-in entry)
])  # fmt: skip
def test_a_gpu_is_compiled_for_by_its_name(device, target):
    assert target_for_device(device) == target


def test_auto_is_the_gpu_at_hand_or_the_default(monkeypatch):
    """`auto` (every runtime entry's default) names the GPU's target; in the
    interpreter, `DEFAULT_TARGET`; a named target is kept."""
    import torch

    from tilefuse.runtime import compiled

    assert compiled.resolve_target("a100") == "a100"
    monkeypatch.setattr(compiled, "gpu_available", lambda: False)
    assert compiled.resolve_target("auto") == DEFAULT_TARGET
    monkeypatch.setattr(compiled, "gpu_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *_: "NVIDIA H100 80GB HBM3")
    assert compiled.resolve_target("auto") == "h100"


def test_a_program_records_its_target():
    from tilefuse.runtime.compiled import compile

    text = "func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> { return %x : tensor<4xf32> }"
    assert compile(text).target == DEFAULT_TARGET
    assert compile(text, target="a100").target == "a100"
