// linalg.reduce and linalg.map as mlir-opt prints them when the payload is one op:
// `{ arith.addf }` (attributes too), and linalg.map's region form, whose block has
// arguments for the inputs only.
func.func @short(%a: tensor<6x40xf32>, %b: tensor<6x40xf32>) -> (tensor<6xf32>, tensor<6x40xf32>, tensor<6xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<6x40xf32>
  %p = linalg.map { arith.mulf {fastmath = #arith.fastmath<fast>} } ins(%a, %b : tensor<6x40xf32>, tensor<6x40xf32>) outs(%e : tensor<6x40xf32>)
  %x = linalg.map ins(%p : tensor<6x40xf32>) outs(%e : tensor<6x40xf32>)
    (%v: f32) {
      %t = math.tanh %v : f32
      linalg.yield %t : f32
    }
  %r = tensor.empty() : tensor<6xf32>
  %z = linalg.fill ins(%zero : f32) outs(%r : tensor<6xf32>) -> tensor<6xf32>
  %s = linalg.reduce { arith.addf } ins(%x : tensor<6x40xf32>) outs(%z : tensor<6xf32>) dimensions = [1]
  %m0 = linalg.fill ins(%ninf : f32) outs(%r : tensor<6xf32>) -> tensor<6xf32>
  %m = linalg.reduce { arith.maximumf } ins(%a : tensor<6x40xf32>) outs(%m0 : tensor<6xf32>) dimensions = [1]
  return %s, %x, %m : tensor<6xf32>, tensor<6x40xf32>, tensor<6xf32>
}
