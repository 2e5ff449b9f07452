func.func @f(%a: tensor<4x6xf32>) -> tensor<25xf32> {
  %c = tensor.collapse_shape %a [[0, 1]] : tensor<4x6xf32> into tensor<25xf32>
  func.return %c : tensor<25xf32>
}
