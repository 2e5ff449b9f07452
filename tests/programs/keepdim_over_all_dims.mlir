// torch's x - x.mean(dim=(0, 1, 2), keepdim=True) and a 1x1x1 scale, as torch-mlir
// prints them: every result of the statistics' maps is the constant 0. The 1x1x1
// values keep one unit dim, indexed by a new loop of extent 1 (a view of rank 0
// is not an xDSL expand_shape).
#x = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#all = affine_map<(d0, d1, d2) -> (0, 0, 0)>
func.func @centered(%x: tensor<5x7x33xf32>, %s: tensor<1x1x1xf32>) -> (tensor<5x7x33xf32>, tensor<1x1x1xf32>) {
  %zero = arith.constant 0.0 : f32
  %n = arith.constant 1155.0 : f32
  %e1 = tensor.empty() : tensor<1x1x1xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x1x1xf32>) -> tensor<1x1x1xf32>
  %sum = linalg.generic {indexing_maps = [#x, #all], iterator_types = ["reduction", "reduction", "reduction"]} ins(%x : tensor<5x7x33xf32>) outs(%z : tensor<1x1x1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<1x1x1xf32>
  %e = tensor.empty() : tensor<5x7x33xf32>
  %c = linalg.generic {indexing_maps = [#x, #all, #all, #x], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x, %sum, %s : tensor<5x7x33xf32>, tensor<1x1x1xf32>, tensor<1x1x1xf32>) outs(%e : tensor<5x7x33xf32>) {
  ^bb0(%a: f32, %t: f32, %k: f32, %o: f32):
    %m = arith.divf %t, %n : f32
    %d = arith.subf %a, %m : f32
    %r = arith.mulf %d, %k : f32
    linalg.yield %r : f32
  } -> tensor<5x7x33xf32>
  return %c, %sum : tensor<5x7x33xf32>, tensor<1x1x1xf32>
}
