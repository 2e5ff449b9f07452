// Programs xDSL parses and verifies but tilefuse cannot run: refused when the
// file is loaded, with one located message and exit status 1, no traceback.

// RUN: not tilefuse-opt %S/Inputs/use_before_def.mlir 2>&1 | filecheck %s --check-prefix=ORDER
// ORDER: use_before_def.mlir:3:3: error: 'linalg.add' op uses %later before it is defined by 'linalg.exp' at {{.*}}use_before_def.mlir:4:3
// ORDER-NOT: Traceback

// RUN: not tilefuse-opt %S/Inputs/undefined_value.mlir 2>&1 | filecheck %s --check-prefix=UNDEFINED
// UNDEFINED: undefined_value.mlir:3:29: error: use of undefined value %nowhere

// RUN: not tilefuse-run %S/Inputs/zero_size_dim.mlir 2>&1 | filecheck %s --check-prefix=ZERO
// ZERO: zero_size_dim.mlir:1:1: error: 'func.func' op has a zero-size dimension (tensor<4x0xf32>): tilefuse compiles tensors with at least one element along every dimension
// ZERO-NOT: Traceback

// RUN: not tilefuse-run %samples/softmax.mlir --set-dim N=0 2>&1 | filecheck %s --check-prefix=SETDIM
// SETDIM: error: --set-dim N=0: a dimension needs at least one element.

// RUN: not tilefuse-run %S/Inputs/declaration_only.mlir --check 2>&1 | filecheck %s --check-prefix=DECLARATION
// DECLARATION: declaration_only.mlir:1:1: error: 'func.func' op is a declaration, and no function of the file has a body: nothing to compile
// DECLARATION-NOT: Traceback

// RUN: not tilefuse-opt %S/Inputs/empty.mlir 2>&1 | filecheck %s --check-prefix=EMPTY
// EMPTY: error: {{.*}}empty.mlir has no func.func: nothing to compile

// RUN: not tilefuse-opt %S/Inputs 2>&1 | filecheck %s --check-prefix=DIRECTORY
// RUN: not tilefuse-run %S/Inputs 2>&1 | filecheck %s --check-prefix=DIRECTORY
// DIRECTORY: error: cannot open '{{.*}}Inputs': Is a directory
// DIRECTORY-NOT: Traceback

// RUN: not tilefuse-run %S/Inputs/reduce_dimension_range.mlir 2>&1 | filecheck %s --check-prefix=REDUCE
// REDUCE: reduce_dimension_range.mlir:2:3: error: 'linalg.reduce' op reduces dimensions [5], but its input has rank 2: each must be distinct, in [0, 2)
// REDUCE-NOT: Traceback

// RUN: not tilefuse-opt %S/Inputs/transpose_permutation.mlir 2>&1 | filecheck %s --check-prefix=TRANSPOSE
// TRANSPOSE: transpose_permutation.mlir:3:3: error: 'linalg.transpose' op has permutation [1, 5], which is not a permutation of the 2 dimensions of its input

// RUN: not tilefuse-run %S/Inputs/collapse_shape_count.mlir 2>&1 | filecheck %s --check-prefix=COLLAPSE
// COLLAPSE: collapse_shape_count.mlir:2:3: error: 'tensor.collapse_shape' op reshapes tensor<4x6xf32> into tensor<25xf32>: dimensions [0, 1] hold 24 elements, not 25

// RUN: not tilefuse-opt %S/Inputs/collapse_shape_groups.mlir 2>&1 | filecheck %s --check-prefix=GROUPS
// GROUPS: collapse_shape_groups.mlir:2:3: error: 'tensor.collapse_shape' op has reassociation {{\[\[0\], \[1\]\]}}: the 1-d shape needs one group per dimension, covering all 2 dimensions of the other in order

// RUN: not tilefuse-run %S/Inputs/expand_shape_output.mlir 2>&1 | filecheck %s --check-prefix=EXPAND
// EXPAND: expand_shape_output.mlir:2:3: error: 'tensor.expand_shape' op has output_shape [4, 1, 6], but its result type is tensor<2x2x6xf32>

// RUN: not tilefuse-run %S/Inputs/yield_type.mlir 2>&1 | filecheck %s --check-prefix=YIELD
// YIELD: yield_type.mlir:6:5: error: 'linalg.yield' op yields (i32), but the outputs of its 'linalg.generic' hold (f32)

// RUN: not tilefuse-opt %S/Inputs/memref_argument.mlir 2>&1 | filecheck %s --check-prefix=MEMREF
// MEMREF: memref_argument.mlir:1:1: error: 'func.func' op takes or returns memref<4xf32>: memrefs and unranked tensors are not supported; tilefuse compiles tensors with static shapes

// RUN: not tilefuse-opt %S/Inputs/unranked_argument.mlir 2>&1 | filecheck %s --check-prefix=UNRANKED
// UNRANKED: unranked_argument.mlir:1:1: error: 'func.func' op takes or returns tensor<*xf32>: memrefs and unranked tensors are not supported
