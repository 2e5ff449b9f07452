// math.fpowi (torch's x.pow(2), x**3, x.pow(-2)) is exact for a negative base, where
// a powf is NaN: constant exponents unrolled (x**3 = x * x * x, x**-2 = 1 / (x * x),
// x**0 = 1 for NaN too), an exponent read from a tensor through the helper's loop;
// (-0.0)**-1 = -inf, 0**-2 = inf, (-2)**-3 = -0.125.
#m = affine_map<(d0) -> (d0)>
func.func @powi(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %base = arith.constant dense<[-2.0, -0.0, 0.0, -1.5, 3.0, -1.0, 0x7FC00000, -0.5]> : tensor<8xf32>
  %expo = arith.constant dense<[-3, -1, -2, 5, 0, 7, 0, -4]> : tensor<8xi32>
  %c2 = arith.constant 2 : i64
  %c3 = arith.constant 3 : i64
  %cm2 = arith.constant -2 : i64
  %cm3 = arith.constant -3 : i64
  %c7 = arith.constant 7 : i64
  %c0 = arith.constant 0 : i64
  %e = tensor.empty() : tensor<8xf32>
  %r:4 = linalg.generic {indexing_maps = [#m, #m, #m, #m, #m, #m, #m], iterator_types = ["parallel"]}
      ins(%base, %expo, %x : tensor<8xf32>, tensor<8xi32>, tensor<8xf32>)
      outs(%e, %e, %e, %e : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  ^bb0(%b: f32, %p: i32, %in: f32, %o1: f32, %o2: f32, %o3: f32, %o4: f32):
    %v = math.fpowi %b, %p : f32, i32
    %sq = math.fpowi %in, %c2 : f32, i64
    %cube = math.fpowi %in, %c3 : f32, i64
    %inv2 = math.fpowi %in, %cm2 : f32, i64
    %inv3 = math.fpowi %b, %cm3 : f32, i64
    %seven = math.fpowi %in, %c7 : f32, i64
    %one = math.fpowi %b, %c0 : f32, i64
    %s1 = arith.addf %sq, %cube : f32
    %s2 = arith.subf %seven, %inv2 : f32
    %s3 = arith.addf %inv3, %one : f32
    linalg.yield %v, %s1, %s2, %s3 : f32, f32, f32, f32
  } -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  func.return %r#0, %r#1, %r#2, %r#3 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}
