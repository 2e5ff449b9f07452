// RUN: tilefuse-opt %s --split-input-file -p fold-transposes | filecheck %s

// A transpose read by a contraction: folded into the contraction's map, so the
// copy (and its trip through HBM) disappears; the contraction reads k directly,
// and the transpose's empty goes with it.
// CHECK-LABEL: func.func @scores
// CHECK-NOT:   tensor<2x4x8xf32>
// CHECK:       linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>]{{.*}} ins(%q, %k : tensor<2x8x4xf32>, tensor<2x8x4xf32>)
func.func @scores(%q: tensor<2x8x4xf32>, %k: tensor<2x8x4xf32>, %acc: tensor<2x8x8xf32>) -> tensor<2x8x8xf32> {
  %et = tensor.empty() : tensor<2x4x8xf32>
  %kt = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%k : tensor<2x8x4xf32>) outs(%et : tensor<2x4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<2x4x8xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%q, %kt : tensor<2x8x4xf32>, tensor<2x4x8xf32>) outs(%acc : tensor<2x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %c, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x8x8xf32>
  func.return %s : tensor<2x8x8xf32>
}

// -----

// A cyclic permutation (not its own inverse): the reader's map is the
// transpose's input map composed with the reader's own.
// CHECK-LABEL: func.func @cyclic
// CHECK:       linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d2, d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>]{{.*}} ins(%x : tensor<5x3x4xf32>)
// CHECK-NEXT:  ^{{.*}}(%{{.*}}: f32, %{{.*}}: f32):
// CHECK-NEXT:    math.exp
// CHECK-NOT:   linalg.generic
func.func @cyclic(%x: tensor<5x3x4xf32>) -> tensor<3x4x5xf32> {
  %et = tensor.empty() : tensor<3x4x5xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d2, d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : tensor<5x3x4xf32>) outs(%et : tensor<3x4x5xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<3x4x5xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%t : tensor<3x4x5xf32>) outs(%et : tensor<3x4x5xf32>) {
  ^bb0(%in: f32, %out: f32):
    %e = math.exp %in : f32
    linalg.yield %e : f32
  } -> tensor<3x4x5xf32>
  func.return %r : tensor<3x4x5xf32>
}

// -----

// A transpose read as an accumulator (an output) is a copy the reader writes
// into: it stays, and so does one the function returns.
// CHECK-LABEL: func.func @kept
// CHECK:       %[[T:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>]{{.*}} ins(%x : tensor<4x8xf32>)
// CHECK:       %[[S:.*]] = linalg.generic {{.*}} ins(%y : tensor<8x4xf32>) outs(%[[T]] : tensor<8x4xf32>)
// CHECK:       func.return %[[S]], %[[T]]
func.func @kept(%x: tensor<4x8xf32>, %y: tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %e = tensor.empty() : tensor<8x4xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x8xf32>) outs(%e : tensor<8x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<8x4xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%y : tensor<8x4xf32>) outs(%t : tensor<8x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %in, %out : f32
    linalg.yield %a : f32
  } -> tensor<8x4xf32>
  func.return %s, %t : tensor<8x4xf32>, tensor<8x4xf32>
}
