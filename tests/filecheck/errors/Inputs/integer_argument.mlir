func.func @f(%x: tensor<8x16xi32>) -> tensor<8x16xi32> {
  %o = tensor.empty() : tensor<8x16xi32>
  %r = linalg.add ins(%x, %x : tensor<8x16xi32>, tensor<8x16xi32>) outs(%o : tensor<8x16xi32>) -> tensor<8x16xi32>
  return %r : tensor<8x16xi32>
}
