// RUN: tilefuse-opt %s --dim-range x.0=1:64 --dim-range x.1=1:4096 -p propagate-reshapes | filecheck %s

// Two dynamic sizes in one group (batch and tokens merged, then split again by
// sizes only the expand knows): no cluster merges them, and expand(collapse(x))
// does not fold by type (its output_shape could split [x.0 * x.1] otherwise).
// CHECK-LABEL: func.func @two_dynamic
// CHECK:       %[[C:.*]] = tensor.collapse_shape %x
// CHECK:       %[[E:.*]] = tensor.expand_shape %[[C]] {{.*}} output_shape [%b, %a, 16]
// CHECK:       linalg.generic {{.*}} ins(%[[E]] : tensor<?x?x16xf32>)
func.func @two_dynamic(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = tensor.dim %x, %c0 : tensor<?x?x16xf32>
  %b = tensor.dim %x, %c1 : tensor<?x?x16xf32>
  %c = tensor.collapse_shape %x [[0, 1], [2]] : tensor<?x?x16xf32> into tensor<?x16xf32>
  %v = tensor.expand_shape %c [[0, 1], [2]] output_shape [%b, %a, 16] : tensor<?x16xf32> into tensor<?x?x16xf32>
  %e = tensor.empty(%b, %a) : tensor<?x?x16xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%v : tensor<?x?x16xf32>) outs(%e : tensor<?x?x16xf32>) {
  ^bb0(%i: f32, %o: f32):
    %r = arith.addf %i, %i : f32
    linalg.yield %r : f32
  } -> tensor<?x?x16xf32>
  func.return %y : tensor<?x?x16xf32>
}
