// RUN: tilefuse-opt %s -p fold-asserts --split-input-file | filecheck %s

// torch-mlir's gather bounds checks on an index the loop bounds prove in range
// (`linalg.index 1` of a loop of 32 against 32, and >= 0): erased, with the
// comparisons only they read; the extract they guarded stays.
// CHECK-LABEL: func.func @loop_index
// CHECK:       linalg.generic
// CHECK-NOT:   cf.assert
// CHECK-NOT:   arith.cmpi
// CHECK:       tensor.extract
func.func @loop_index(%t: tensor<4x32xf32>) -> tensor<4x32xf32> {
  %c32 = arith.constant 32 : index
  %c0 = arith.constant 0 : index
  %e = tensor.empty() : tensor<4x32xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<4x32xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %lt = arith.cmpi slt, %j, %c32 : index
    cf.assert %lt, "index must be smaller than dim size"
    %ge = arith.cmpi sge, %j, %c0 : index
    cf.assert %ge, "index must be larger or equal to 0"
    %x = tensor.extract %t[%i, %j] : tensor<4x32xf32>
    linalg.yield %x : f32
  } -> tensor<4x32xf32>
  func.return %r : tensor<4x32xf32>
}

// -----

// An index read from a tensor an arange computes (tiny GPT's positions: a
// generic yielding `linalg.index` cast to i64) is traced through the producer.
// CHECK-LABEL: func.func @arange_positions
// CHECK-NOT:   cf.assert
// CHECK:       func.return
func.func @arange_positions(%x: tensor<8xf32>) -> tensor<8xf32> {
  %c8 = arith.constant 8 : index
  %c0 = arith.constant 0 : i64
  %ei = tensor.empty() : tensor<8xi64>
  %pos = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} outs(%ei : tensor<8xi64>) {
  ^bb0(%o: i64):
    %i = linalg.index 0 : index
    %c = arith.index_cast %i : index to i64
    linalg.yield %c : i64
  } -> tensor<8xi64>
  %e = tensor.empty() : tensor<8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%pos, %x : tensor<8xi64>, tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%p: i64, %v: f32, %o: f32):
    %idx = arith.index_cast %p : i64 to index
    %lt = arith.cmpi slt, %idx, %c8 : index
    cf.assert %lt, "index must be smaller than dim size"
    %ge = arith.cmpi sge, %p, %c0 : i64
    cf.assert %ge, "index must be larger or equal to 0"
    %f = arith.sitofp %p : i64 to f32
    %y = arith.addf %v, %f : f32
    linalg.yield %y : f32
  } -> tensor<8xf32>
  func.return %r : tensor<8xf32>
}

// -----

// Checks on values the program does not bound stay for the kernels to check
// at run time: an index from an argument, torch-mlir's reciprocal check
// `x != 0` on a BatchNorm's sqrt(var + eps) (var may be negative, or -eps).
// A constant-true check (a comparison of constants) goes.
// CHECK-LABEL: func.func @runtime
// CHECK:       cf.assert %{{.*}}, "index must be smaller than dim size"
// CHECK:       cf.assert %{{.*}}, "unimplemented: tensor with zero element"
// CHECK-NOT:   cf.assert
// CHECK:       linalg.yield
func.func @runtime(%ids: tensor<8xi64>, %var: tensor<8xf32>) -> tensor<8xf32> {
  %c10 = arith.constant 10 : i64
  %c3 = arith.constant 3 : i64
  %zero = arith.constant 0.0 : f32
  %eps = arith.constant 1.0e-5 : f32
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%ids, %var : tensor<8xi64>, tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%i: i64, %v: f32, %o: f32):
    %lt = arith.cmpi slt, %i, %c10 : i64
    cf.assert %lt, "index must be smaller than dim size"
    %s = arith.addf %v, %eps : f32
    %q = math.sqrt %s : f32
    %nz = arith.cmpf one, %q, %zero : f32
    cf.assert %nz, "unimplemented: tensor with zero element"
    %k = arith.cmpi slt, %c3, %c10 : i64
    cf.assert %k, "constant"
    %inv = arith.divf %one, %q : f32
    linalg.yield %inv : f32
  } -> tensor<8xf32>
  func.return %r : tensor<8xf32>
}
