// RUN: tilefuse-opt %s --split-input-file -p hoist-operand-scale | filecheck %s

// ATen's math attention in f32: Q and K^T each times sqrt(scale) (a truncf of an
// f64 constant in the payload), then their product from 0. Both scales move after the
// contraction, which reads the unscaled views (a copy, a transpose).
// CHECK-LABEL: func.func @sdpa_scores
// CHECK:       %[[QV:.*]] = linalg.generic {{.*}} ins(%q : tensor<4x8x16xf32>)
// CHECK-NEXT:  ^{{.*}}(%[[A:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:    linalg.yield %[[A]] : f32
// CHECK:       %[[KV:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2, d1)>, {{.*}} ins(%k : tensor<4x8x16xf32>)
// CHECK-NEXT:  ^{{.*}}(%[[B:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:    linalg.yield %[[B]] : f32
// CHECK:       %[[S:.*]] = linalg.generic {{.*}} ins(%[[QV]], %[[KV]] : tensor<4x8x16xf32>, tensor<4x16x8xf32>)
// CHECK:       %[[S1:.*]] = linalg.generic {{.*}} ins(%[[S]] : tensor<4x8x8xf32>)
// CHECK:         arith.truncf %{{.*}} : f64 to f32
// CHECK-NEXT:    arith.mulf
// CHECK:       %[[S2:.*]] = linalg.generic {{.*}} ins(%[[S1]] : tensor<4x8x8xf32>)
// CHECK:         arith.truncf %{{.*}} : f64 to f32
// CHECK-NEXT:    arith.mulf
// CHECK:       func.return %[[S2]]
func.func @sdpa_scores(%q: tensor<4x8x16xf32>, %k: tensor<4x8x16xf32>) -> tensor<4x8x8xf32> {
  %c = arith.constant 0.5 : f64
  %zero = arith.constant 0.0 : f32
  %eq = tensor.empty() : tensor<4x8x16xf32>
  %qs = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%q : tensor<4x8x16xf32>) outs(%eq : tensor<4x8x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.truncf %c : f64 to f32
    %m = arith.mulf %in, %s : f32
    linalg.yield %m : f32
  } -> tensor<4x8x16xf32>
  %ek = tensor.empty() : tensor<4x16x8xf32>
  %ks = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%k : tensor<4x8x16xf32>) outs(%ek : tensor<4x16x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.truncf %c : f64 to f32
    %m = arith.mulf %in, %s : f32
    linalg.yield %m : f32
  } -> tensor<4x16x8xf32>
  %es = tensor.empty() : tensor<4x8x8xf32>
  %z = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%es : tensor<4x8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<4x8x8xf32>
  %scores = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%qs, %ks : tensor<4x8x16xf32>, tensor<4x16x8xf32>) outs(%z : tensor<4x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<4x8x8xf32>
  func.return %scores : tensor<4x8x8xf32>
}

// -----

// A bf16 factor widened and divided by a run-time scalar (a 0-d input): the view
// keeps the widening (for fold-operand-extf: then a bf16 dot), the division follows
// the contraction, reading the 0-d tensor again.
// CHECK-LABEL: func.func @widened_over_a_scalar
// CHECK:       %[[XV:.*]] = linalg.generic {{.*}} ins(%x : tensor<8x16xbf16>)
// CHECK-NEXT:  ^{{.*}}(%[[A:.*]]: bf16, %{{.*}}: f32):
// CHECK-NEXT:    %[[W:.*]] = arith.extf %[[A]] : bf16 to f32
// CHECK-NEXT:    linalg.yield %[[W]] : f32
// CHECK:       %[[Y:.*]] = linalg.generic {{.*}} ins(%[[XV]], %w : tensor<8x16xf32>, tensor<16x4xf32>)
// CHECK:       linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d0, d1)>]{{.*}} ins(%[[Y]], %t : tensor<8x4xf32>, tensor<f32>)
// CHECK-NEXT:  ^{{.*}}(%[[E:.*]]: f32, %[[T:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:    %[[D:.*]] = arith.divf %[[E]], %[[T]] : f32
// CHECK-NEXT:    linalg.yield %[[D]] : f32
func.func @widened_over_a_scalar(%x: tensor<8x16xbf16>, %w: tensor<16x4xf32>, %t: tensor<f32>) -> tensor<8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %ex = tensor.empty() : tensor<8x16xf32>
  %xs = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x, %t : tensor<8x16xbf16>, tensor<f32>) outs(%ex : tensor<8x16xf32>) {
  ^bb0(%in: bf16, %s: f32, %out: f32):
    %f = arith.extf %in : bf16 to f32
    %d = arith.divf %f, %s : f32
    linalg.yield %d : f32
  } -> tensor<8x16xf32>
  %ey = tensor.empty() : tensor<8x4xf32>
  %z = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%zero : f32) outs(%ey : tensor<8x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<8x4xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%xs, %w : tensor<8x16xf32>, tensor<16x4xf32>) outs(%z : tensor<8x4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<8x4xf32>
  func.return %y : tensor<8x4xf32>
}

