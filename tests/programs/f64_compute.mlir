// f64 programs compute in f64 (a matmul, softmax, tanh): checked at f64's tolerance.
func.func @f64c(%x: tensor<24x40xf64>, %w: tensor<40x32xf64>) -> (tensor<24x32xf64>, tensor<24x40xf64>) {
  %zero = arith.constant 0.0 : f64
  %e = tensor.empty() : tensor<24x32xf64>
  %i = linalg.fill ins(%zero : f64) outs(%e : tensor<24x32xf64>) -> tensor<24x32xf64>
  %m = linalg.matmul ins(%x, %w : tensor<24x40xf64>, tensor<40x32xf64>) outs(%i : tensor<24x32xf64>) -> tensor<24x32xf64>
  %t = linalg.tanh ins(%m : tensor<24x32xf64>) outs(%e : tensor<24x32xf64>) -> tensor<24x32xf64>
  %es = tensor.empty() : tensor<24x40xf64>
  %s = linalg.softmax dimension(1) ins(%x : tensor<24x40xf64>) outs(%es : tensor<24x40xf64>) -> tensor<24x40xf64>
  func.return %t, %s : tensor<24x32xf64>, tensor<24x40xf64>
}
