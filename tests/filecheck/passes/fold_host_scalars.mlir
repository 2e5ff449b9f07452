// RUN: tilefuse-opt %s --split-input-file -p fold-host-scalars | filecheck %s

// A scale computed on the host as 1 / sqrt(64) becomes the constant the
// payload captures.
// CHECK-LABEL: func.func @scale
// CHECK:       %[[S:.*]] = arith.constant 1.250000e-01 : f32
// CHECK-NOT:   math.sqrt
// CHECK-NOT:   arith.divf
// CHECK:       arith.mulf %{{.*}}, %[[S]] : f32
func.func @scale(%x: tensor<100xf32>) -> tensor<100xf32> {
  %a = arith.constant 64.0 : f32
  %b = math.sqrt %a : f32
  %one = arith.constant 1.0 : f32
  %scale = arith.divf %one, %b : f32
  %e = tensor.empty() : tensor<100xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : tensor<100xf32>) outs(%e : tensor<100xf32>) {
  ^bb0(%v: f32, %o: f32):
    %s = arith.mulf %v, %scale : f32
    linalg.yield %s : f32
  } -> tensor<100xf32>
  func.return %r : tensor<100xf32>
}

// -----

// Index arithmetic, cast to an integer and then to a float.
// CHECK-LABEL: func.func @index_sum
// CHECK:       arith.constant 7 : index
// CHECK:       arith.constant 7 : i64
// CHECK:       %[[F:.*]] = arith.constant 7.000000e+00 : f32
// CHECK:       linalg.fill ins(%[[F]] : f32)
func.func @index_sum() -> tensor<10xf32> {
  %c1 = arith.constant 3 : index
  %c2 = arith.constant 4 : index
  %c3 = arith.addi %c1, %c2 : index
  %i = arith.index_cast %c3 : index to i64
  %f = arith.sitofp %i : i64 to f32
  %e = tensor.empty() : tensor<10xf32>
  %r = linalg.fill ins(%f : f32) outs(%e : tensor<10xf32>) -> tensor<10xf32>
  func.return %r : tensor<10xf32>
}

// -----

// Each result is rounded to its own type: integers wrap at their width, a bf16
// truncation rounds to nearest even, an f16 quotient is the nearest f16.
// CHECK-LABEL: func.func @rounding
// CHECK:       arith.constant -56 : i8
// CHECK:       arith.constant 1.000000e+00 : bf16
// CHECK:       arith.constant 3.332520e-01 : f16
func.func @rounding() -> (tensor<i8>, tensor<bf16>, tensor<f16>) {
  %a = arith.constant 100 : i8
  %s = arith.addi %a, %a : i8
  %t = arith.constant 1.00390625 : f32
  %b = arith.truncf %t : f32 to bf16
  %one = arith.constant 1.0 : f16
  %three = arith.constant 3.0 : f16
  %q = arith.divf %one, %three : f16
  %e8 = tensor.empty() : tensor<i8>
  %f8 = linalg.fill ins(%s : i8) outs(%e8 : tensor<i8>) -> tensor<i8>
  %eb = tensor.empty() : tensor<bf16>
  %fb = linalg.fill ins(%b : bf16) outs(%eb : tensor<bf16>) -> tensor<bf16>
  %eh = tensor.empty() : tensor<f16>
  %fh = linalg.fill ins(%q : f16) outs(%eh : tensor<f16>) -> tensor<f16>
  func.return %f8, %fb, %fh : tensor<i8>, tensor<bf16>, tensor<f16>
}

// -----

// Ops the folder does not know (math.exp) stay for the kernel to compute, and
// so do scalar ops inside payloads; a tensor.cast to its source's own type
// disappears.
// CHECK-LABEL: func.func @left
// CHECK:       math.exp %{{.*}} : f32
// CHECK:       linalg.generic
// CHECK:         arith.addf
// CHECK-NOT:   tensor.cast
// CHECK:       func.return %{{.*}} : tensor<4xf32>
func.func @left(%x: tensor<4xf32>) -> tensor<4xf32> {
  %one = arith.constant 1.0 : f32
  %ex = math.exp %one : f32
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%v: f32, %o: f32):
    %two = arith.constant 2.0 : f32
    %c = arith.addf %two, %two : f32
    %s = arith.mulf %v, %c : f32
    %t = arith.mulf %s, %ex : f32
    linalg.yield %t : f32
  } -> tensor<4xf32>
  %cast = tensor.cast %r : tensor<4xf32> to tensor<4xf32>
  func.return %cast : tensor<4xf32>
}

// -----

// math.fpowi folds by squaring in its type: a negative base keeps its sign
// ((-2)^3 = -8), a negative exponent is the reciprocal ((-2)^-2 = 0.25).
// CHECK-LABEL: func.func @powi
// CHECK-DAG:   arith.constant -8.000000e+00 : f32
// CHECK-DAG:   arith.constant 2.500000e-01 : f32
// CHECK-DAG:   arith.constant 1.000000e+00 : f32
// CHECK-NOT:   math.fpowi
func.func @powi() -> (tensor<f32>, tensor<f32>, tensor<f32>) {
  %x = arith.constant -2.0 : f32
  %c3 = arith.constant 3 : i64
  %cm2 = arith.constant -2 : i64
  %c0 = arith.constant 0 : i32
  %a = math.fpowi %x, %c3 : f32, i64
  %b = math.fpowi %x, %cm2 : f32, i64
  %c = math.fpowi %x, %c0 : f32, i32
  %e = tensor.empty() : tensor<f32>
  %fa = linalg.fill ins(%a : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %fb = linalg.fill ins(%b : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %fc = linalg.fill ins(%c : f32) outs(%e : tensor<f32>) -> tensor<f32>
  func.return %fa, %fb, %fc : tensor<f32>, tensor<f32>, tensor<f32>
}
