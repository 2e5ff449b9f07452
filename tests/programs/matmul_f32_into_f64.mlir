// f32 operands into an f64 accumulator, K = 80 (several dot steps): the operands are
// widened to f64 (the interpreter asserted on the second tl.dot before).
func.func @f(%a: tensor<4x80xf32>, %b: tensor<80x5xf32>) -> tensor<4x5xf64> {
  %z = arith.constant 0.0 : f64
  %e = tensor.empty() : tensor<4x5xf64>
  %o = linalg.fill ins(%z : f64) outs(%e : tensor<4x5xf64>) -> tensor<4x5xf64>
  %r = linalg.matmul ins(%a, %b : tensor<4x80xf32>, tensor<80x5xf32>) outs(%o : tensor<4x5xf64>) -> tensor<4x5xf64>
  func.return %r : tensor<4x5xf64>
}
