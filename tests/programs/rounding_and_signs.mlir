// math.roundeven (torch.round), math.round (halves away from zero), math.copysign and
// math.cbrt, on values around the halves (x * 2.5 puts many on a tie).
#m = affine_map<(d0, d1) -> (d0, d1)>
func.func @rounding(%x: tensor<8x33xf32>, %y: tensor<8x33xf32>) -> (tensor<8x33xf32>, tensor<8x33xf32>, tensor<8x33xf32>, tensor<8x33xf32>) {
  %h = arith.constant 2.5 : f32
  %e = tensor.empty() : tensor<8x33xf32>
  %r:4 = linalg.generic {indexing_maps = [#m, #m, #m, #m, #m, #m], iterator_types = ["parallel", "parallel"]} ins(%x, %y : tensor<8x33xf32>, tensor<8x33xf32>) outs(%e, %e, %e, %e : tensor<8x33xf32>, tensor<8x33xf32>, tensor<8x33xf32>, tensor<8x33xf32>) {
  ^bb0(%a: f32, %b: f32, %o0: f32, %o1: f32, %o2: f32, %o3: f32):
    %s = arith.mulf %a, %h : f32
    %t = math.roundeven %s : f32
    %u = math.round %s : f32
    %v = math.copysign %s, %b : f32
    %w = math.cbrt %s : f32
    linalg.yield %t, %u, %v, %w : f32, f32, f32, f32
  } -> (tensor<8x33xf32>, tensor<8x33xf32>, tensor<8x33xf32>, tensor<8x33xf32>)
  return %r#0, %r#1, %r#2, %r#3 : tensor<8x33xf32>, tensor<8x33xf32>, tensor<8x33xf32>, tensor<8x33xf32>
}
