func.func @f(%x: tensor<2x16x300xf32>) -> tensor<2x16x300xf32> {
  %o = tensor.empty() : tensor<2x16x300xf32>
  %r = linalg.softmax dimension(2) ins(%x : tensor<2x16x300xf32>) outs(%o : tensor<2x16x300xf32>) -> tensor<2x16x300xf32>
  return %r : tensor<2x16x300xf32>
}
