// One tensor read along two different loops of a group: `x` (an argument)
// by two ops, and `y = exp(x)` (computed in the group) by one op as
// y[j] - y[i]. The argument is loaded twice; `exp` is computed once per read.
#v = affine_map<(d0, d1) -> (d1)>
#u = affine_map<(d0, d1) -> (d0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#m1 = affine_map<(d0) -> (d0)>
func.func @f(%x: tensor<45xf32>, %a: tensor<45x45xf32>) -> tensor<45x45xf32> {
  %e1 = tensor.empty() : tensor<45xf32>
  %y = linalg.generic {indexing_maps = [#m1, #m1], iterator_types = ["parallel"]} ins(%x : tensor<45xf32>) outs(%e1 : tensor<45xf32>) {
  ^bb0(%in: f32, %out: f32):
    %t = math.exp %in : f32
    linalg.yield %t : f32
  } -> tensor<45xf32>
  %e = tensor.empty() : tensor<45x45xf32>
  %d = linalg.generic {indexing_maps = [#v, #u, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%y, %y, %a : tensor<45xf32>, tensor<45xf32>, tensor<45x45xf32>) outs(%e : tensor<45x45xf32>) {
  ^bb0(%p: f32, %q: f32, %s: f32, %out: f32):
    %t = arith.subf %p, %q : f32
    %w = arith.mulf %t, %s : f32
    linalg.yield %w : f32
  } -> tensor<45x45xf32>
  %b = linalg.generic {indexing_maps = [#id, #u, #id], iterator_types = ["parallel", "parallel"]} ins(%d, %x : tensor<45x45xf32>, tensor<45xf32>) outs(%e : tensor<45x45xf32>) {
  ^bb0(%p: f32, %q: f32, %out: f32):
    %t = arith.addf %p, %q : f32
    linalg.yield %t : f32
  } -> tensor<45x45xf32>
  %c = linalg.generic {indexing_maps = [#id, #v, #id], iterator_types = ["parallel", "parallel"]} ins(%b, %x : tensor<45x45xf32>, tensor<45xf32>) outs(%e : tensor<45x45xf32>) {
  ^bb0(%p: f32, %q: f32, %out: f32):
    %t = arith.mulf %p, %q : f32
    linalg.yield %t : f32
  } -> tensor<45x45xf32>
  return %c : tensor<45x45xf32>
}
