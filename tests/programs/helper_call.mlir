// A private helper function called from the entry function: inlined first.
func.func private @helper(%x: tensor<8xf32>) -> tensor<8xf32> {
  %e = tensor.empty() : tensor<8xf32>
  %r = linalg.exp ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  func.return %r : tensor<8xf32>
}
func.func @main(%x: tensor<8xf32>) -> tensor<8xf32> {
  %r = func.call @helper(%x) : (tensor<8xf32>) -> tensor<8xf32>
  func.return %r : tensor<8xf32>
}
