// An additive mask written as upstream prints it: hexadecimal elements of a float
// dense<...> are bit patterns (0xFF800000 is -inf), then a softmax over the rows.
func.func @masked(%x: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %mask = arith.constant dense<[[0.0, 0xFF800000, 0.0, 0xFF800000, 0.0, 0.0],
                                [0xFF800000, 0.0, 0.0, 0.0, 0.0, 0xFF800000],
                                [0.0, 0.0, 0xFF800000, 0.0, 0.0, 0.0],
                                [0.0, 0.0, 0.0, 0.0, 0xFF800000, 0.0]]> : tensor<4x6xf32>
  %e = tensor.empty() : tensor<4x6xf32>
  %s = linalg.add ins(%x, %mask : tensor<4x6xf32>, tensor<4x6xf32>) outs(%e : tensor<4x6xf32>) -> tensor<4x6xf32>
  %p = linalg.softmax dimension(1) ins(%s : tensor<4x6xf32>) outs(%e : tensor<4x6xf32>) -> tensor<4x6xf32>
  func.return %p : tensor<4x6xf32>
}
