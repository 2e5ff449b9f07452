// layernorm over the last dim of x[M, N]: y = (x - mean) * rsqrt(var + 1e-5) * gamma + beta, gamma/beta [N]
// tilefuse.dims: M=66 N=260
// tilefuse.dtype: bf16
// tilefuse.args: x, gamma, beta
func.func @layernorm(%x: tensor<66x260xbf16>, %gamma: tensor<260xbf16>, %beta: tensor<260xbf16>) -> tensor<66x260xbf16> {
  %zero = arith.constant 0.0 : bf16
  %eps = arith.constant 1.0e-05 : bf16
  %inv_n = arith.constant 3.846153846e-03 : bf16  // tilefuse.expr: 1/N

  // sum[i] = sum_j x[i, j]
  %row_empty = tensor.empty() : tensor<66xbf16>
  %sum_init = linalg.fill ins(%zero : bf16) outs(%row_empty : tensor<66xbf16>) -> tensor<66xbf16>
  %sum = linalg.reduce ins(%x : tensor<66x260xbf16>) outs(%sum_init : tensor<66xbf16>) dimensions = [1]
    (%in: bf16, %acc: bf16) {
      %a = arith.addf %in, %acc : bf16
      linalg.yield %a : bf16
    }

  // mean[i] = sum[i] * (1/N)
  %mean = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
      iterator_types = ["parallel"]}
      ins(%sum : tensor<66xbf16>) outs(%row_empty : tensor<66xbf16>) {
  ^bb0(%sv: bf16, %out: bf16):
    %mv = arith.mulf %sv, %inv_n : bf16
    linalg.yield %mv : bf16
  } -> tensor<66xbf16>

  // xc[i, j] = x[i, j] - mean[i]
  %empty = tensor.empty() : tensor<66x260xbf16>
  %xc = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d0)>,
                       affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%x, %mean : tensor<66x260xbf16>, tensor<66xbf16>) outs(%empty : tensor<66x260xbf16>) {
  ^bb0(%xv: bf16, %mv: bf16, %out: bf16):
    %d = arith.subf %xv, %mv : bf16
    linalg.yield %d : bf16
  } -> tensor<66x260xbf16>

  // sumsq[i] = sum_j xc[i, j]^2
  %sq_init = linalg.fill ins(%zero : bf16) outs(%row_empty : tensor<66xbf16>) -> tensor<66xbf16>
  %sumsq = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d0)>],
      iterator_types = ["parallel", "reduction"]}
      ins(%xc : tensor<66x260xbf16>) outs(%sq_init : tensor<66xbf16>) {
  ^bb0(%cv: bf16, %acc: bf16):
    %sq = arith.mulf %cv, %cv : bf16
    %a = arith.addf %acc, %sq : bf16
    linalg.yield %a : bf16
  } -> tensor<66xbf16>

  // rstd[i] = rsqrt(sumsq[i] * (1/N) + eps)
  %rstd = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
      iterator_types = ["parallel"]}
      ins(%sumsq : tensor<66xbf16>) outs(%row_empty : tensor<66xbf16>) {
  ^bb0(%qv: bf16, %out: bf16):
    %var = arith.mulf %qv, %inv_n : bf16
    %ve = arith.addf %var, %eps : bf16
    %r = math.rsqrt %ve : bf16
    linalg.yield %r : bf16
  } -> tensor<66xbf16>

  // y[i, j] = xc[i, j] * rstd[i] * gamma[j] + beta[j]
  %y = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d0)>,
                       affine_map<(d0, d1) -> (d1)>,
                       affine_map<(d0, d1) -> (d1)>,
                       affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%xc, %rstd, %gamma, %beta : tensor<66x260xbf16>, tensor<66xbf16>, tensor<260xbf16>, tensor<260xbf16>)
      outs(%empty : tensor<66x260xbf16>) {
  ^bb0(%cv: bf16, %rv: bf16, %gv: bf16, %bv: bf16, %out: bf16):
    %n = arith.mulf %cv, %rv : bf16
    %g = arith.mulf %n, %gv : bf16
    %o = arith.addf %g, %bv : bf16
    linalg.yield %o : bf16
  } -> tensor<66x260xbf16>

  return %y : tensor<66x260xbf16>
}
