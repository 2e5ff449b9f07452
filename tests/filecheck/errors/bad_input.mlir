// Bad input gives one located message, exit status 1, and no traceback.

// RUN: not tilefuse-opt %S/Inputs/malformed.mlir 2>&1 | filecheck %s --check-prefix=MALFORMED
// MALFORMED: malformed.mlir:2:23: error: {{.*}}
// MALFORMED-NOT: Traceback

// RUN: not tilefuse-opt %S/Inputs/unknown_op.mlir 2>&1 | filecheck %s --check-prefix=UNKNOWN
// UNKNOWN: unknown_op.mlir:2:16: error: Operation foo.bar is not registered
// UNKNOWN-NEXT: %y = foo.bar %x : tensor<4xf32>
// UNKNOWN-NOT: Traceback

// RUN: not tilefuse-opt %S/Inputs/type_mismatch.mlir 2>&1 | filecheck %s --check-prefix=TYPE
// TYPE: type_mismatch.mlir:3:129: error: operand is used with type tensor<5xf32>, but has been previously used or defined with type tensor<4xf32>

// RUN: not tilefuse-opt %S/Inputs/shape_mismatch.mlir -p linalg-generalize 2>&1 | filecheck %s --check-prefix=SHAPE
// SHAPE: shape_mismatch.mlir:3:3: error: 'linalg.generic' op {{.*}}
// SHAPE-NOT: Traceback

// RUN: not tilefuse-opt %S/Inputs/return_mismatch.mlir 2>&1 | filecheck %s --check-prefix=RETURN
// RETURN: return_mismatch.mlir:2:3: error: 'func.return' op {{.*}}

// RUN: not tilefuse-opt %S/Inputs/does_not_exist.mlir 2>&1 | filecheck %s --check-prefix=MISSING
// MISSING: error: cannot open '{{.*}}does_not_exist.mlir': No such file or directory

// RUN: not tilefuse-opt %S/Inputs/malformed.mlir -p no-such-pass 2>&1 | filecheck %s --check-prefix=PASS
// PASS: error: -p: unknown pass 'no-such-pass'; the passes are inline-calls, drop-unused-results, fold-host-scalars,

// RUN: not tilefuse-opt %S/Inputs/unknown_op.mlir --debug 2>&1 | filecheck %s --check-prefix=DEBUG
// DEBUG: Traceback

// RUN: not tilefuse-opt %S/Inputs/missing_function.mlir 2>&1 | filecheck %s --check-prefix=CALL
// CALL: missing_function.mlir:2:3: error: 'func.call' op '@g' could not be found in symbol table

// RUN: not tilefuse-run %S/Inputs/dynamic_shape.mlir 2>&1 | filecheck %s --check-prefix=DYNAMIC
// DYNAMIC: dynamic_shape.mlir:1:1: error: 'func.func' op has a dynamic shape (tensor<?x16xf32>): tilefuse compiles static shapes
// DYNAMIC-NOT: Traceback

// RUN: not tilefuse-opt %S/Inputs/integer_argument.mlir 2>&1 | filecheck %s --check-prefix=INTEGER
// INTEGER: integer_argument.mlir:1:1: error: 'func.func' op takes or returns tensor<8x16xi4>: kernels read and write tensors of f16, bf16, f32, f64, i1 (bool), i8, i16, i32 or i64
// INTEGER-NOT: Traceback

// RUN: not tilefuse-opt %S/Inputs/recursive_call.mlir -p inline-calls 2>&1 | filecheck %s --check-prefix=RECURSION
// RECURSION: recursive_call.mlir:2:3: error: 'func.call' op is still a call after 32 rounds of inlining: recursion cannot be compiled to kernels
// RECURSION-NOT: Traceback

// RUN: not tilefuse-opt %S/Inputs/call_declaration.mlir -p inline-calls 2>&1 | filecheck %s --check-prefix=DECLARATION
// DECLARATION: call_declaration.mlir:3:3: error: 'func.call' op calls @external, which has no body in this module

// RUN: not tilefuse-opt %S/Inputs/slice_out_of_range.mlir 2>&1 | filecheck %s --check-prefix=SLICE
// SLICE: slice_out_of_range.mlir:2:3: error: 'tensor.extract_slice' op reads [6, 9] step 1 of dimension 0 (size 8): a slice must step forward and stay inside its source

// RUN: not tilefuse-opt %S/Inputs/scalar_argument.mlir 2>&1 | filecheck %s --check-prefix=SCALAR
// SCALAR: scalar_argument.mlir:1:1: error: 'func.func' op takes or returns a scalar (f32): kernels read and write tensors; use a 0-d tensor (tensor<f32>)

// RUN: not tilefuse-opt %S/Inputs/signed_hex.mlir 2>&1 | filecheck %s --check-prefix=HEX
// HEX: signed_hex.mlir:2:29: error: A hexadecimal float literal is a bit pattern: it takes no sign
