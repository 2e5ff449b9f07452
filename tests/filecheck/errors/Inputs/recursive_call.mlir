func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = func.call @f(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}
