func.func @f(%x: tensor<6xf32>) -> (tensor<6xf32>, tensor<6xf32>) {
  %one = arith.constant 1.5 : f32
  %e = tensor.empty() : tensor<6xf32>
  %z = linalg.fill ins(%one : f32) outs(%e : tensor<6xf32>) -> tensor<6xf32>
  %t = linalg.exp ins(%x : tensor<6xf32>) outs(%e : tensor<6xf32>) -> tensor<6xf32>
  return %z, %t : tensor<6xf32>, tensor<6xf32>
}
