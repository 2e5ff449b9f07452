// RUN: tilefuse-opt %s --split-input-file -p drop-unused-results | filecheck %s

// torch-mlir's max(dim) whose position nobody reads (F.softmax's max): a plain
// max reduction; the position's init, its fill and the ops computing it go.
// CHECK-LABEL: func.func @softmax_max
// CHECK-SAME:    (%[[X:.*]]: tensor<7x19xf32>)
// CHECK-NOT:     tensor<7xi64>
// CHECK:         %[[INIT:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<7xf32>)
// CHECK:         %[[MAX:.*]] = linalg.generic {{{.*}}iterator_types = ["parallel", "reduction"]}
// CHECK-SAME:        ins(%[[X]] : tensor<7x19xf32>) outs(%[[INIT]] : tensor<7xf32>)
// CHECK-NEXT:    ^{{.*}}(%[[IN:.*]]: f32, %[[OUT:.*]]: f32):
// CHECK-NEXT:      %[[M:.*]] = arith.maximumf %[[IN]], %[[OUT]] : f32
// CHECK-NEXT:      linalg.yield %[[M]] : f32
// CHECK-NEXT:    } -> tensor<7xf32>
// CHECK:         func.return %[[MAX]] : tensor<7xf32>
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0)>
func.func @softmax_max(%arg0: tensor<7x19xf32>) -> tensor<7xf32> {
  %c0_i64 = arith.constant 0 : i64
  %cst = arith.constant 0xFF800000 : f32
  %0 = tensor.empty() : tensor<7xi64>
  %1 = linalg.fill ins(%c0_i64 : i64) outs(%0 : tensor<7xi64>) -> tensor<7xi64>
  %2 = tensor.empty() : tensor<7xf32>
  %3 = linalg.fill ins(%cst : f32) outs(%2 : tensor<7xf32>) -> tensor<7xf32>
  %4:2 = linalg.generic {indexing_maps = [#map, #map1, #map1], iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<7x19xf32>) outs(%3, %1 : tensor<7xf32>, tensor<7xi64>) {
  ^bb0(%in: f32, %out: f32, %out_1: i64):
    %7 = linalg.index 1 : index
    %8 = arith.index_cast %7 : index to i64
    %9 = arith.maximumf %in, %out : f32
    %10 = arith.cmpf ogt, %in, %out : f32
    %11 = arith.select %10, %8, %out_1 : i64
    linalg.yield %9, %11 : f32, i64
  } -> (tensor<7xf32>, tensor<7xi64>)
  func.return %4#0 : tensor<7xf32>
}

// -----

// The position is read (argmax): nothing changes.
// CHECK-LABEL: func.func @argmax
// CHECK:         %{{.*}}, %{{.*}} = linalg.generic
// CHECK:           linalg.yield %{{.*}}, %{{.*}} : f32, i64
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0)>
func.func @argmax(%x: tensor<7x19xf32>, %v0: tensor<7xf32>, %i0: tensor<7xi64>) -> tensor<7xi64> {
  %r:2 = linalg.generic {indexing_maps = [#map, #map1, #map1], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<7x19xf32>) outs(%v0, %i0 : tensor<7xf32>, tensor<7xi64>) {
  ^bb0(%in: f32, %out: f32, %out_1: i64):
    %7 = linalg.index 1 : index
    %8 = arith.index_cast %7 : index to i64
    %9 = arith.maximumf %in, %out : f32
    %10 = arith.cmpf ogt, %in, %out : f32
    %11 = arith.select %10, %8, %out_1 : i64
    linalg.yield %9, %11 : f32, i64
  } -> (tensor<7xf32>, tensor<7xi64>)
  func.return %r#1 : tensor<7xi64>
}

// -----

// The max is unread, but the position reads its accumulator: nothing changes.
// CHECK-LABEL: func.func @accumulator_still_read
// CHECK:         %{{.*}}, %{{.*}} = linalg.generic
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0)>
func.func @accumulator_still_read(%x: tensor<7x19xf32>, %v0: tensor<7xf32>, %i0: tensor<7xi64>) -> tensor<7xi64> {
  %r:2 = linalg.generic {indexing_maps = [#map, #map1, #map1], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<7x19xf32>) outs(%v0, %i0 : tensor<7xf32>, tensor<7xi64>) {
  ^bb0(%in: f32, %out: f32, %out_1: i64):
    %7 = linalg.index 1 : index
    %8 = arith.index_cast %7 : index to i64
    %9 = arith.maximumf %in, %out : f32
    %10 = arith.cmpf ogt, %in, %out : f32
    %11 = arith.select %10, %8, %out_1 : i64
    linalg.yield %9, %11 : f32, i64
  } -> (tensor<7xf32>, tensor<7xi64>)
  func.return %r#1 : tensor<7xi64>
}

// -----

// A pointwise generic with two results, the first unread: its output and the
// payload ops computing it go; an output that alone bounds a loop stays.
// CHECK-LABEL: func.func @pointwise
// CHECK:         %[[R:.*]] = linalg.generic {indexing_maps = [[[ID:affine_map<\(d0, d1\) -> \(d0, d1\)>]], [[ID]], [[ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME:        outs(%{{.*}} : tensor<4x6xf32>)
// CHECK-NEXT:    ^{{.*}}(%[[A:.*]]: f32, %[[B:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[M:.*]] = arith.mulf %[[A]], %[[B]] : f32
// CHECK-NEXT:      linalg.yield %[[M]] : f32
// CHECK:         %{{.*}}, %{{.*}} = linalg.generic
// CHECK:         func.return %[[R]], %{{.*}} :
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @pointwise(%a: tensor<4x6xf32>, %b: tensor<4x6xf32>, %c: tensor<4xf32>) -> (tensor<4x6xf32>, tensor<4xf32>) {
  %e = tensor.empty() : tensor<4x6xf32>
  %r:2 = linalg.generic {indexing_maps = [#id, #id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%a, %b : tensor<4x6xf32>, tensor<4x6xf32>) outs(%e, %e : tensor<4x6xf32>, tensor<4x6xf32>) {
  ^bb0(%x: f32, %y: f32, %o1: f32, %o2: f32):
    %s = arith.addf %x, %y : f32
    %t = math.exp %s : f32
    %m = arith.mulf %x, %y : f32
    linalg.yield %t, %m : f32, f32
  } -> (tensor<4x6xf32>, tensor<4x6xf32>)
  %e4 = tensor.empty() : tensor<4xf32>
  %s:2 = linalg.generic {indexing_maps = [#row, #id, #row], iterator_types = ["parallel", "parallel"]} ins(%c : tensor<4xf32>) outs(%e, %e4 : tensor<4x6xf32>, tensor<4xf32>) {
  ^bb0(%x: f32, %o1: f32, %o2: f32):
    linalg.yield %x, %x : f32, f32
  } -> (tensor<4x6xf32>, tensor<4xf32>)
  func.return %r#1, %s#1 : tensor<4x6xf32>, tensor<4xf32>
}

// -----

// No result read: the generic goes, and its inits.
// CHECK-LABEL: func.func @unread
// CHECK-NOT:     linalg
// CHECK:         func.return %{{.*}} : tensor<7xf32>
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0)>
func.func @unread(%x: tensor<7x19xf32>, %v0: tensor<7xf32>) -> tensor<7xf32> {
  %e = tensor.empty() : tensor<7xi64>
  %r:2 = linalg.generic {indexing_maps = [#map, #map1, #map1], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<7x19xf32>) outs(%v0, %e : tensor<7xf32>, tensor<7xi64>) {
  ^bb0(%in: f32, %out: f32, %out_1: i64):
    %9 = arith.maximumf %in, %out : f32
    linalg.yield %9, %out_1 : f32, i64
  } -> (tensor<7xf32>, tensor<7xi64>)
  func.return %v0 : tensor<7xf32>
}

// -----

// A gather's init is a fill its payload never reads (torch-mlir's `gather`, here
// over a dynamic row count `2 * T - 2`): the generic writes the fill's empty and the
// fill goes (its loops bounded by nothing a kernel reads).
// CHECK-LABEL: func.func @gather_init
// CHECK-NOT:     linalg.fill
// CHECK:         %[[E:.*]] = tensor.empty(%{{.*}}) : tensor<?x1xf32>
// CHECK-NEXT:    %{{.*}} = linalg.generic {{{.*}}} ins(%{{.*}} : tensor<?x1xi64>) outs(%[[E]] : tensor<?x1xf32>)
// A fill the payload reads as its accumulator (a sum) stays.
// CHECK:         %[[Z:.*]] = linalg.fill
// CHECK:         linalg.generic {{{.*}}} ins(%{{.*}} : tensor<?x1xf32>) outs(%[[Z]] : tensor<1xf32>)
func.func @gather_init(%t: tensor<?x64xf32>, %i: tensor<?x1xi64>) -> tensor<1xf32> attributes {tilefuse.dim_ranges = {"t.0" = [1, 64], "i.0" = [1, 64]}} {
  %c0 = arith.constant 0 : index
  %cst = arith.constant 0.000000e+00 : f32
  %n = tensor.dim %i, %c0 : tensor<?x1xi64>
  %e = tensor.empty(%n) : tensor<?x1xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<?x1xf32>) -> tensor<?x1xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%i : tensor<?x1xi64>) outs(%f : tensor<?x1xf32>) {
  ^bb0(%in: i64, %out: f32):
    %r = linalg.index 0 : index
    %c = arith.index_cast %in : i64 to index
    %x = tensor.extract %t[%r, %c] : tensor<?x64xf32>
    linalg.yield %x : f32
  } -> tensor<?x1xf32>
  %e1 = tensor.empty() : tensor<1xf32>
  %z = linalg.fill ins(%cst : f32) outs(%e1 : tensor<1xf32>) -> tensor<1xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"]} ins(%g : tensor<?x1xf32>) outs(%z : tensor<1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %in, %out : f32
    linalg.yield %a : f32
  } -> tensor<1xf32>
  func.return %s : tensor<1xf32>
}
