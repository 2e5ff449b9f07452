// RUN: tilefuse-opt %s --split-input-file -p split-accumulator-init | filecheck %s

// The convolution-with-bias form torch-mlir writes, shrunk to a matmul: the
// contraction sums into the bias broadcast to the output. It now sums into zeros,
// and an elementwise add after it reads the broadcast.
// CHECK-LABEL: func.func @bias_init
// CHECK:       %[[BB:.*]] = linalg.generic {{.*}} ins(%b : tensor<6xf32>)
// CHECK:       %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:       %[[Z:.*]] = linalg.generic {{.*}} ins(%[[ZERO]] : f32)
// CHECK:       %[[Y:.*]] = linalg.generic {{.*}} ins(%x, %w : tensor<4x8xf32>, tensor<8x6xf32>) outs(%[[Z]] : tensor<4x6xf32>)
// CHECK:         arith.addf %acc, %p : f32
// CHECK:       %[[S:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%[[Y]], %[[BB]] : tensor<4x6xf32>, tensor<4x6xf32>)
// CHECK-NEXT:  ^{{.*}}(%[[U:.*]]: f32, %[[V:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:    %[[T:.*]] = arith.addf %[[U]], %[[V]] : f32
// CHECK-NEXT:    linalg.yield %[[T]] : f32
// CHECK:       func.return %[[S]] : tensor<4x6xf32>
func.func @bias_init(%x: tensor<4x8xf32>, %w: tensor<8x6xf32>, %b: tensor<6xf32>) -> tensor<4x6xf32> {
  %e = tensor.empty() : tensor<4x6xf32>
  %bb = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%b : tensor<6xf32>) outs(%e : tensor<4x6xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<4x6xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : tensor<4x8xf32>, tensor<8x6xf32>) outs(%bb : tensor<4x6xf32>) {
  ^bb0(%a: f32, %c: f32, %acc: f32):
    %p = arith.mulf %a, %c : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<4x6xf32>
  func.return %y : tensor<4x6xf32>
}

// -----

// Already from zero: left as it is.
// CHECK-LABEL: func.func @zero_init
// CHECK:       %[[Y:.*]] = linalg.generic {{.*}} outs(%z : tensor<4xf32>)
// CHECK-NOT:   linalg.generic
// CHECK:       func.return %[[Y]] : tensor<4xf32>
func.func @zero_init(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x8xf32>) outs(%z : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

// Not a sum (a max from an initial tensor), and a payload reading the accumulator
// twice: neither is split.
// CHECK-LABEL: func.func @not_sums
// CHECK:       %[[M:.*]] = linalg.generic {{.*}} outs(%init : tensor<4xf32>)
// CHECK:       %[[Q:.*]] = linalg.generic {{.*}} outs(%init : tensor<4xf32>)
// CHECK-NOT:   linalg.generic
// CHECK:       func.return %[[M]], %[[Q]] : tensor<4xf32>, tensor<4xf32>
func.func @not_sums(%x: tensor<4x8xf32>, %init: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %m = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x8xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.maximumf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %q = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x8xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %t = arith.mulf %acc, %a : f32
    %s = arith.addf %acc, %t : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  func.return %m, %q : tensor<4xf32>, tensor<4xf32>
}
