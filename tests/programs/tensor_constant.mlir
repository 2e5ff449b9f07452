func.func @f(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %b = arith.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %o = tensor.empty() : tensor<4x3xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%x, %b : tensor<4x3xf32>, tensor<3xf32>) outs(%o : tensor<4x3xf32>) {
  ^bb0(%a: f32, %c: f32, %d: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<4x3xf32>
  return %r : tensor<4x3xf32>
}
