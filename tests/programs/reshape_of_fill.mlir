func.func @f(%x: tensor<2x3x16xf32>) -> tensor<2x3x16xf32> {
  %one = arith.constant 1.5 : f32
  %e0 = tensor.empty() : tensor<6x16xf32>
  %z0 = linalg.fill ins(%one : f32) outs(%e0 : tensor<6x16xf32>) -> tensor<6x16xf32>
  %z3 = tensor.expand_shape %z0 [[0, 1], [2]] output_shape [2, 3, 16] : tensor<6x16xf32> into tensor<2x3x16xf32>
  %e3 = tensor.empty() : tensor<2x3x16xf32>
  %a = linalg.add ins(%x, %z3 : tensor<2x3x16xf32>, tensor<2x3x16xf32>) outs(%e3 : tensor<2x3x16xf32>) -> tensor<2x3x16xf32>
  return %a : tensor<2x3x16xf32>
}
