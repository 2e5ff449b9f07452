// A 0-d argument broadcast over a matrix (tensor<f32>: no strides), powf and rsqrt.
#m2 = affine_map<(d0, d1) -> (d0, d1)>
#s = affine_map<(d0, d1) -> ()>
func.func @sb(%x: tensor<50x70xf32>, %s: tensor<f32>) -> tensor<50x70xf32> {
  %e = tensor.empty() : tensor<50x70xf32>
  %r = linalg.generic {indexing_maps = [#m2, #s, #m2], iterator_types = ["parallel", "parallel"]} ins(%x, %s : tensor<50x70xf32>, tensor<f32>) outs(%e : tensor<50x70xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.divf %a, %b : f32
    %p = math.powf %d, %b : f32
    %q = math.rsqrt %b : f32
    %t = arith.mulf %p, %q : f32
    linalg.yield %t : f32
  } -> tensor<50x70xf32>
  func.return %r : tensor<50x70xf32>
}
