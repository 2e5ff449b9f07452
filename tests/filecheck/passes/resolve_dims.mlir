// RUN: tilefuse-opt %s --split-input-file --dim-range x.0=1:64 -p resolve-dims | filecheck %s

// The size of a computed tensor is the size its init was made with: the empty's
// operand, the function argument's dim; no tensor.dim of %y is left.
// CHECK-LABEL: func.func @from_the_init
// CHECK-SAME:    (%[[X:.*]]: tensor<?x8xf32>)
// CHECK:         %[[N:.*]] = tensor.dim %[[X]], %{{.*}} : tensor<?x8xf32>
// CHECK:         %[[Y:.*]] = linalg.generic
// CHECK-NOT:     tensor.dim %[[Y]]
// CHECK:         tensor.empty(%[[N]]) : tensor<?x4xf32>
func.func @from_the_init(%x: tensor<?x8xf32>) -> tensor<?x4xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x8xf32>
  %e = tensor.empty(%n) : tensor<?x8xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]} ins(%x : tensor<?x8xf32>) outs(%e : tensor<?x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<?x8xf32>
  %m = tensor.dim %y, %c0 : tensor<?x8xf32>
  %e2 = tensor.empty(%m) : tensor<?x4xf32>
  %z = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]} ins(%y : tensor<?x8xf32>) outs(%e2 : tensor<?x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<?x4xf32>
  return %z : tensor<?x4xf32>
}

// -----

// Through views: an expand's output_shape operand, a collapse of one dynamic dim
// with unit dims (read from its source), a slice keeping a whole dim.
// CHECK-LABEL: func.func @through_views
// CHECK-SAME:    (%[[X:.*]]: tensor<?x6xf32>)
// CHECK:         %[[N:.*]] = tensor.dim %[[X]], %{{.*}} : tensor<?x6xf32>
// CHECK:         %[[H:.*]] = arith.divui %[[N]], %{{.*}} : index
// CHECK:         tensor.empty(%[[H]], %[[N]], %[[N]]) : tensor<?x?x?xf32>
func.func @through_views(%x: tensor<?x6xf32>) -> tensor<?x?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %n = tensor.dim %x, %c0 : tensor<?x6xf32>
  %h = arith.divui %n, %c2 : index
  %v = tensor.expand_shape %x [[0, 1], [2]] output_shape [2, %h, 6] : tensor<?x6xf32> into tensor<2x?x6xf32>
  %a = tensor.dim %v, %c1 : tensor<2x?x6xf32>
  %u = tensor.expand_shape %x [[0, 1], [2]] output_shape [%n, 1, 6] : tensor<?x6xf32> into tensor<?x1x6xf32>
  %c = tensor.collapse_shape %u [[0, 1], [2]] : tensor<?x1x6xf32> into tensor<?x6xf32>
  %b = tensor.dim %c, %c0 : tensor<?x6xf32>
  %s = tensor.extract_slice %c[0, 2] [%b, 3] [1, 1] : tensor<?x6xf32> to tensor<?x3xf32>
  %d = tensor.dim %s, %c0 : tensor<?x3xf32>
  %e = tensor.empty(%a, %b, %d) : tensor<?x?x?xf32>
  return %e : tensor<?x?x?xf32>
}

// -----

// A view read only for its size goes once the size is read from where it was
// made, with the arithmetic that sized it: nothing is left to keep %y (a
// LayerNorm's saved statistics) alive for the host to read a shape from.
// CHECK-LABEL: func.func @a_view_read_for_its_size
// CHECK-NOT:     tensor.expand_shape
// CHECK-NOT:     arith.muli
// CHECK:         tensor.empty(%{{.*}}) : tensor<?x8xf32>
// CHECK-NOT:     tensor.expand_shape
// CHECK:         return
func.func @a_view_read_for_its_size(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %n = tensor.dim %x, %c0 : tensor<?x8xf32>
  %e = tensor.empty(%n) : tensor<?x8xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]} ins(%x : tensor<?x8xf32>) outs(%e : tensor<?x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<?x8xf32>
  %h = arith.muli %n, %c2 : index
  %v = tensor.expand_shape %y [[0, 1], [2]] output_shape [%n, 1, 8] : tensor<?x8xf32> into tensor<?x1x8xf32>
  %m = tensor.dim %v, %c0 : tensor<?x1x8xf32>
  %e2 = tensor.empty(%m) : tensor<?x8xf32>
  %z = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]} ins(%x : tensor<?x8xf32>) outs(%e2 : tensor<?x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<?x8xf32>
  return %z : tensor<?x8xf32>
}
