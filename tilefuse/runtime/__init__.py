"""
The runtime: compile a program to Triton kernels and launch them on torch tensors.

```python
import tilefuse.runtime as tf
prog = tf.compile("samples/softmax.mlir")
(y,) = prog(x)
```

Importing this package switches Triton's interpreter on when there is no GPU (it must
be on before triton is first imported). `compiled` holds `compile` and the compiled
program, `launcher` the fast launch path, `autotune` the measured tile choice and
`bench` the side-by-side timing.
"""

from tilefuse.runtime.compiled import (
    CompiledProgram,
    cache_dir,
    compile,
    gpu_available,
    import_source,
)

__all__ = ["CompiledProgram", "cache_dir", "compile", "gpu_available", "import_source"]
