func.func @f(%a: tensor<4x6xf32>) -> tensor<2x2x6xf32> {
  %x = tensor.expand_shape %a [[0, 1], [2]] output_shape [4, 1, 6] : tensor<4x6xf32> into tensor<2x2x6xf32>
  func.return %x : tensor<2x2x6xf32>
}
