func.func @f(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %o = tensor.empty() : tensor<4x8xf32>
  %ob = tensor.empty() : tensor<4x8xi1>
  %c = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%x, %y : tensor<4x8xf32>, tensor<4x8xf32>) outs(%ob : tensor<4x8xi1>) {
  ^bb0(%a: f32, %b: f32, %d: i1):
    %p = arith.cmpf ogt, %a, %b : f32
    linalg.yield %p : i1
  } -> tensor<4x8xi1>
  %s = linalg.select ins(%c, %x, %y : tensor<4x8xi1>, tensor<4x8xf32>, tensor<4x8xf32>) outs(%o : tensor<4x8xf32>) -> tensor<4x8xf32>
  %k = linalg.copy ins(%x : tensor<4x8xf32>) outs(%o : tensor<4x8xf32>) -> tensor<4x8xf32>
  %m = linalg.max ins(%x, %y : tensor<4x8xf32>, tensor<4x8xf32>) outs(%o : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %s, %k, %m : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
