func.func @f(%x: tensor<8x16xi4>) -> tensor<8x16xi4> {
  %o = tensor.empty() : tensor<8x16xi4>
  %r = linalg.add ins(%x, %x : tensor<8x16xi4>, tensor<8x16xi4>) outs(%o : tensor<8x16xi4>) -> tensor<8x16xi4>
  return %r : tensor<8x16xi4>
}
