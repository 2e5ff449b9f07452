// Max pooling whose window-shape operand is an i8 tensor.empty: only its shape
// is read (it was refused as a non-float operand).
func.func @f(%x: tensor<1x2x6x6xf32>) -> tensor<1x2x3x3xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<1x2x3x3xf32>
  %o = linalg.fill ins(%ninf : f32) outs(%e : tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %k = tensor.empty() : tensor<2x2xi8>
  %r = linalg.pooling_nchw_max {strides = dense<2> : tensor<2xi64>} ins(%x, %k : tensor<1x2x6x6xf32>, tensor<2x2xi8>) outs(%o : tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  func.return %r : tensor<1x2x3x3xf32>
}
