// A [1, N] bias broadcast through a constant-0 map result, and a keep-dim row sum.
#x = affine_map<(d0, d1) -> (d0, d1)>
#b = affine_map<(d0, d1) -> (0, d1)>
func.func @cm(%x: tensor<33x70xf32>, %bias: tensor<1x70xf32>) -> tensor<33x70xf32> {
  %e = tensor.empty() : tensor<33x70xf32>
  %r = linalg.generic {indexing_maps = [#x, #b, #x], iterator_types = ["parallel", "parallel"]} ins(%x, %bias : tensor<33x70xf32>, tensor<1x70xf32>) outs(%e : tensor<33x70xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<33x70xf32>
  func.return %r : tensor<33x70xf32>
}
