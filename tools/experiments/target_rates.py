"""
The rates a `Target` (tilefuse.analysis.cost.target) holds, measured on this GPU:
device-to-device copy bandwidth (bytes read + written), an 8192^3 GEMM in bf16, f16,
TF32 and plain f32 (random data), and the host's cost of launching an empty Triton
kernel from Python back to back (and an eager torch op, for scale):

    python3 tools/experiments/target_rates.py
"""

from __future__ import annotations

import time

import torch
import triton


@triton.jit
def _empty(x):
    pass


def median_ms(fn) -> float:
    return triton.testing.do_bench(fn, warmup=50, rep=300, return_mode="median")


def launch_us(fn, calls: int = 2000) -> float:
    fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - start) / calls * 1e6)
    return best


def main() -> None:
    props = torch.cuda.get_device_properties(0)
    print(f"device: {props.name}, {props.multi_processor_count} SMs, L2 {props.L2_cache_size} B, "
          f"{props.total_memory / 2**30:.1f} GiB")  # fmt: skip
    x = torch.randn(256 * 1024 * 1024, device="cuda")  # 1 GiB
    y = torch.empty_like(x)
    ms = median_ms(lambda: y.copy_(x))
    print(f"copy: {2 * x.numel() * 4 / (ms * 1e-3) / 1e12:.2f} TB/s")
    n = 8192
    for name, dtype, tf32 in (("bf16", torch.bfloat16, False), ("f16", torch.float16, False),
                              ("tf32", torch.float32, True), ("f32", torch.float32, False)):  # fmt: skip
        torch.backends.cuda.matmul.allow_tf32 = tf32
        a = torch.randn(n, n, device="cuda", dtype=dtype)
        b = torch.randn(n, n, device="cuda", dtype=dtype)
        ms = median_ms(lambda a=a, b=b: a @ b)
        print(f"gemm {name}: {2 * n**3 / (ms * 1e-3) / 1e12:.0f} TFLOP/s")
    torch.backends.cuda.matmul.allow_tf32 = False
    t = torch.zeros(1, device="cuda")
    print(f"launch: empty Triton kernel {launch_us(lambda: _empty[(1,)](t)):.1f} us, "
          f"eager torch op {launch_us(lambda: t.add_(1)):.1f} us")  # fmt: skip


if __name__ == "__main__":
    main()
