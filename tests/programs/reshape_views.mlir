func.func @f(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
  %e = tensor.expand_shape %x [[0], [1, 2]] output_shape [4, 8, 8] : tensor<4x64xf32> into tensor<4x8x8xf32>
  %o = tensor.empty() : tensor<4x8x8xf32>
  %r = linalg.exp ins(%e : tensor<4x8x8xf32>) outs(%o : tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
  %c = tensor.collapse_shape %r [[0], [1, 2]] : tensor<4x8x8xf32> into tensor<4x64xf32>
  return %c : tensor<4x64xf32>
}
