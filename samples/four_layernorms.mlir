// four independent layernorms over the last dim of x0..x3 [M, N] sharing gamma/beta [N] (horizontal fusion candidate)
// tilefuse.dims: M=29 N=130
// tilefuse.dtype: f32
// tilefuse.args: x0, x1, x2, x3, gamma, beta
func.func @four_layernorms(%x0: tensor<29x130xf32>, %x1: tensor<29x130xf32>, %x2: tensor<29x130xf32>, %x3: tensor<29x130xf32>, %gamma: tensor<130xf32>, %beta: tensor<130xf32>) -> (tensor<29x130xf32>, tensor<29x130xf32>, tensor<29x130xf32>, tensor<29x130xf32>) {
  %zero = arith.constant 0.0 : f32
  %eps = arith.constant 1.0e-05 : f32
  %inv_n = arith.constant 7.692307692e-03 : f32  // tilefuse.expr: 1/N
  %row_empty = tensor.empty() : tensor<29xf32>
  %empty = tensor.empty() : tensor<29x130xf32>

  // ---- layernorm 0: y0 = (x0 - mean) * rsqrt(var + eps) * gamma + beta ----
  // sum0[r] = sum_c x0[r, c]
  %sum0_init = linalg.fill ins(%zero : f32) outs(%row_empty : tensor<29xf32>) -> tensor<29xf32>
  %sum0 = linalg.reduce ins(%x0 : tensor<29x130xf32>) outs(%sum0_init : tensor<29xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %a = arith.addf %in, %acc : f32
      linalg.yield %a : f32
    }
  // sumsq0[r] = sum_c (x0[r, c] - sum0[r] / N)^2
  %sumsq0_init = linalg.fill ins(%zero : f32) outs(%row_empty : tensor<29xf32>) -> tensor<29xf32>
  %sumsq0 = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d0)>,
                       affine_map<(d0, d1) -> (d0)>],
      iterator_types = ["parallel", "reduction"]}
      ins(%x0, %sum0 : tensor<29x130xf32>, tensor<29xf32>) outs(%sumsq0_init : tensor<29xf32>) {
  ^bb0(%xv: f32, %sv: f32, %acc: f32):
    %mean = arith.mulf %sv, %inv_n : f32
    %d = arith.subf %xv, %mean : f32
    %d2 = arith.mulf %d, %d : f32
    %a = arith.addf %acc, %d2 : f32
    linalg.yield %a : f32
  } -> tensor<29xf32>
  // y0[r, c] = (x0[r, c] - sum0[r] / N) * rsqrt(sumsq0[r] / N + eps) * gamma[c] + beta[c]
  %y0 = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d0)>,
                       affine_map<(d0, d1) -> (d0)>,
                       affine_map<(d0, d1) -> (d1)>,
                       affine_map<(d0, d1) -> (d1)>,
                       affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%x0, %sum0, %sumsq0, %gamma, %beta : tensor<29x130xf32>, tensor<29xf32>, tensor<29xf32>, tensor<130xf32>, tensor<130xf32>)
      outs(%empty : tensor<29x130xf32>) {
  ^bb0(%xv: f32, %sv: f32, %qv: f32, %gv: f32, %bv: f32, %out: f32):
    %mean = arith.mulf %sv, %inv_n : f32
    %var = arith.mulf %qv, %inv_n : f32
    %ve = arith.addf %var, %eps : f32
    %rstd = math.rsqrt %ve : f32
    %d = arith.subf %xv, %mean : f32
    %n = arith.mulf %d, %rstd : f32
    %g = arith.mulf %n, %gv : f32
    %o = arith.addf %g, %bv : f32
    linalg.yield %o : f32
  } -> tensor<29x130xf32>

  // ---- layernorm 1: y1 = (x1 - mean) * rsqrt(var + eps) * gamma + beta ----
  // sum1[r] = sum_c x1[r, c]
  %sum1_init = linalg.fill ins(%zero : f32) outs(%row_empty : tensor<29xf32>) -> tensor<29xf32>
  %sum1 = linalg.reduce ins(%x1 : tensor<29x130xf32>) outs(%sum1_init : tensor<29xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %a = arith.addf %in, %acc : f32
      linalg.yield %a : f32
    }
  // sumsq1[r] = sum_c (x1[r, c] - sum1[r] / N)^2
  %sumsq1_init = linalg.fill ins(%zero : f32) outs(%row_empty : tensor<29xf32>) -> tensor<29xf32>
  %sumsq1 = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d0)>,
                       affine_map<(d0, d1) -> (d0)>],
      iterator_types = ["parallel", "reduction"]}
      ins(%x1, %sum1 : tensor<29x130xf32>, tensor<29xf32>) outs(%sumsq1_init : tensor<29xf32>) {
  ^bb0(%xv: f32, %sv: f32, %acc: f32):
    %mean = arith.mulf %sv, %inv_n : f32
    %d = arith.subf %xv, %mean : f32
    %d2 = arith.mulf %d, %d : f32
    %a = arith.addf %acc, %d2 : f32
    linalg.yield %a : f32
  } -> tensor<29xf32>
  // y1[r, c] = (x1[r, c] - sum1[r] / N) * rsqrt(sumsq1[r] / N + eps) * gamma[c] + beta[c]
  %y1 = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d0)>,
                       affine_map<(d0, d1) -> (d0)>,
                       affine_map<(d0, d1) -> (d1)>,
                       affine_map<(d0, d1) -> (d1)>,
                       affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%x1, %sum1, %sumsq1, %gamma, %beta : tensor<29x130xf32>, tensor<29xf32>, tensor<29xf32>, tensor<130xf32>, tensor<130xf32>)
      outs(%empty : tensor<29x130xf32>) {
  ^bb0(%xv: f32, %sv: f32, %qv: f32, %gv: f32, %bv: f32, %out: f32):
    %mean = arith.mulf %sv, %inv_n : f32
    %var = arith.mulf %qv, %inv_n : f32
    %ve = arith.addf %var, %eps : f32
    %rstd = math.rsqrt %ve : f32
    %d = arith.subf %xv, %mean : f32
    %n = arith.mulf %d, %rstd : f32
    %g = arith.mulf %n, %gv : f32
    %o = arith.addf %g, %bv : f32
    linalg.yield %o : f32
  } -> tensor<29x130xf32>

  // ---- layernorm 2: y2 = (x2 - mean) * rsqrt(var + eps) * gamma + beta ----
  // sum2[r] = sum_c x2[r, c]
  %sum2_init = linalg.fill ins(%zero : f32) outs(%row_empty : tensor<29xf32>) -> tensor<29xf32>
  %sum2 = linalg.reduce ins(%x2 : tensor<29x130xf32>) outs(%sum2_init : tensor<29xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %a = arith.addf %in, %acc : f32
      linalg.yield %a : f32
    }
  // sumsq2[r] = sum_c (x2[r, c] - sum2[r] / N)^2
  %sumsq2_init = linalg.fill ins(%zero : f32) outs(%row_empty : tensor<29xf32>) -> tensor<29xf32>
  %sumsq2 = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d0)>,
                       affine_map<(d0, d1) -> (d0)>],
      iterator_types = ["parallel", "reduction"]}
      ins(%x2, %sum2 : tensor<29x130xf32>, tensor<29xf32>) outs(%sumsq2_init : tensor<29xf32>) {
  ^bb0(%xv: f32, %sv: f32, %acc: f32):
    %mean = arith.mulf %sv, %inv_n : f32
    %d = arith.subf %xv, %mean : f32
    %d2 = arith.mulf %d, %d : f32
    %a = arith.addf %acc, %d2 : f32
    linalg.yield %a : f32
  } -> tensor<29xf32>
  // y2[r, c] = (x2[r, c] - sum2[r] / N) * rsqrt(sumsq2[r] / N + eps) * gamma[c] + beta[c]
  %y2 = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d0)>,
                       affine_map<(d0, d1) -> (d0)>,
                       affine_map<(d0, d1) -> (d1)>,
                       affine_map<(d0, d1) -> (d1)>,
                       affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%x2, %sum2, %sumsq2, %gamma, %beta : tensor<29x130xf32>, tensor<29xf32>, tensor<29xf32>, tensor<130xf32>, tensor<130xf32>)
      outs(%empty : tensor<29x130xf32>) {
  ^bb0(%xv: f32, %sv: f32, %qv: f32, %gv: f32, %bv: f32, %out: f32):
    %mean = arith.mulf %sv, %inv_n : f32
    %var = arith.mulf %qv, %inv_n : f32
    %ve = arith.addf %var, %eps : f32
    %rstd = math.rsqrt %ve : f32
    %d = arith.subf %xv, %mean : f32
    %n = arith.mulf %d, %rstd : f32
    %g = arith.mulf %n, %gv : f32
    %o = arith.addf %g, %bv : f32
    linalg.yield %o : f32
  } -> tensor<29x130xf32>

  // ---- layernorm 3: y3 = (x3 - mean) * rsqrt(var + eps) * gamma + beta ----
  // sum3[r] = sum_c x3[r, c]
  %sum3_init = linalg.fill ins(%zero : f32) outs(%row_empty : tensor<29xf32>) -> tensor<29xf32>
  %sum3 = linalg.reduce ins(%x3 : tensor<29x130xf32>) outs(%sum3_init : tensor<29xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %a = arith.addf %in, %acc : f32
      linalg.yield %a : f32
    }
  // sumsq3[r] = sum_c (x3[r, c] - sum3[r] / N)^2
  %sumsq3_init = linalg.fill ins(%zero : f32) outs(%row_empty : tensor<29xf32>) -> tensor<29xf32>
  %sumsq3 = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d0)>,
                       affine_map<(d0, d1) -> (d0)>],
      iterator_types = ["parallel", "reduction"]}
      ins(%x3, %sum3 : tensor<29x130xf32>, tensor<29xf32>) outs(%sumsq3_init : tensor<29xf32>) {
  ^bb0(%xv: f32, %sv: f32, %acc: f32):
    %mean = arith.mulf %sv, %inv_n : f32
    %d = arith.subf %xv, %mean : f32
    %d2 = arith.mulf %d, %d : f32
    %a = arith.addf %acc, %d2 : f32
    linalg.yield %a : f32
  } -> tensor<29xf32>
  // y3[r, c] = (x3[r, c] - sum3[r] / N) * rsqrt(sumsq3[r] / N + eps) * gamma[c] + beta[c]
  %y3 = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d0)>,
                       affine_map<(d0, d1) -> (d0)>,
                       affine_map<(d0, d1) -> (d1)>,
                       affine_map<(d0, d1) -> (d1)>,
                       affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%x3, %sum3, %sumsq3, %gamma, %beta : tensor<29x130xf32>, tensor<29xf32>, tensor<29xf32>, tensor<130xf32>, tensor<130xf32>)
      outs(%empty : tensor<29x130xf32>) {
  ^bb0(%xv: f32, %sv: f32, %qv: f32, %gv: f32, %bv: f32, %out: f32):
    %mean = arith.mulf %sv, %inv_n : f32
    %var = arith.mulf %qv, %inv_n : f32
    %ve = arith.addf %var, %eps : f32
    %rstd = math.rsqrt %ve : f32
    %d = arith.subf %xv, %mean : f32
    %n = arith.mulf %d, %rstd : f32
    %g = arith.mulf %n, %gv : f32
    %o = arith.addf %g, %bv : f32
    linalg.yield %o : f32
  } -> tensor<29x130xf32>

  return %y0, %y1, %y2, %y3 : tensor<29x130xf32>, tensor<29x130xf32>, tensor<29x130xf32>, tensor<29x130xf32>
}
