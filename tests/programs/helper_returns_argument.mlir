// A helper that returns one of its own arguments next to a computed value.
func.func private @pass(%x: tensor<8xf32>, %y: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %e = tensor.empty() : tensor<8xf32>
  %r = linalg.exp ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  func.return %r, %y : tensor<8xf32>, tensor<8xf32>
}
func.func @main(%x: tensor<8xf32>, %y: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %r:2 = func.call @pass(%x, %y) : (tensor<8xf32>, tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
  %e = tensor.empty() : tensor<8xf32>
  %n = linalg.negf ins(%r#1 : tensor<8xf32>) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  func.return %r#0, %n : tensor<8xf32>, tensor<8xf32>
}
