// linalg.map in region form with an attribute dict before the block arguments, as
// upstream prints it.
func.func @f(%b: tensor<6x40xf32>) -> tensor<6x40xf32> {
  %e = tensor.empty() : tensor<6x40xf32>
  %r = linalg.map ins(%b : tensor<6x40xf32>) outs(%e : tensor<6x40xf32>) {foo = 1 : i64}
    (%v: f32) {
      %t = math.tanh %v : f32
      linalg.yield %t : f32
    }
  return %r : tensor<6x40xf32>
}
