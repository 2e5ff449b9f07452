// A convolution over a constant fill: the window of a fill is a fill of the
// window's shape (it was refused, without a location).

func.func @f(%w: tensor<3x2x3x3xf32>) -> tensor<1x3x3x3xf32> {
  %zero = arith.constant 0.0 : f32
  %two = arith.constant 2.0 : f32
  %ex = tensor.empty() : tensor<1x2x5x5xf32>
  %x = linalg.fill ins(%two : f32) outs(%ex : tensor<1x2x5x5xf32>) -> tensor<1x2x5x5xf32>
  %e = tensor.empty() : tensor<1x3x3x3xf32>
  %o = linalg.fill ins(%zero : f32) outs(%e : tensor<1x3x3x3xf32>) -> tensor<1x3x3x3xf32>
  %c = linalg.conv_2d_nchw_fchw ins(%x, %w : tensor<1x2x5x5xf32>, tensor<3x2x3x3xf32>) outs(%o : tensor<1x3x3x3xf32>) -> tensor<1x3x3x3xf32>
  func.return %c : tensor<1x3x3x3xf32>
}