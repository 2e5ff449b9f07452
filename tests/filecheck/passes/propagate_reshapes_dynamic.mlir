// RUN: tilefuse-opt %s --dim-range x.1=1:4096 -p propagate-reshapes | filecheck %s

// A dynamic program's keep-dim statistic (tokens T dynamic): the row sum on [2, T]
// expanded to [2, T, 1], divided there, collapsed back. Each group holds one dynamic
// size, which its static ones determine: both views fold, as in a static program.
// CHECK-LABEL: func.func @keepdim_dynamic
// CHECK-NOT:   _shape
// CHECK:       %[[S:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
// CHECK:       %[[D:.*]] = linalg.generic {{.*}} ins(%[[S]] : tensor<2x?xf32>) outs(%{{.*}} : tensor<2x?xf32>)
// CHECK-NOT:   _shape
// CHECK:       linalg.generic {{.*}} ins(%x, %[[D]] : tensor<2x?x16xf32>, tensor<2x?xf32>)
func.func @keepdim_dynamic(%x: tensor<2x?x16xf32>) -> tensor<2x?x16xf32> {
  %zero = arith.constant 0.0 : f32
  %n = arith.constant 16.0 : f32
  %c1 = arith.constant 1 : index
  %t = tensor.dim %x, %c1 : tensor<2x?x16xf32>
  %e = tensor.empty(%t) : tensor<2x?xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x?xf32>) -> tensor<2x?xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x : tensor<2x?x16xf32>) outs(%z : tensor<2x?xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<2x?xf32>
  %s1 = tensor.expand_shape %s [[0], [1, 2]] output_shape [2, %t, 1] : tensor<2x?xf32> into tensor<2x?x1xf32>
  %e1 = tensor.empty(%t) : tensor<2x?x1xf32>
  %m1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s1 : tensor<2x?x1xf32>) outs(%e1 : tensor<2x?x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.divf %a, %n : f32
    linalg.yield %r : f32
  } -> tensor<2x?x1xf32>
  %m = tensor.collapse_shape %m1 [[0], [1, 2]] : tensor<2x?x1xf32> into tensor<2x?xf32>
  %e2 = tensor.empty(%t) : tensor<2x?x16xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x, %m : tensor<2x?x16xf32>, tensor<2x?xf32>) outs(%e2 : tensor<2x?x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.subf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x?x16xf32>
  func.return %y : tensor<2x?x16xf32>
}
