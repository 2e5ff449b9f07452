// libm's answers at the edges: pow(1, NaN) = pow(-1, inf) = 1, pow(-0.0, -1) = -inf,
// pow(-2, inf) = inf; log1p(inf) = inf, log1p(-1) = -inf; expm1(100) = inf,
// expm1(-inf) = -1; sinh/cosh(89) finite in f32, sinh(-100) = -inf; a constant base.
#m = affine_map<(d0) -> (d0)>
func.func @edges(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %base = arith.constant dense<[1.0, -1.0, -0.0, -2.0, 0.0, 2.0, -0.5, 1.0]> : tensor<8xf32>
  %expo = arith.constant dense<[0x7FC00000, 0x7F800000, -1.0, 0x7F800000, -3.0, 0xFF800000, 0x7F800000, 0xFF800000]> : tensor<8xf32>
  %args = arith.constant dense<[0x7F800000, -1.0, 100.0, 0xFF800000, 89.0, -100.0, 1.0e-7, -1.0e-7]> : tensor<8xf32>
  %e = tensor.empty() : tensor<8xf32>
  %r:4 = linalg.generic {indexing_maps = [#m, #m, #m, #m, #m, #m, #m, #m], iterator_types = ["parallel"]}
      ins(%base, %expo, %args, %x : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
      outs(%e, %e, %e, %e : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  ^bb0(%b: f32, %p: f32, %a: f32, %in: f32, %o1: f32, %o2: f32, %o3: f32, %o4: f32):
    %pow = math.powf %b, %p : f32
    %l = math.log1p %a : f32
    %em = math.expm1 %a : f32
    %sh = math.sinh %a : f32
    %ten = arith.constant 10.0 : f32
    %pc = math.powf %ten, %in : f32
    %ch = math.cosh %a : f32
    %s1 = arith.addf %sh, %ch : f32
    %s2 = arith.addf %em, %pc : f32
    linalg.yield %pow, %l, %s1, %s2 : f32, f32, f32, f32
  } -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  func.return %r#0, %r#1, %r#2, %r#3 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}
