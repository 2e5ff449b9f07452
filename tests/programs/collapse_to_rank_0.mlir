// tensor.collapse_shape of unit dims to rank 0 with no groups, as upstream allows.
func.func @f(%x: tensor<1x1xf32>) -> tensor<f32> {
  %c = tensor.collapse_shape %x [] : tensor<1x1xf32> into tensor<f32>
  %e = tensor.empty() : tensor<f32>
  %t = linalg.exp ins(%c : tensor<f32>) outs(%e : tensor<f32>) -> tensor<f32>
  return %t : tensor<f32>
}
