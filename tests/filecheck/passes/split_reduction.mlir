// RUN: tilefuse-opt %s --split-input-file -p split-reduction | filecheck %s

// Four rows of 300000: four programs would stream 4.8 MB each. The row is
// viewed as 32 x 9375 (a host-side expand_shape) and reduced in two steps:
// partial sums of x*x over 9375 elements (128 programs), then over the 32.
// CHECK-LABEL: func.func @row_sums
// CHECK:       %[[V:.*]] = tensor.expand_shape %x {{.*}} output_shape [4, 32, 9375] : tensor<4x300000xf32> into tensor<4x32x9375xf32>
// CHECK:       %[[P:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[V]] : tensor<4x32x9375xf32>)
// CHECK:         arith.mulf
// CHECK:         arith.addf
// CHECK:       %[[S:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[P]] : tensor<4x32xf32>) outs(%init : tensor<4xf32>)
// CHECK:       func.return %[[S]]
func.func @row_sums(%x: tensor<4x300000xf32>) -> tensor<4xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %e = tensor.empty() : tensor<4xf32>
  %init = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%zero : f32) outs(%e : tensor<4xf32>) {
  ^bb0(%0: f32, %1: f32):
    linalg.yield %0 : f32
  } -> tensor<4xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x300000xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %sq = arith.mulf %in, %in : f32
    %v = arith.addf %sq, %acc : f32
    linalg.yield %v : f32
  } -> tensor<4xf32>
  func.return %s : tensor<4xf32>
}

// -----

// The same rows also feed x / sum (a normalisation): x is read by two ops, so
// splitting would re-read it elsewhere and break the row pattern. Not split.
// CHECK-LABEL: func.func @normalised
// CHECK-NOT:   tensor.expand_shape
func.func @normalised(%x: tensor<4x300000xf32>) -> tensor<4x300000xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %e = tensor.empty() : tensor<4xf32>
  %init = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%zero : f32) outs(%e : tensor<4xf32>) {
  ^bb0(%0: f32, %1: f32):
    linalg.yield %0 : f32
  } -> tensor<4xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x300000xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %v = arith.addf %in, %acc : f32
    linalg.yield %v : f32
  } -> tensor<4xf32>
  %o = tensor.empty() : tensor<4x300000xf32>
  %n = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x, %s : tensor<4x300000xf32>, tensor<4xf32>) outs(%o : tensor<4x300000xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %d = arith.divf %a, %b : f32
    linalg.yield %d : f32
  } -> tensor<4x300000xf32>
  func.return %n : tensor<4x300000xf32>
}
