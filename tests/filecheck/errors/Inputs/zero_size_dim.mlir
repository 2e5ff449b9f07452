func.func @f(%a: tensor<4x0xf32>) -> tensor<4x0xf32> {
  func.return %a : tensor<4x0xf32>
}
