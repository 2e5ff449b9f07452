func.func @f(%x: tensor<4x8xf32>) -> tensor<4x9xf32> {
  %e = tensor.empty() : tensor<4x9xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x9xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<4x9xf32>
  func.return %y : tensor<4x9xf32>
}
