"""tools/bench.py --quick runs on the CPU (interpreter, tiny sizes), so it cannot rot."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parent.parent


def test_bench_quick_runs_and_checks_correctness(tmp_path):
    out = tmp_path / "bench.json"
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "bench.py"), "--quick",
                        "--json", str(out)], capture_output=True, text=True, check=False)  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    data = json.loads(out.read_text())
    assert {row["case"] for row in data["results"]} >= {"relu_add_f32", "softmax_bf16"}
    for row in data["results"]:
        assert row["max_rel_error"] < 2e-2
        assert row["ours_ms"] > 0


def test_bench_models_quick_runs_and_checks_correctness(tmp_path):
    out = tmp_path / "models.json"
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "bench.py"), "--group", "models",
                        "--quick", "--json", str(out)], capture_output=True, text=True,
                       check=False)  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    rows = json.loads(out.read_text())["results"]
    assert {row["case"] for row in rows} == {"gpt2", "bert"}
    for row in rows:
        assert row["ours_error"] < 1e-4
        assert row["kernels_ours"] >= 1 and row["ours_ms"] > 0
