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

// -----

// timm's head split, `qkv.reshape(B, N, 3, H, D).permute(2, 0, 3, 1, 4)` and one
// head tensor taken by a slice and its unit dim collapsed: the permutation moves
// below both views (the slice taken of the input at the permuted offsets, its unit
// dim collapsed there) and folds into the reader; no copy is left.
// CHECK-LABEL: func.func @head_split
// CHECK:       %[[S:.*]] = tensor.extract_slice %qkv[0, 0, 1, 0, 0] [2, 5, 1, 4, 8] [1, 1, 1, 1, 1] : tensor<2x5x3x4x8xf32> to tensor<2x5x1x4x8xf32>
// CHECK:       %[[C:.*]] = tensor.collapse_shape %[[S]] {{\[}}[0 : i64], [1 : i64, 2 : i64], [3 : i64], [4 : i64]] : tensor<2x5x1x4x8xf32> into tensor<2x5x4x8xf32>
// CHECK:       linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>]{{.*}} ins(%[[C]] : tensor<2x5x4x8xf32>)
// CHECK-NEXT:  ^{{.*}}(%{{.*}}: f32, %{{.*}}: f32):
// CHECK-NEXT:    math.exp
// CHECK-NOT:   linalg.generic
func.func @head_split(%qkv: tensor<2x5x3x4x8xf32>) -> tensor<2x4x5x8xf32> {
  %e = tensor.empty() : tensor<3x2x4x5x8xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d1, d3, d0, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%qkv : tensor<2x5x3x4x8xf32>) outs(%e : tensor<3x2x4x5x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<3x2x4x5x8xf32>
  %k = tensor.extract_slice %t[1, 0, 0, 0, 0] [1, 2, 4, 5, 8] [1, 1, 1, 1, 1] : tensor<3x2x4x5x8xf32> to tensor<1x2x4x5x8xf32>
  %kc = tensor.collapse_shape %k [[0, 1], [2], [3], [4]] : tensor<1x2x4x5x8xf32> into tensor<2x4x5x8xf32>
  %o = tensor.empty() : tensor<2x4x5x8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%kc : tensor<2x4x5x8xf32>) outs(%o : tensor<2x4x5x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %x = math.exp %in : f32
    linalg.yield %x : f32
  } -> tensor<2x4x5x8xf32>
  func.return %r : tensor<2x4x5x8xf32>
}

// -----

// A slice of a permutation that is returned: the slice would be a copy either way
// (a returned view of a copy), so the permutation stays above it and nothing moves.
// CHECK-LABEL: func.func @slice_returned
// CHECK:       %[[T:.*]] = linalg.generic {{.*}} ins(%x : tensor<4x6xf32>) outs(%{{.*}} : tensor<6x4xf32>)
// CHECK:       %[[S:.*]] = tensor.extract_slice %[[T]][2, 0] [3, 4] [1, 1]
// CHECK:       func.return %[[S]]
func.func @slice_returned(%x: tensor<4x6xf32>) -> tensor<3x4xf32> {
  %e = tensor.empty() : tensor<6x4xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x6xf32>) outs(%e : tensor<6x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<6x4xf32>
  %s = tensor.extract_slice %t[2, 0] [3, 4] [1, 1] : tensor<6x4xf32> to tensor<3x4xf32>
  func.return %s : tensor<3x4xf32>
}

// -----

// A strided slice read by a generic: taken of the input with the strides permuted.
// CHECK-LABEL: func.func @strided_slice
// CHECK:       %[[S:.*]] = tensor.extract_slice %x[0, 1] [4, 3] [1, 2] : tensor<4x6xf32> to tensor<4x3xf32>
// CHECK:       linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>]{{.*}} ins(%[[S]] : tensor<4x3xf32>)
// CHECK-NOT:   linalg.generic
func.func @strided_slice(%x: tensor<4x6xf32>) -> tensor<3x4xf32> {
  %e = tensor.empty() : tensor<6x4xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x6xf32>) outs(%e : tensor<6x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<6x4xf32>
  %s = tensor.extract_slice %t[1, 0] [3, 4] [2, 1] : tensor<6x4xf32> to tensor<3x4xf32>
  %o = tensor.empty() : tensor<3x4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%s : tensor<3x4xf32>) outs(%o : tensor<3x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<3x4xf32>
  func.return %r : tensor<3x4xf32>
}
