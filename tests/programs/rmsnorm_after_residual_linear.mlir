// LLaMA's residual add after a projection, then RMSNorm of the sum: h = x W^T + r,
// y = h * rsqrt(mean(h^2) + eps) * w. The square (fpowi) reads the epilogue's sum and
// only the norm's reduction reads it: it leaves the epilogue for the norm's kernel
// (fusion_plan._peel_tail), so h is stored once and the norm is one kernel.
#row = affine_map<(d0, d1) -> (d0, d1)>
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#nk = affine_map<(d0, d1, d2) -> (d1, d2)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#red = affine_map<(d0, d1) -> (d0, 0)>
#vec = affine_map<(d0, d1) -> (d1)>
func.func @rmsnorm_after_residual_linear(%x: tensor<48x96xf32>, %wt: tensor<80x96xf32>,
    %r: tensor<48x80xf32>, %g: tensor<80xf32>) -> (tensor<48x80xf32>, tensor<48x80xf32>) {
  %zero = arith.constant 0.0 : f32
  %eps = arith.constant 1.0e-05 : f32
  %n = arith.constant 80.0 : f32
  %two = arith.constant 2 : i64
  %e = tensor.empty() : tensor<48x80xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<48x80xf32>) -> tensor<48x80xf32>
  %mm = linalg.generic {indexing_maps = [#mk, #nk, #mn], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %wt : tensor<48x96xf32>, tensor<80x96xf32>) outs(%acc : tensor<48x80xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<48x80xf32>
  %h = linalg.generic {indexing_maps = [#row, #row, #row], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %r : tensor<48x80xf32>, tensor<48x80xf32>) outs(%e : tensor<48x80xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<48x80xf32>
  %sq = linalg.generic {indexing_maps = [#row, #row], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<48x80xf32>) outs(%e : tensor<48x80xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = math.fpowi %a, %two : f32, i64
    linalg.yield %s : f32
  } -> tensor<48x80xf32>
  %e1 = tensor.empty() : tensor<48x1xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<48x1xf32>) -> tensor<48x1xf32>
  %sum = linalg.generic {indexing_maps = [#row, #red], iterator_types = ["parallel", "reduction"]}
      ins(%sq : tensor<48x80xf32>) outs(%z1 : tensor<48x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  } -> tensor<48x1xf32>
  %y = linalg.generic {indexing_maps = [#row, #red, #vec, #row], iterator_types = ["parallel", "parallel"]}
      ins(%h, %sum, %g : tensor<48x80xf32>, tensor<48x1xf32>, tensor<80xf32>) outs(%e : tensor<48x80xf32>) {
  ^bb0(%a: f32, %s: f32, %w: f32, %o: f32):
    %m = arith.divf %s, %n : f32
    %v = arith.addf %m, %eps : f32
    %q = math.rsqrt %v : f32
    %t = arith.mulf %a, %q : f32
    %u = arith.mulf %t, %w : f32
    linalg.yield %u : f32
  } -> tensor<48x80xf32>
  func.return %h, %y : tensor<48x80xf32>, tensor<48x80xf32>
}
