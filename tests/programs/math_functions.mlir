// math ops beyond the basics, with the edge values libm defines: powf of negative
// bases (integral exponents keep a sign, others give NaN), 0 ** -1 = inf, x ** 0 = 1;
// log1p/expm1 of tiny arguments (no cancellation); log10, tan, sinh, cosh, trunc.
#m = affine_map<(d0) -> (d0)>
func.func @mathf(%x: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %base = arith.constant dense<[-2.0, -2.0, -0.5, 0.0, 0.0, 2.0, 3.0, -3.0, 1.5, -1.5, 4.0, 0.25, -8.0, 10.0, 1.0, -1.0]> : tensor<16xf32>
  %expo = arith.constant dense<[2.0, 3.0, 0.5, -1.0, 0.0, -2.0, 0.5, 0.0, 2.5, 4.0, -0.5, 3.0, 1.0, 0.3, 7.0, 5.0]> : tensor<16xf32>
  %e = tensor.empty() : tensor<16xf32>
  %r:4 = linalg.generic {indexing_maps = [#m, #m, #m, #m, #m, #m, #m], iterator_types = ["parallel"]}
      ins(%base, %expo, %x : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) outs(%e, %e, %e, %e : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) {
  ^bb0(%b: f32, %p: f32, %a: f32, %o1: f32, %o2: f32, %o3: f32, %o4: f32):
    %pow = math.powf %b, %p : f32
    %tiny = arith.constant 1.0e-6 : f32
    %s = arith.mulf %a, %tiny : f32
    %l1p = math.log1p %s : f32
    %em1 = math.expm1 %s : f32
    %sum1 = arith.addf %l1p, %em1 : f32
    %ab = math.absf %a : f32
    %l10 = math.log10 %ab : f32
    %t = math.tan %a : f32
    %sh = math.sinh %s : f32
    %ch = math.cosh %a : f32
    %tr = math.trunc %a : f32
    %sum2 = arith.addf %l10, %t : f32
    %sum3 = arith.addf %ch, %tr : f32
    %sum4 = arith.addf %sh, %sum1 : f32
    linalg.yield %pow, %sum4, %sum2, %sum3 : f32, f32, f32, f32
  } -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
  func.return %r#0, %r#1, %r#2, %r#3 : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}
