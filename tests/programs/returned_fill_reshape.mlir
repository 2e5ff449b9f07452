func.func @f(%x: tensor<6xf32>) -> (tensor<2x3xf32>, tensor<6xf32>) {
  %one = arith.constant 1.5 : f32
  %e0 = tensor.empty() : tensor<6xf32>
  %z0 = linalg.fill ins(%one : f32) outs(%e0 : tensor<6xf32>) -> tensor<6xf32>
  %z3 = tensor.expand_shape %z0 [[0, 1]] output_shape [2, 3] : tensor<6xf32> into tensor<2x3xf32>
  %a = linalg.add ins(%x, %z0 : tensor<6xf32>, tensor<6xf32>) outs(%e0 : tensor<6xf32>) -> tensor<6xf32>
  return %z3, %a : tensor<2x3xf32>, tensor<6xf32>
}
