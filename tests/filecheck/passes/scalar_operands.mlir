// RUN: tilefuse-opt %s --split-input-file -p scalar-operands | filecheck %s

// A 0-d tensor's scalar, extracted at function level and read in a payload
// (torch-mlir's scalar operands): the generic reads the 0-d tensor as an input
// through `-> ()`, its payload the new block argument; the extract goes.
// CHECK-LABEL: func.func @scaled
// CHECK-NOT:   tensor.extract
// CHECK:       linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>]{{.*}} ins(%x, %t : tensor<8xf32>, tensor<f32>)
// CHECK-NEXT:  ^{{.*}}(%[[A:.*]]: f32, %[[S:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:    arith.mulf %[[A]], %[[S]] : f32
func.func @scaled(%x: tensor<8xf32>, %t: tensor<f32>) -> tensor<8xf32> {
  %v = tensor.extract %t[] : tensor<f32>
  %e = tensor.empty() : tensor<8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.mulf %a, %v : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  func.return %r : tensor<8xf32>
}

// -----

// A use outside any payload (a fill's value) is left as it is, with its extract.
// CHECK-LABEL: func.func @fill_of_scalar
// CHECK:       %[[V:.*]] = tensor.extract %t[] : tensor<f32>
// CHECK:       linalg.generic {{.*}} ins(%[[V]] : f32)
func.func @fill_of_scalar(%t: tensor<f32>) -> tensor<8xf32> {
  %v = tensor.extract %t[] : tensor<f32>
  %e = tensor.empty() : tensor<8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%v : f32) outs(%e : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<8xf32>
  func.return %r : tensor<8xf32>
}

// -----

// A splat tensor constant read by a generic (torch-mlir's `full_like(True)` of a
// causal mask, a constant scale tensor) is its element, a constant in the payload;
// a constant of distinct elements stays a tensor input.
// CHECK-LABEL: func.func @splat_operands
// CHECK:       linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>]{{.*}} ins(%m, %ramp : tensor<4x8xi1>, tensor<8xbf16>)
// CHECK-NEXT:  ^bb0(%a: i1, %w: bf16, %o: bf16):
// CHECK-DAG:     %[[T:.*]] = arith.constant true
// CHECK-DAG:     %[[H:.*]] = arith.constant 5.000000e-01 : bf16
// CHECK:         arith.andi %a, %[[T]] : i1
// CHECK:         arith.mulf %[[H]], %w : bf16
func.func @splat_operands(%m: tensor<4x8xi1>, %x: tensor<4x8xbf16>) -> tensor<4x8xbf16> {
  %true = arith.constant dense<true> : tensor<4x8xi1>
  %half = arith.constant dense<5.000000e-01> : tensor<4x8xbf16>
  %ramp = arith.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<8xbf16>
  %e = tensor.empty() : tensor<4x8xbf16>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%m, %true, %half, %ramp : tensor<4x8xi1>, tensor<4x8xi1>, tensor<4x8xbf16>, tensor<8xbf16>) outs(%e : tensor<4x8xbf16>) {
  ^bb0(%a: i1, %t: i1, %h: bf16, %w: bf16, %o: bf16):
    %k = arith.andi %a, %t : i1
    %p = arith.mulf %h, %w : bf16
    %s = arith.select %k, %p, %o : bf16
    linalg.yield %s : bf16
  } -> tensor<4x8xbf16>
  func.return %r : tensor<4x8xbf16>
}

// -----

// A fill of a scalar constant read by a generic (what `generalise` makes of a splat
// constant whose shape is dynamic: SDPA's zeros for fully masked rows) is its
// element in the payload, as a splat constant is; the fill goes. A fill of a
// non-constant scalar stays an input.
// CHECK-LABEL: func.func @fill_inputs
// CHECK:       linalg.generic {{.*}} ins(%c, %p, %v : tensor<?x4xi1>, tensor<?x4xf32>, tensor<?x4xf32>)
// CHECK-NEXT:  ^bb0(%{{.*}}: i1, %{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32):
// CHECK-NEXT:    %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    arith.select %{{.*}}, %[[Z]], %{{.*}} : f32
// CHECK-NOT:   linalg.generic {{.*}} ins(%zero
func.func @fill_inputs(%c: tensor<?x4xi1>, %p: tensor<?x4xf32>, %s: tensor<f32>) -> (tensor<?x4xf32>, tensor<?x4xf32>) attributes {tilefuse.dim_ranges = {"c.0" = [1, 64], "p.0" = [1, 64]}} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %p, %c0 : tensor<?x4xf32>
  %e = tensor.empty(%n) : tensor<?x4xf32>
  %z = arith.constant 0.0 : f32
  %zero = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%z : f32) outs(%e : tensor<?x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<?x4xf32>
  %x = tensor.extract %s[] : tensor<f32>
  %v = linalg.fill ins(%x : f32) outs(%e : tensor<?x4xf32>) -> tensor<?x4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%c, %zero, %p, %v : tensor<?x4xi1>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>) outs(%e : tensor<?x4xf32>) {
  ^bb0(%a: i1, %b: f32, %q: f32, %w: f32, %out: f32):
    %0 = arith.select %a, %b, %q : f32
    %1 = arith.addf %0, %w : f32
    linalg.yield %1 : f32
  } -> tensor<?x4xf32>
  func.return %r, %v : tensor<?x4xf32>, tensor<?x4xf32>
}
