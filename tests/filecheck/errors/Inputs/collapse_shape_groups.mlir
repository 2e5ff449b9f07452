func.func @f(%a: tensor<4x6xf32>) -> tensor<24xf32> {
  %c = tensor.collapse_shape %a [[0], [1]] : tensor<4x6xf32> into tensor<24xf32>
  func.return %c : tensor<24xf32>
}
