// rmsnorm over the last dim of x[M, N]: y = x * rsqrt(mean_j(x^2) + 1e-6) * w, w [N]
// tilefuse.dims: M=41 N=500
// tilefuse.dtype: f32
// tilefuse.args: x, w
func.func @rmsnorm(%x: tensor<41x500xf32>, %w: tensor<500xf32>) -> tensor<41x500xf32> {
  %zero = arith.constant 0.0 : f32
  %eps = arith.constant 1.0e-06 : f32
  %inv_n = arith.constant 2.0e-03 : f32  // tilefuse.expr: 1/N

  // sumsq[i] = sum_j x[i, j]^2
  %row_empty = tensor.empty() : tensor<41xf32>
  %sq_init = linalg.fill ins(%zero : f32) outs(%row_empty : tensor<41xf32>) -> tensor<41xf32>
  %sumsq = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d0)>],
      iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<41x500xf32>) outs(%sq_init : tensor<41xf32>) {
  ^bb0(%xv: f32, %acc: f32):
    %sq = arith.mulf %xv, %xv : f32
    %a = arith.addf %acc, %sq : f32
    linalg.yield %a : f32
  } -> tensor<41xf32>

  // rinv[i] = rsqrt(sumsq[i] * (1/N) + eps)
  %rinv = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
      iterator_types = ["parallel"]}
      ins(%sumsq : tensor<41xf32>) outs(%row_empty : tensor<41xf32>) {
  ^bb0(%qv: f32, %out: f32):
    %ms = arith.mulf %qv, %inv_n : f32
    %me = arith.addf %ms, %eps : f32
    %r = math.rsqrt %me : f32
    linalg.yield %r : f32
  } -> tensor<41xf32>

  // y[i, j] = x[i, j] * rinv[i] * w[j]
  %empty = tensor.empty() : tensor<41x500xf32>
  %y = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d0)>,
                       affine_map<(d0, d1) -> (d1)>,
                       affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%x, %rinv, %w : tensor<41x500xf32>, tensor<41xf32>, tensor<500xf32>)
      outs(%empty : tensor<41x500xf32>) {
  ^bb0(%xv: f32, %rv: f32, %wv: f32, %out: f32):
    %n = arith.mulf %xv, %rv : f32
    %o = arith.mulf %n, %wv : f32
    linalg.yield %o : f32
  } -> tensor<41x500xf32>

  return %y : tensor<41x500xf32>
}
