// A function without arguments: its kernels run where the runtime runs them (the host
// function had an empty parameter before its keyword marker: a syntax error).
func.func @f() -> tensor<4xf32> {
  %c = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %e = tensor.empty() : tensor<4xf32>
  %0 = linalg.exp ins(%c : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
