func.func @f(%x: tensor<6xf32>) -> tensor<2x3xf32> {
  %e = tensor.empty() : tensor<6xf32>
  %t = linalg.exp ins(%x : tensor<6xf32>) outs(%e : tensor<6xf32>) -> tensor<6xf32>
  %e2 = tensor.empty() : tensor<2x3xf32>
  %e6 = tensor.collapse_shape %e2 [[0, 1]] : tensor<2x3xf32> into tensor<6xf32>
  %u = linalg.negf ins(%t : tensor<6xf32>) outs(%e6 : tensor<6xf32>) -> tensor<6xf32>
  %r = tensor.expand_shape %u [[0, 1]] output_shape [2, 3] : tensor<6xf32> into tensor<2x3xf32>
  return %r : tensor<2x3xf32>
}
