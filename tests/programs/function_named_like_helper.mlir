// A function named like a helper of the generated module.
#m = affine_map<(d0) -> (d0)>
func.func @_log1p(%x: tensor<40xf32>) -> tensor<40xf32> {
  %e = tensor.empty() : tensor<40xf32>
  %r = linalg.generic {indexing_maps = [#m, #m], iterator_types = ["parallel"]} ins(%x : tensor<40xf32>) outs(%e : tensor<40xf32>) {
  ^bb0(%a: f32, %o: f32):
    %c = arith.constant 10.0 : f32
    %p = math.log1p %a : f32
    linalg.yield %p : f32
  } -> tensor<40xf32>
  func.return %r : tensor<40xf32>
}
