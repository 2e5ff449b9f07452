func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = foo.bar %x : tensor<4xf32>
  func.return %y : tensor<4xf32>
}
