"""
The bottleneck's kernels with the 3x3 convolution's filter (`[F, C, KH, KW]`, read
by the kernel as `[F, C]` tiles per tap: C at stride KH x KW, loaded per element)
copied channels-innermost on the host first (`contiguous(channels_last)`: C at
stride 1), the kernels unchanged (they take strides); per-kernel CUDA time from the
profiler for both. (The experiment behind `choose-layouts`' `input_layouts`: run it
on a tree before that, where the compiled module does not copy the filter itself.)

    python tools/experiments/conv_weights_layout.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from conv_layout import compare, compiled_bottleneck


def filters_channels_last(source: str, names: list[str]) -> str:
    head = next(line for line in source.splitlines() if line.startswith("def Bottleneck("))
    copies = "".join(f"    {n} = {n}.contiguous(memory_format=torch.channels_last)\n" for n in names)
    return source.replace(head + "\n", head + "\n" + copies, 1)


def main() -> None:
    with torch.no_grad():
        compiled, tensors, ref = compiled_bottleneck()
        state = len(compiled.exported.state)
        filters = [f"arg{i}" for i, t in enumerate(tensors[:state]) if t.dim() == 4 and t.shape[-1] > 1]
        print("filters copied:", filters, [tuple(tensors[int(n[3:])].shape) for n in filters])
        compare([("as compiled", compiled.source),
                 ("filters channels-last", filters_channels_last(compiled.source, filters))], tensors, ref)  # fmt: skip


if __name__ == "__main__":
    main()
