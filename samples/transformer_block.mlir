// pre-LN transformer block on x[S, E]: x1 = x + MHA(LN1(x)) with per-head Wq/Wk/Wv [H, E, Dh], Wo [H, Dh, E]; y = x1 + MLP(LN2(x1)), MLP = W2(gelu_tanh(W1 h + b1)) + b2
// tilefuse.dims: S=37 E=72 H=2 Dh=24 F=144
// tilefuse.dtype: f32
// tilefuse.args: x, gamma1, beta1, wq, wk, wv, wo, gamma2, beta2, w1, b1, w2, b2
func.func @transformer_block(%x: tensor<37x72xf32>,
                             %gamma1: tensor<72xf32>, %beta1: tensor<72xf32>,
                             %wq: tensor<2x72x24xf32>, %wk: tensor<2x72x24xf32>, %wv: tensor<2x72x24xf32>,
                             %wo: tensor<2x24x72xf32>,
                             %gamma2: tensor<72xf32>, %beta2: tensor<72xf32>,
                             %w1: tensor<72x144xf32>, %b1: tensor<144xf32>,
                             %w2: tensor<144x72xf32>, %b2: tensor<72xf32>) -> tensor<37x72xf32> {
  %zero = arith.constant 0.0 : f32
  %neg_inf = arith.constant 0xFF800000 : f32
  %eps = arith.constant 1.0e-05 : f32
  %half = arith.constant 0.5 : f32
  %one = arith.constant 1.0 : f32
  %c_cube = arith.constant 0.044715 : f32
  %c_sqrt_2_over_pi = arith.constant 0.7978845608 : f32
  %inv_e = arith.constant 1.388888889e-02 : f32  // tilefuse.expr: 1/E
  %scale = arith.constant 0.2041241452 : f32  // tilefuse.expr: 1/sqrt(Dh)

  %row_empty = tensor.empty() : tensor<37xf32>
  %se_empty = tensor.empty() : tensor<37x72xf32>

  // ================= LN1: ln1 = (x - mean) * rsqrt(var + eps) * gamma1 + beta1 =================
  %sum1_init = linalg.fill ins(%zero : f32) outs(%row_empty : tensor<37xf32>) -> tensor<37xf32>
  %sum1 = linalg.reduce ins(%x : tensor<37x72xf32>) outs(%sum1_init : tensor<37xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %a = arith.addf %in, %acc : f32
      linalg.yield %a : f32
    }
  %mean1 = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
      iterator_types = ["parallel"]}
      ins(%sum1 : tensor<37xf32>) outs(%row_empty : tensor<37xf32>) {
  ^bb0(%sv: f32, %out: f32):
    %mv = arith.mulf %sv, %inv_e : f32
    linalg.yield %mv : f32
  } -> tensor<37xf32>
  %var1_init = linalg.fill ins(%zero : f32) outs(%row_empty : tensor<37xf32>) -> tensor<37xf32>
  %sumsq1 = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d0)>,
                       affine_map<(d0, d1) -> (d0)>],
      iterator_types = ["parallel", "reduction"]}
      ins(%x, %mean1 : tensor<37x72xf32>, tensor<37xf32>) outs(%var1_init : tensor<37xf32>) {
  ^bb0(%xv: f32, %mv: f32, %acc: f32):
    %d = arith.subf %xv, %mv : f32
    %d2 = arith.mulf %d, %d : f32
    %a = arith.addf %acc, %d2 : f32
    linalg.yield %a : f32
  } -> tensor<37xf32>
  %rstd1 = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
      iterator_types = ["parallel"]}
      ins(%sumsq1 : tensor<37xf32>) outs(%row_empty : tensor<37xf32>) {
  ^bb0(%qv: f32, %out: f32):
    %var = arith.mulf %qv, %inv_e : f32
    %ve = arith.addf %var, %eps : f32
    %r = math.rsqrt %ve : f32
    linalg.yield %r : f32
  } -> tensor<37xf32>
  %ln1 = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d0)>,
                       affine_map<(d0, d1) -> (d0)>,
                       affine_map<(d0, d1) -> (d1)>,
                       affine_map<(d0, d1) -> (d1)>,
                       affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%x, %mean1, %rstd1, %gamma1, %beta1 : tensor<37x72xf32>, tensor<37xf32>, tensor<37xf32>, tensor<72xf32>, tensor<72xf32>)
      outs(%se_empty : tensor<37x72xf32>) {
  ^bb0(%xv: f32, %mv: f32, %rv: f32, %gv: f32, %bv: f32, %out: f32):
    %d = arith.subf %xv, %mv : f32
    %n = arith.mulf %d, %rv : f32
    %g = arith.mulf %n, %gv : f32
    %o = arith.addf %g, %bv : f32
    linalg.yield %o : f32
  } -> tensor<37x72xf32>

  // ================= Q, K, V projections: q[h, s, dh] = sum_e ln1[s, e] * Wq[h, e, dh] =================
  %hsd_empty = tensor.empty() : tensor<2x37x24xf32>
  %q_init = linalg.fill ins(%zero : f32) outs(%hsd_empty : tensor<2x37x24xf32>) -> tensor<2x37x24xf32>
  %q = linalg.generic {
      indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d1, d3)>,
                       affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>,
                       affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>],
      iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%ln1, %wq : tensor<37x72xf32>, tensor<2x72x24xf32>) outs(%q_init : tensor<2x37x24xf32>) {
  ^bb0(%av: f32, %wel: f32, %acc: f32):
    %p = arith.mulf %av, %wel : f32
    %a = arith.addf %acc, %p : f32
    linalg.yield %a : f32
  } -> tensor<2x37x24xf32>
  %k_init = linalg.fill ins(%zero : f32) outs(%hsd_empty : tensor<2x37x24xf32>) -> tensor<2x37x24xf32>
  %k = linalg.generic {
      indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d1, d3)>,
                       affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>,
                       affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>],
      iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%ln1, %wk : tensor<37x72xf32>, tensor<2x72x24xf32>) outs(%k_init : tensor<2x37x24xf32>) {
  ^bb0(%av: f32, %wel: f32, %acc: f32):
    %p = arith.mulf %av, %wel : f32
    %a = arith.addf %acc, %p : f32
    linalg.yield %a : f32
  } -> tensor<2x37x24xf32>
  %v_init = linalg.fill ins(%zero : f32) outs(%hsd_empty : tensor<2x37x24xf32>) -> tensor<2x37x24xf32>
  %v = linalg.generic {
      indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d1, d3)>,
                       affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>,
                       affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>],
      iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%ln1, %wv : tensor<37x72xf32>, tensor<2x72x24xf32>) outs(%v_init : tensor<2x37x24xf32>) {
  ^bb0(%av: f32, %wel: f32, %acc: f32):
    %p = arith.mulf %av, %wel : f32
    %a = arith.addf %acc, %p : f32
    linalg.yield %a : f32
  } -> tensor<2x37x24xf32>

  // ================= attention per head =================
  // kt[h, dh, j] = k[h, j, dh]  (explicit transpose)
  %kt_empty = tensor.empty() : tensor<2x24x37xf32>
  %kt = linalg.transpose ins(%k : tensor<2x37x24xf32>) outs(%kt_empty : tensor<2x24x37xf32>) permutation = [0, 2, 1]
  // scores[h, i, j] = sum_dh q[h, i, dh] * kt[h, dh, j]
  %hss_empty = tensor.empty() : tensor<2x37x37xf32>
  %sc_init = linalg.fill ins(%zero : f32) outs(%hss_empty : tensor<2x37x37xf32>) -> tensor<2x37x37xf32>
  %scores = linalg.generic {
      indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>,
                       affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>,
                       affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>],
      iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %kt : tensor<2x37x24xf32>, tensor<2x24x37xf32>) outs(%sc_init : tensor<2x37x37xf32>) {
  ^bb0(%qv: f32, %kv: f32, %acc: f32):
    %p = arith.mulf %qv, %kv : f32
    %a = arith.addf %acc, %p : f32
    linalg.yield %a : f32
  } -> tensor<2x37x37xf32>
  // scaled = scores * 1/sqrt(Dh)
  %scaled = linalg.generic {
      indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>,
                       affine_map<(d0, d1, d2) -> (d0, d1, d2)>],
      iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%scores : tensor<2x37x37xf32>) outs(%hss_empty : tensor<2x37x37xf32>) {
  ^bb0(%sv: f32, %out: f32):
    %r = arith.mulf %sv, %scale : f32
    linalg.yield %r : f32
  } -> tensor<2x37x37xf32>
  // softmax over keys j: rowmax = max_j scaled, exps = exp(scaled - rowmax), rowsum = sum_j exps, probs = exps / rowsum
  %hs_empty = tensor.empty() : tensor<2x37xf32>
  %max_init = linalg.fill ins(%neg_inf : f32) outs(%hs_empty : tensor<2x37xf32>) -> tensor<2x37xf32>
  %rowmax = linalg.generic {
      indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>,
                       affine_map<(d0, d1, d2) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%scaled : tensor<2x37x37xf32>) outs(%max_init : tensor<2x37xf32>) {
  ^bb0(%sv: f32, %acc: f32):
    %mx = arith.maximumf %acc, %sv : f32
    linalg.yield %mx : f32
  } -> tensor<2x37xf32>
  %exps = linalg.generic {
      indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>,
                       affine_map<(d0, d1, d2) -> (d0, d1)>,
                       affine_map<(d0, d1, d2) -> (d0, d1, d2)>],
      iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%scaled, %rowmax : tensor<2x37x37xf32>, tensor<2x37xf32>) outs(%hss_empty : tensor<2x37x37xf32>) {
  ^bb0(%sv: f32, %mv: f32, %out: f32):
    %d = arith.subf %sv, %mv : f32
    %ex = math.exp %d : f32
    linalg.yield %ex : f32
  } -> tensor<2x37x37xf32>
  %sum_init = linalg.fill ins(%zero : f32) outs(%hs_empty : tensor<2x37xf32>) -> tensor<2x37xf32>
  %rowsum = linalg.generic {
      indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>,
                       affine_map<(d0, d1, d2) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%exps : tensor<2x37x37xf32>) outs(%sum_init : tensor<2x37xf32>) {
  ^bb0(%ev: f32, %acc: f32):
    %a = arith.addf %acc, %ev : f32
    linalg.yield %a : f32
  } -> tensor<2x37xf32>
  %probs = linalg.generic {
      indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>,
                       affine_map<(d0, d1, d2) -> (d0, d1)>,
                       affine_map<(d0, d1, d2) -> (d0, d1, d2)>],
      iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%exps, %rowsum : tensor<2x37x37xf32>, tensor<2x37xf32>) outs(%hss_empty : tensor<2x37x37xf32>) {
  ^bb0(%ev: f32, %lv: f32, %out: f32):
    %r = arith.divf %ev, %lv : f32
    linalg.yield %r : f32
  } -> tensor<2x37x37xf32>
  // attn[h, i, dh] = sum_j probs[h, i, j] * v[h, j, dh]
  %attn_init = linalg.fill ins(%zero : f32) outs(%hsd_empty : tensor<2x37x24xf32>) -> tensor<2x37x24xf32>
  %attn = linalg.generic {
      indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>,
                       affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>,
                       affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>],
      iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%probs, %v : tensor<2x37x37xf32>, tensor<2x37x24xf32>) outs(%attn_init : tensor<2x37x24xf32>) {
  ^bb0(%pv: f32, %vv: f32, %acc: f32):
    %t = arith.mulf %pv, %vv : f32
    %a = arith.addf %acc, %t : f32
    linalg.yield %a : f32
  } -> tensor<2x37x24xf32>

  // ================= out-projection over (h, dh) + residual: x1 = x + sum_{h,dh} attn[h, s, dh] * Wo[h, dh, e] =================
  %proj_init = linalg.fill ins(%zero : f32) outs(%se_empty : tensor<37x72xf32>) -> tensor<37x72xf32>
  %proj = linalg.generic {
      indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d2, d0, d3)>,
                       affine_map<(d0, d1, d2, d3) -> (d2, d3, d1)>,
                       affine_map<(d0, d1, d2, d3) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%attn, %wo : tensor<2x37x24xf32>, tensor<2x24x72xf32>) outs(%proj_init : tensor<37x72xf32>) {
  ^bb0(%av: f32, %wel: f32, %acc: f32):
    %t = arith.mulf %av, %wel : f32
    %a = arith.addf %acc, %t : f32
    linalg.yield %a : f32
  } -> tensor<37x72xf32>
  %x1 = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%x, %proj : tensor<37x72xf32>, tensor<37x72xf32>) outs(%se_empty : tensor<37x72xf32>) {
  ^bb0(%xv: f32, %pv: f32, %out: f32):
    %r = arith.addf %xv, %pv : f32
    linalg.yield %r : f32
  } -> tensor<37x72xf32>

  // ================= LN2: ln2 = (x1 - mean) * rsqrt(var + eps) * gamma2 + beta2 =================
  %sum2_init = linalg.fill ins(%zero : f32) outs(%row_empty : tensor<37xf32>) -> tensor<37xf32>
  %sum2 = linalg.reduce ins(%x1 : tensor<37x72xf32>) outs(%sum2_init : tensor<37xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %a = arith.addf %in, %acc : f32
      linalg.yield %a : f32
    }
  %mean2 = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
      iterator_types = ["parallel"]}
      ins(%sum2 : tensor<37xf32>) outs(%row_empty : tensor<37xf32>) {
  ^bb0(%sv: f32, %out: f32):
    %mv = arith.mulf %sv, %inv_e : f32
    linalg.yield %mv : f32
  } -> tensor<37xf32>
  %var2_init = linalg.fill ins(%zero : f32) outs(%row_empty : tensor<37xf32>) -> tensor<37xf32>
  %sumsq2 = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d0)>,
                       affine_map<(d0, d1) -> (d0)>],
      iterator_types = ["parallel", "reduction"]}
      ins(%x1, %mean2 : tensor<37x72xf32>, tensor<37xf32>) outs(%var2_init : tensor<37xf32>) {
  ^bb0(%xv: f32, %mv: f32, %acc: f32):
    %d = arith.subf %xv, %mv : f32
    %d2 = arith.mulf %d, %d : f32
    %a = arith.addf %acc, %d2 : f32
    linalg.yield %a : f32
  } -> tensor<37xf32>
  %rstd2 = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
      iterator_types = ["parallel"]}
      ins(%sumsq2 : tensor<37xf32>) outs(%row_empty : tensor<37xf32>) {
  ^bb0(%qv: f32, %out: f32):
    %var = arith.mulf %qv, %inv_e : f32
    %ve = arith.addf %var, %eps : f32
    %r = math.rsqrt %ve : f32
    linalg.yield %r : f32
  } -> tensor<37xf32>
  %ln2 = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d0)>,
                       affine_map<(d0, d1) -> (d0)>,
                       affine_map<(d0, d1) -> (d1)>,
                       affine_map<(d0, d1) -> (d1)>,
                       affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%x1, %mean2, %rstd2, %gamma2, %beta2 : tensor<37x72xf32>, tensor<37xf32>, tensor<37xf32>, tensor<72xf32>, tensor<72xf32>)
      outs(%se_empty : tensor<37x72xf32>) {
  ^bb0(%xv: f32, %mv: f32, %rv: f32, %gv: f32, %bv: f32, %out: f32):
    %d = arith.subf %xv, %mv : f32
    %n = arith.mulf %d, %rv : f32
    %g = arith.mulf %n, %gv : f32
    %o = arith.addf %g, %bv : f32
    linalg.yield %o : f32
  } -> tensor<37x72xf32>

  // ================= MLP: y = x1 + gelu_tanh(ln2 @ W1 + b1) @ W2 + b2 =================
  %sf_empty = tensor.empty() : tensor<37x144xf32>
  %up_init = linalg.fill ins(%zero : f32) outs(%sf_empty : tensor<37x144xf32>) -> tensor<37x144xf32>
  %up = linalg.matmul ins(%ln2, %w1 : tensor<37x72xf32>, tensor<72x144xf32>)
                     outs(%up_init : tensor<37x144xf32>) -> tensor<37x144xf32>
  %gelu = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d1)>,
                       affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%up, %b1 : tensor<37x144xf32>, tensor<144xf32>) outs(%sf_empty : tensor<37x144xf32>) {
  ^bb0(%uv: f32, %bv: f32, %out: f32):
    %h = arith.addf %uv, %bv : f32
    %h2 = arith.mulf %h, %h : f32
    %h3 = arith.mulf %h2, %h : f32
    %t0 = arith.mulf %h3, %c_cube : f32
    %t1 = arith.addf %h, %t0 : f32
    %t2 = arith.mulf %t1, %c_sqrt_2_over_pi : f32
    %t3 = math.tanh %t2 : f32
    %t4 = arith.addf %t3, %one : f32
    %hh = arith.mulf %h, %half : f32
    %r = arith.mulf %hh, %t4 : f32
    linalg.yield %r : f32
  } -> tensor<37x144xf32>
  %down_init = linalg.fill ins(%zero : f32) outs(%se_empty : tensor<37x72xf32>) -> tensor<37x72xf32>
  %down = linalg.matmul ins(%gelu, %w2 : tensor<37x144xf32>, tensor<144x72xf32>)
                     outs(%down_init : tensor<37x72xf32>) -> tensor<37x72xf32>
  %y = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d1)>,
                       affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%down, %b2, %x1 : tensor<37x72xf32>, tensor<72xf32>, tensor<37x72xf32>) outs(%se_empty : tensor<37x72xf32>) {
  ^bb0(%dv: f32, %bv: f32, %rv: f32, %out: f32):
    %s = arith.addf %dv, %bv : f32
    %r = arith.addf %s, %rv : f32
    linalg.yield %r : f32
  } -> tensor<37x72xf32>

  return %y : tensor<37x72xf32>
}
