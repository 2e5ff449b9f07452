// RUN: tilefuse-opt %s --split-input-file -p linalg-generalize | filecheck %s

// A [1, N] bias read through (0, d1): viewed as [N] (a host collapse of the
// argument), read through (d1).
// CHECK-LABEL: func.func @bias
// CHECK:       %[[B:.*]] = tensor.collapse_shape %bias {{\[}}[0 : i64, 1 : i64]] : tensor<1x70xf32> into tensor<70xf32>
// CHECK:       linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>]{{.*}} ins(%x, %[[B]] : tensor<33x70xf32>, tensor<70xf32>)
func.func @bias(%x: tensor<33x70xf32>, %bias: tensor<1x70xf32>) -> tensor<33x70xf32> {
  %e = tensor.empty() : tensor<33x70xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x, %bias : tensor<33x70xf32>, tensor<1x70xf32>) outs(%e : tensor<33x70xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<33x70xf32>
  func.return %r : tensor<33x70xf32>
}

// -----

// Keep-dim statistics: the row max is computed as [N] (its fill made in that
// shape) and read directly by its consumer: the expansion and the collapse
// meet and fold; only the returned value is expanded back to [N, 1].
// CHECK-LABEL: func.func @keepdim
// CHECK-NOT:   collapse_shape
// CHECK:       %[[M:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
// CHECK:       %[[R:.*]] = tensor.expand_shape %[[M]] {{\[}}[0 : i64, 1 : i64]] output_shape [8, 1] : tensor<8xf32> into tensor<8x1xf32>
// CHECK:       %[[Y:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>]{{.*}} ins(%x, %[[M]] : tensor<8x16xf32>, tensor<8xf32>)
// CHECK:       func.return %[[Y]], %[[R]]
func.func @keepdim(%x: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8x1xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  %e1 = tensor.empty() : tensor<8x1xf32>
  %im = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<8x1xf32>) -> tensor<8x1xf32>
  %m = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<8x16xf32>) outs(%im : tensor<8x1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.maximumf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<8x1xf32>
  %e = tensor.empty() : tensor<8x16xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x, %m : tensor<8x16xf32>, tensor<8x1xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%a: f32, %mm: f32, %o: f32):
    %d = arith.subf %a, %mm : f32
    linalg.yield %d : f32
  } -> tensor<8x16xf32>
  func.return %y, %m : tensor<8x16xf32>, tensor<8x1xf32>
}

// -----

// A transpose read by a contraction: folded into the contraction's map, so the
// copy (and its trip through HBM) disappears; the contraction reads k directly.
// CHECK-LABEL: func.func @scores
// CHECK-NOT:   permutation
// CHECK:       linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>]{{.*}} ins(%q, %k : tensor<2x8x4xf32>, tensor<2x8x4xf32>)
func.func @scores(%q: tensor<2x8x4xf32>, %k: tensor<2x8x4xf32>) -> tensor<2x8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %et = tensor.empty() : tensor<2x4x8xf32>
  %kt = linalg.transpose ins(%k : tensor<2x8x4xf32>) outs(%et : tensor<2x4x8xf32>) permutation = [0, 2, 1]
  %e = tensor.empty() : tensor<2x8x8xf32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<2x8x4xf32>, tensor<2x4x8xf32>) outs(%i : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  func.return %s : tensor<2x8x8xf32>
}

// -----

// A cyclic permutation (not its own inverse): the reader's map is the
// transpose's input map composed with the reader's own.
// CHECK-LABEL: func.func @cyclic
// CHECK-NOT:   linalg.transpose
// CHECK:       linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d2, d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>]{{.*}} ins(%x : tensor<5x3x4xf32>)
func.func @cyclic(%x: tensor<5x3x4xf32>) -> tensor<3x4x5xf32> {
  %et = tensor.empty() : tensor<3x4x5xf32>
  %t = linalg.transpose ins(%x : tensor<5x3x4xf32>) outs(%et : tensor<3x4x5xf32>) permutation = [1, 2, 0]
  %r = linalg.exp ins(%t : tensor<3x4x5xf32>) outs(%et : tensor<3x4x5xf32>) -> tensor<3x4x5xf32>
  func.return %r : tensor<3x4x5xf32>
}

// -----

// A keep-dim sum over every dim: the 1x1 result keeps its last dim, indexed by a
// new parallel loop of extent 1 (xDSL's expand_shape has no rank-0 source); its
// reader indexes the [1] view by the same new loop.
// CHECK-LABEL: func.func @keep_all
// CHECK:       %[[S:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d2)>], iterator_types = ["reduction", "reduction", "parallel"]} ins(%x : tensor<8x16xf32>) outs(%{{.*}} : tensor<1xf32>)
// CHECK:       %[[R:.*]] = tensor.expand_shape %[[S]] {{\[}}[0 : i64, 1 : i64]] output_shape [1, 1] : tensor<1xf32> into tensor<1x1xf32>
// CHECK:       linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "parallel"]}{{.*}} ins(%x, %[[S]] : tensor<8x16xf32>, tensor<1xf32>)
func.func @keep_all(%x: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<1x1xf32>) {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<1x1xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x1xf32>) -> tensor<1x1xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (0, 0)>], iterator_types = ["reduction", "reduction"]} ins(%x : tensor<8x16xf32>) outs(%z : tensor<1x1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<1x1xf32>
  %e = tensor.empty() : tensor<8x16xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (0, 0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x, %s : tensor<8x16xf32>, tensor<1x1xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%a: f32, %t: f32, %o: f32):
    %d = arith.subf %a, %t : f32
    linalg.yield %d : f32
  } -> tensor<8x16xf32>
  func.return %y, %s : tensor<8x16xf32>, tensor<1x1xf32>
}
