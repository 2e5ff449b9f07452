// Payload values named %inf and %nan (Python names `inf` and `nan`) passed to
// prelude helpers: they are blocks, not literals to wrap.
#m = affine_map<(i) -> (i)>
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  %two = arith.constant 2.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %r = linalg.generic {indexing_maps = [#m, #m], iterator_types = ["parallel"]} ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %inf = arith.mulf %a, %a : f32
    %nan = math.powf %inf, %two : f32
    %y = math.copysign %nan, %a : f32
    linalg.yield %y : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}