// -----

// Left as they are: a sum that starts from a bias (c (bias + x w) is not bias + c x w),
// a scaled factor another op reads too, a "scale" that reads the element (x * x),
// and a bf16 scale (rounded to 8 bits where eager rounds it).
// CHECK-LABEL: func.func @not_hoisted
// CHECK:       %biased = linalg.generic {{.*}} ins(%xs, %w : {{.*}} outs(%bias : tensor<8x4xf32>)
// CHECK:       %shared = linalg.generic {{.*}} ins(%xs, %w : {{.*}} outs(%z : tensor<8x4xf32>)
// CHECK:       %squares = linalg.generic {{.*}} ins(%sq, %w : {{.*}} outs(%z : tensor<8x4xf32>)
// CHECK:       %half = linalg.generic {{.*}} ins(%hs, %hw : {{.*}} outs(%zh : tensor<8x4xbf16>)
// CHECK-NOT:   linalg.generic
// CHECK:       func.return %biased, %shared, %sq, %squares, %half
func.func @not_hoisted(%x: tensor<8x16xf32>, %w: tensor<16x4xf32>, %bias: tensor<8x4xf32>, %h: tensor<8x16xbf16>, %hw: tensor<16x4xbf16>) -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x16xf32>, tensor<8x4xf32>, tensor<8x4xbf16>) {
  %zero = arith.constant 0.0 : f32
  %zb = arith.constant 0.0 : bf16
  %c = arith.constant 0.125 : f32
  %cb = arith.constant 0.125 : bf16
  %ex = tensor.empty() : tensor<8x16xf32>
  %xs = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<8x16xf32>) outs(%ex : tensor<8x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %in, %c : f32
    linalg.yield %m : f32
  } -> tensor<8x16xf32>
  %biased = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%xs, %w : tensor<8x16xf32>, tensor<16x4xf32>) outs(%bias : tensor<8x4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<8x4xf32>
  %ey = tensor.empty() : tensor<8x4xf32>
  %z = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%zero : f32) outs(%ey : tensor<8x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<8x4xf32>
  %shared = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%xs, %w : tensor<8x16xf32>, tensor<16x4xf32>) outs(%z : tensor<8x4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<8x4xf32>
  %sq = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<8x16xf32>) outs(%ex : tensor<8x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %in, %in : f32
    linalg.yield %m : f32
  } -> tensor<8x16xf32>
  %squares = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%sq, %w : tensor<8x16xf32>, tensor<16x4xf32>) outs(%z : tensor<8x4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<8x4xf32>
  %eh = tensor.empty() : tensor<8x16xbf16>
  %hs = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%h : tensor<8x16xbf16>) outs(%eh : tensor<8x16xbf16>) {
  ^bb0(%in: bf16, %out: bf16):
    %m = arith.mulf %in, %cb : bf16
    linalg.yield %m : bf16
  } -> tensor<8x16xbf16>
  %eb = tensor.empty() : tensor<8x4xbf16>
  %zh = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%zb : bf16) outs(%eb : tensor<8x4xbf16>) {
  ^bb0(%in: bf16, %out: bf16):
    linalg.yield %in : bf16
  } -> tensor<8x4xbf16>
  %half = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%hs, %hw : tensor<8x16xbf16>, tensor<16x4xbf16>) outs(%zh : tensor<8x4xbf16>) {
  ^bb0(%a: bf16, %b: bf16, %acc: bf16):
    %p = arith.mulf %a, %b : bf16
    %r = arith.addf %acc, %p : bf16
    linalg.yield %r : bf16
  } -> tensor<8x4xbf16>
  func.return %biased, %shared, %sq, %squares, %half : tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x16xf32>, tensor<8x4xf32>, tensor<8x4xbf16>
}
