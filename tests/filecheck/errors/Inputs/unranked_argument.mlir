func.func @f(%a: tensor<*xf32>) -> tensor<*xf32> {
  func.return %a : tensor<*xf32>
}
