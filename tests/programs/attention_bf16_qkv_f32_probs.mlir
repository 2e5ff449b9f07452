// The attention sample on bf16 Q, K, V widened to f32 by extf producers (torch-mlir's
// spelling), the softmax in f32: Q K^T is a bf16 tl.dot (both factors bf16), but
// P V multiplies f32 probabilities by bf16 values, so it stays an f32 dot in the same
// kernel (P is not rounded to bf16).
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @attention(%q16: tensor<2x3x77x24xbf16>, %k16: tensor<2x3x77x24xbf16>, %v16: tensor<2x3x77x24xbf16>) -> tensor<2x3x77x24xf32> {
  %ext_empty = tensor.empty() : tensor<2x3x77x24xf32>
  %q = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%q16 : tensor<2x3x77x24xbf16>) outs(%ext_empty : tensor<2x3x77x24xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %w = arith.extf %in : bf16 to f32
    linalg.yield %w : f32
  } -> tensor<2x3x77x24xf32>
  %k = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%k16 : tensor<2x3x77x24xbf16>) outs(%ext_empty : tensor<2x3x77x24xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %w = arith.extf %in : bf16 to f32
    linalg.yield %w : f32
  } -> tensor<2x3x77x24xf32>
  %v = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%v16 : tensor<2x3x77x24xbf16>) outs(%ext_empty : tensor<2x3x77x24xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %w = arith.extf %in : bf16 to f32
    linalg.yield %w : f32
  } -> tensor<2x3x77x24xf32>
  %zero = arith.constant 0.0 : f32
  %neg_inf = arith.constant 0xFF800000 : f32
  %scale = arith.constant 0.2041241452 : f32

  // ---- scores[b, h, i, j] = sum_d Q[b, h, i, d] * K[b, h, j, d]  (K^T via the indexing map) ----
  %sc_empty = tensor.empty() : tensor<2x3x77x77xf32>
  %sc_init = linalg.fill ins(%zero : f32) outs(%sc_empty : tensor<2x3x77x77xf32>) -> tensor<2x3x77x77xf32>
  %scores = linalg.generic {
      indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>,
                       affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>,
                       affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<2x3x77x24xf32>, tensor<2x3x77x24xf32>) outs(%sc_init : tensor<2x3x77x77xf32>) {
  ^bb0(%qv: f32, %kv: f32, %acc: f32):
    %p = arith.mulf %qv, %kv : f32
    %a = arith.addf %acc, %p : f32
    linalg.yield %a : f32
  } -> tensor<2x3x77x77xf32>

  // ---- scaled = scores * s ----
  %scaled = linalg.generic {
      indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>,
                       affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%scores : tensor<2x3x77x77xf32>) outs(%sc_empty : tensor<2x3x77x77xf32>) {
  ^bb0(%sv: f32, %out: f32):
    %r = arith.mulf %sv, %scale : f32
    linalg.yield %r : f32
  } -> tensor<2x3x77x77xf32>

  // ---- softmax over the key dim j ----
  // rowmax[b, h, i] = max_j scaled[b, h, i, j]
  %row_empty = tensor.empty() : tensor<2x3x77xf32>
  %max_init = linalg.fill ins(%neg_inf : f32) outs(%row_empty : tensor<2x3x77xf32>) -> tensor<2x3x77xf32>
  %rowmax = linalg.reduce ins(%scaled : tensor<2x3x77x77xf32>) outs(%max_init : tensor<2x3x77xf32>) dimensions = [3]
    (%in: f32, %acc: f32) {
      %mx = arith.maximumf %in, %acc : f32
      linalg.yield %mx : f32
    }
  // exps = exp(scaled - rowmax)
  %exps = linalg.generic {
      indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>,
                       affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>,
                       affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%scaled, %rowmax : tensor<2x3x77x77xf32>, tensor<2x3x77xf32>) outs(%sc_empty : tensor<2x3x77x77xf32>) {
  ^bb0(%sv: f32, %mv: f32, %out: f32):
    %d = arith.subf %sv, %mv : f32
    %ex = math.exp %d : f32
    linalg.yield %ex : f32
  } -> tensor<2x3x77x77xf32>
  // rowsum[b, h, i] = sum_j exps[b, h, i, j]
  %sum_init = linalg.fill ins(%zero : f32) outs(%row_empty : tensor<2x3x77xf32>) -> tensor<2x3x77xf32>
  %rowsum = linalg.reduce ins(%exps : tensor<2x3x77x77xf32>) outs(%sum_init : tensor<2x3x77xf32>) dimensions = [3]
    (%in: f32, %acc: f32) {
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }
  // probs = exps / rowsum
  %probs = linalg.generic {
      indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>,
                       affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>,
                       affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%exps, %rowsum : tensor<2x3x77x77xf32>, tensor<2x3x77xf32>) outs(%sc_empty : tensor<2x3x77x77xf32>) {
  ^bb0(%ev: f32, %lv: f32, %out: f32):
    %r = arith.divf %ev, %lv : f32
    linalg.yield %r : f32
  } -> tensor<2x3x77x77xf32>

  // ---- out[b, h, i, d] = sum_j probs[b, h, i, j] * V[b, h, j, d] ----
  %o_empty = tensor.empty() : tensor<2x3x77x24xf32>
  %o_init = linalg.fill ins(%zero : f32) outs(%o_empty : tensor<2x3x77x24xf32>) -> tensor<2x3x77x24xf32>
  %out = linalg.generic {
      indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>,
                       affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>,
                       affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%probs, %v : tensor<2x3x77x77xf32>, tensor<2x3x77x24xf32>) outs(%o_init : tensor<2x3x77x24xf32>) {
  ^bb0(%pv: f32, %vv: f32, %acc: f32):
    %t = arith.mulf %pv, %vv : f32
    %a = arith.addf %acc, %t : f32
    linalg.yield %a : f32
  } -> tensor<2x3x77x24xf32>

  return %out : tensor<2x3x77x24xf32>
}
