// 8-op elementwise chain over [M, N]: t1=x*y, t2=t1+x, t3=t2-y, t4=tanh(t3), t5=max(t4,x), t6=t5*t5, t7=t6-t4, out=t7*0.5
// tilefuse.dims: M=53 N=190
// tilefuse.dtype: f32
// tilefuse.args: x, y
func.func @elementwise_chain(%x: tensor<53x190xf32>, %y: tensor<53x190xf32>) -> tensor<53x190xf32> {
  %half = arith.constant 0.5 : f32
  %empty = tensor.empty() : tensor<53x190xf32>

  // 1: t1 = x * y
  %t1 = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : tensor<53x190xf32>, tensor<53x190xf32>) outs(%empty : tensor<53x190xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.mulf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<53x190xf32>

  // 2: t2 = t1 + x
  %t2 = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%t1, %x : tensor<53x190xf32>, tensor<53x190xf32>) outs(%empty : tensor<53x190xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<53x190xf32>

  // 3: t3 = t2 - y
  %t3 = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%t2, %y : tensor<53x190xf32>, tensor<53x190xf32>) outs(%empty : tensor<53x190xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.subf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<53x190xf32>

  // 4: t4 = tanh(t3)
  %t4 = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%t3 : tensor<53x190xf32>) outs(%empty : tensor<53x190xf32>) {
  ^bb0(%a: f32, %out: f32):
    %r = math.tanh %a : f32
    linalg.yield %r : f32
  } -> tensor<53x190xf32>

  // 5: t5 = max(t4, x)
  %t5 = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%t4, %x : tensor<53x190xf32>, tensor<53x190xf32>) outs(%empty : tensor<53x190xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.maximumf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<53x190xf32>

  // 6: t6 = t5 * t5
  %t6 = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%t5 : tensor<53x190xf32>) outs(%empty : tensor<53x190xf32>) {
  ^bb0(%a: f32, %out: f32):
    %r = arith.mulf %a, %a : f32
    linalg.yield %r : f32
  } -> tensor<53x190xf32>

  // 7: t7 = t6 - t4
  %t7 = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%t6, %t4 : tensor<53x190xf32>, tensor<53x190xf32>) outs(%empty : tensor<53x190xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.subf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<53x190xf32>

  // 8: out = t7 * 0.5
  %t8 = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%t7 : tensor<53x190xf32>) outs(%empty : tensor<53x190xf32>) {
  ^bb0(%a: f32, %out: f32):
    %r = arith.mulf %a, %half : f32
    linalg.yield %r : f32
  } -> tensor<53x190xf32>

  return %t8 : tensor<53x190xf32>
}
