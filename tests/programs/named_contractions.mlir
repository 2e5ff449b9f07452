func.func @f(%q: tensor<2x16x8xf32>, %k: tensor<2x12x8xf32>, %x: tensor<16x8xf32>, %w: tensor<12x8xf32>) -> (tensor<2x16x12xf32>, tensor<16x12xf32>, tensor<16x12xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x16x12xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<2x16x12xf32>) -> tensor<2x16x12xf32>
  %s = linalg.batch_matmul_transpose_b ins(%q, %k : tensor<2x16x8xf32>, tensor<2x12x8xf32>) outs(%f : tensor<2x16x12xf32>) -> tensor<2x16x12xf32>
  %e2 = tensor.empty() : tensor<16x12xf32>
  %f2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<16x12xf32>) -> tensor<16x12xf32>
  %m = linalg.matmul_transpose_b ins(%x, %w : tensor<16x8xf32>, tensor<12x8xf32>) outs(%f2 : tensor<16x12xf32>) -> tensor<16x12xf32>
  %t = linalg.tanh ins(%m : tensor<16x12xf32>) outs(%e2 : tensor<16x12xf32>) -> tensor<16x12xf32>
  %d = linalg.div ins(%t, %m : tensor<16x12xf32>, tensor<16x12xf32>) outs(%e2 : tensor<16x12xf32>) -> tensor<16x12xf32>
  return %s, %m, %d : tensor<2x16x12xf32>, tensor<16x12xf32>, tensor<16x12xf32>
}
