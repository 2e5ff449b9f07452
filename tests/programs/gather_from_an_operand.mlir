// A generic that reads exp(x) both as an input (elementwise) and by
// tensor.extract at a computed index (y[i, t_i], each row's target): the
// gathered tensor must be in memory, so exp is a kernel of its own and the
// fusion log says why (exp is not fused into the gather).
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0)>
module {
  func.func @main(%x: tensor<7x10xf32>, %t: tensor<7xi64>) -> tensor<7x10xf32> {
    %c0_i64 = arith.constant 0 : i64
    %c10_i64 = arith.constant 10 : i64
    %0 = tensor.empty() : tensor<7x10xf32>
    %y = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<7x10xf32>) outs(%0 : tensor<7x10xf32>) {
    ^bb0(%in: f32, %out: f32):
      %e = math.exp %in : f32
      linalg.yield %e : f32
    } -> tensor<7x10xf32>
    %r = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%y, %t : tensor<7x10xf32>, tensor<7xi64>) outs(%0 : tensor<7x10xf32>) {
    ^bb0(%in: f32, %target: i64, %out: f32):
      %i = linalg.index 0 : index
      %neg = arith.cmpi slt, %target, %c0_i64 : i64
      %up = arith.addi %target, %c10_i64 : i64
      %w = arith.select %neg, %up, %target : i64
      %j = arith.index_cast %w : i64 to index
      %picked = tensor.extract %y[%i, %j] : tensor<7x10xf32>
      %d = arith.subf %in, %picked : f32
      linalg.yield %d : f32
    } -> tensor<7x10xf32>
    return %r : tensor<7x10xf32>
  }
}
