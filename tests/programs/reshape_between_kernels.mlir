func.func @f(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
  %o = tensor.empty() : tensor<4x64xf32>
  %c = linalg.tanh ins(%x : tensor<4x64xf32>) outs(%o : tensor<4x64xf32>) -> tensor<4x64xf32>
  %a = linalg.exp ins(%c : tensor<4x64xf32>) outs(%o : tensor<4x64xf32>) -> tensor<4x64xf32>
  %r = tensor.expand_shape %a [[0], [1, 2]] output_shape [4, 8, 8] : tensor<4x64xf32> into tensor<4x8x8xf32>
  %q = tensor.collapse_shape %r [[0], [1, 2]] : tensor<4x8x8xf32> into tensor<4x64xf32>
  %b = linalg.add ins(%c, %q : tensor<4x64xf32>, tensor<4x64xf32>) outs(%o : tensor<4x64xf32>) -> tensor<4x64xf32>
  return %b : tensor<4x64xf32>
}
