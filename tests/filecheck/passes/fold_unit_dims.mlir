// RUN: tilefuse-opt %s --split-input-file -p fold-unit-dims | filecheck %s

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

// -----

// A keep-dim row sum whose fill is made as [N, 1]: the fill's collapse becomes
// a fill of [N], and the [N, 1] fill and empty, unread, are erased.
// CHECK-LABEL: func.func @fill_of_the_collapsed_shape
// CHECK-NOT:   tensor.empty() : tensor<8x1xf32>
// CHECK:       %[[E:.*]] = tensor.empty() : tensor<8xf32>
// CHECK:       %[[F:.*]] = linalg.fill ins(%zero : f32) outs(%[[E]] : tensor<8xf32>)
// CHECK:       linalg.generic {{.*}} ins(%x : tensor<8x16xf32>) outs(%[[F]] : tensor<8xf32>)
// CHECK:       tensor.expand_shape
// CHECK-NOT:   linalg.fill
func.func @fill_of_the_collapsed_shape(%x: tensor<8x16xf32>) -> tensor<8x1xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x1xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x1xf32>) -> tensor<8x1xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<8x16xf32>) outs(%f : tensor<8x1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<8x1xf32>
  func.return %s : tensor<8x1xf32>
}

// -----

// Any constant other than 0 on a unit dim is a slice, not ours to fold: the
// generic is left as it is (and refused later, with a location).
// CHECK-LABEL: func.func @slice
// CHECK:       affine_map<(d0, d1) -> (1, d1)>
// CHECK-NOT:   collapse_shape
func.func @slice(%x: tensor<2x70xf32>, %o: tensor<4x70xf32>) -> tensor<4x70xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (1, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<2x70xf32>) outs(%o : tensor<4x70xf32>) {
  ^bb0(%a: f32, %b: f32):
    linalg.yield %a : f32
  } -> tensor<4x70xf32>
  func.return %r : tensor<4x70xf32>
}

// -----

// A 1 x 1 convolution as linalg-generalize writes it: the window loops kh, kw
// (d5, d6) have one iteration each. They take the value 0 and leave the loop
// nest; the filter's dims they indexed are then constant 0s, viewed away: the
// input is read as a projection (d0, d4, d2, d3), no longer a window.
// CHECK-LABEL: func.func @conv_1x1
// CHECK:       %[[W:.*]] = tensor.collapse_shape %w {{\[}}[0 : i64], [1 : i64, 2 : i64, 3 : i64]] : tensor<4x8x1x1xf32> into tensor<4x8xf32>
// CHECK:       linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d2, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d1, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%x, %[[W]] : tensor<2x8x5x6xf32>, tensor<4x8xf32>)
func.func @conv_1x1(%x: tensor<2x8x5x6xf32>, %w: tensor<4x8x1x1xf32>, %init: tensor<2x4x5x6xf32>) -> tensor<2x4x5x6xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 + d5, d3 + d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<2x8x5x6xf32>, tensor<4x8x1x1xf32>) outs(%init : tensor<2x4x5x6xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x4x5x6xf32>
  func.return %r : tensor<2x4x5x6xf32>
}

// -----

// A strided 1 x 1 convolution keeps its window (2 * d2 is not a projection),
// without the unit loops; a 3 x 3 one keeps both its window and its loops.
// CHECK-LABEL: func.func @conv_1x1_stride_2
// CHECK:       linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, (d2 * 2), (d3 * 2))>, affine_map<(d0, d1, d2, d3, d4) -> (d1, d4)>
// CHECK-LABEL: func.func @conv_3x3
// CHECK:       linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, (d2 + d5), (d3 + d6))>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>
func.func @conv_1x1_stride_2(%x: tensor<2x8x9x11xf32>, %w: tensor<4x8x1x1xf32>, %init: tensor<2x4x5x6xf32>) -> tensor<2x4x5x6xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 * 2 + d5, d3 * 2 + d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<2x8x9x11xf32>, tensor<4x8x1x1xf32>) outs(%init : tensor<2x4x5x6xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x4x5x6xf32>
  func.return %r : tensor<2x4x5x6xf32>
}
func.func @conv_3x3(%x: tensor<2x8x7x8xf32>, %w: tensor<4x8x3x3xf32>, %init: tensor<2x4x5x6xf32>) -> tensor<2x4x5x6xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 + d5, d3 + d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<2x8x7x8xf32>, tensor<4x8x3x3xf32>) outs(%init : tensor<2x4x5x6xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x4x5x6xf32>
  func.return %r : tensor<2x4x5x6xf32>
}

// -----

// A reduction over one element (every reduction loop of trip count 1): its payload
// once, on the init. torch-mlir's argmax over a dim of size 1 (the index folded to
// the constant 0) was a reduction the backend could not lower; it is elementwise now.
// CHECK-LABEL: func.func @argmax_over_one
// CHECK:       linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
func.func @argmax_over_one(%x: tensor<2x1x8xf32>) -> tensor<2x8xi64> {
  %c0 = arith.constant 0 : i64
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<2x8xi64>
  %i = linalg.fill ins(%c0 : i64) outs(%e : tensor<2x8xi64>) -> tensor<2x8xi64>
  %ef = tensor.empty() : tensor<2x8xf32>
  %m = linalg.fill ins(%ninf : f32) outs(%ef : tensor<2x8xf32>) -> tensor<2x8xf32>
  %r:2 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"]} ins(%x : tensor<2x1x8xf32>) outs(%m, %i : tensor<2x8xf32>, tensor<2x8xi64>) {
  ^bb0(%in: f32, %out: f32, %idx: i64):
    %mx = arith.maximumf %in, %out : f32
    %gt = arith.cmpf ogt, %in, %out : f32
    %s = arith.select %gt, %c0, %idx : i64
    linalg.yield %mx, %s : f32, i64
  } -> (tensor<2x8xf32>, tensor<2x8xi64>)
  func.return %r#1 : tensor<2x8xi64>
}

// -----

// A sum over one element (its only loop a reduction of trip count 1) loses the loop,
// then reads its one element through a parallel loop of one (the old ["reduction"]
// kept with no loops was a verifier error: the variance of a one-element tensor).
// CHECK-LABEL: func.func @sum_of_one
// CHECK:       linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["parallel"]}
func.func @sum_of_one(%x: tensor<1xf32>, %init: tensor<f32>) -> tensor<f32> {
  %s = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]} ins(%x : tensor<1xf32>) outs(%init : tensor<f32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %in, %out : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  func.return %s : tensor<f32>
}
