// Attention as torch-mlir writes it for a bf16 model (nanoGPT, HF eager): each bf16
// matmul is `extf` of its operands, an f32 contraction and a `truncf` of the result;
// the scores are rounded to bf16 and scaled in bf16, the softmax runs in f32 and its
// probabilities are rounded to bf16 before P V; the heads are merged by a transposing
// copy. One kernel: the scores' roundings are kept per tile, P's rounding is moved
// onto exp(s - running max) (docs/ARCHITECTURE.md, roundings a fused kernel moves),
// P V is a bf16 dot accumulating in f32, and the output is stored through the
// head-merging copy's map.
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#row = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
func.func @attention(%q: tensor<2x3x77x24xbf16>, %k: tensor<2x3x77x24xbf16>, %v: tensor<2x3x77x24xbf16>) -> tensor<2x77x3x24xbf16> {
  %zero = arith.constant 0.0 : f32
  %neg_inf = arith.constant 0xFF800000 : f32
  %scale = arith.constant 0.2041 : bf16
  %sc_empty = tensor.empty() : tensor<2x3x77x77xf32>
  %sc_init = linalg.fill ins(%zero : f32) outs(%sc_empty : tensor<2x3x77x77xf32>) -> tensor<2x3x77x77xf32>
  %scores = linalg.generic {
      indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>,
                       affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>,
                       affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<2x3x77x24xbf16>, tensor<2x3x77x24xbf16>) outs(%sc_init : tensor<2x3x77x77xf32>) {
  ^bb0(%qv: bf16, %kv: bf16, %acc: f32):
    %qw = arith.extf %qv : bf16 to f32
    %kw = arith.extf %kv : bf16 to f32
    %p = arith.mulf %qw, %kw : f32
    %a = arith.addf %acc, %p : f32
    linalg.yield %a : f32
  } -> tensor<2x3x77x77xf32>
  %s16_empty = tensor.empty() : tensor<2x3x77x77xbf16>
  %scores16 = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%scores : tensor<2x3x77x77xf32>) outs(%s16_empty : tensor<2x3x77x77xbf16>) {
  ^bb0(%sv: f32, %out: bf16):
    %r = arith.truncf %sv : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<2x3x77x77xbf16>
  %scaled = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%scores16 : tensor<2x3x77x77xbf16>) outs(%s16_empty : tensor<2x3x77x77xbf16>) {
  ^bb0(%sv: bf16, %out: bf16):
    %r = arith.mulf %sv, %scale : bf16
    linalg.yield %r : bf16
  } -> tensor<2x3x77x77xbf16>
  %wide = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%scaled : tensor<2x3x77x77xbf16>) outs(%sc_empty : tensor<2x3x77x77xf32>) {
  ^bb0(%sv: bf16, %out: f32):
    %r = arith.extf %sv : bf16 to f32
    linalg.yield %r : f32
  } -> tensor<2x3x77x77xf32>
  %row_empty = tensor.empty() : tensor<2x3x77xf32>
  %max_init = linalg.fill ins(%neg_inf : f32) outs(%row_empty : tensor<2x3x77xf32>) -> tensor<2x3x77xf32>
  %rowmax = linalg.generic {indexing_maps = [#id4, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%wide : tensor<2x3x77x77xf32>) outs(%max_init : tensor<2x3x77xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %mx = arith.maximumf %in, %acc : f32
    linalg.yield %mx : f32
  } -> tensor<2x3x77xf32>
  %exps = linalg.generic {indexing_maps = [#id4, #row, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%wide, %rowmax : tensor<2x3x77x77xf32>, tensor<2x3x77xf32>) outs(%sc_empty : tensor<2x3x77x77xf32>) {
  ^bb0(%sv: f32, %mv: f32, %out: f32):
    %d = arith.subf %sv, %mv : f32
    %ex = math.exp %d : f32
    linalg.yield %ex : f32
  } -> tensor<2x3x77x77xf32>
  %sum_init = linalg.fill ins(%zero : f32) outs(%row_empty : tensor<2x3x77xf32>) -> tensor<2x3x77xf32>
  %rowsum = linalg.generic {indexing_maps = [#id4, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%exps : tensor<2x3x77x77xf32>) outs(%sum_init : tensor<2x3x77xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  } -> tensor<2x3x77xf32>
  %probs = linalg.generic {indexing_maps = [#id4, #row, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%exps, %rowsum : tensor<2x3x77x77xf32>, tensor<2x3x77xf32>) outs(%sc_empty : tensor<2x3x77x77xf32>) {
  ^bb0(%ev: f32, %lv: f32, %out: f32):
    %r = arith.divf %ev, %lv : f32
    linalg.yield %r : f32
  } -> tensor<2x3x77x77xf32>
  %probs16 = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%probs : tensor<2x3x77x77xf32>) outs(%s16_empty : tensor<2x3x77x77xbf16>) {
  ^bb0(%pv: f32, %out: bf16):
    %r = arith.truncf %pv : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<2x3x77x77xbf16>
  %o_empty = tensor.empty() : tensor<2x3x77x24xf32>
  %o_init = linalg.fill ins(%zero : f32) outs(%o_empty : tensor<2x3x77x24xf32>) -> tensor<2x3x77x24xf32>
  %out = linalg.generic {
      indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>,
                       affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>,
                       affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%probs16, %v : tensor<2x3x77x77xbf16>, tensor<2x3x77x24xbf16>) outs(%o_init : tensor<2x3x77x24xf32>) {
  ^bb0(%pv: bf16, %vv: bf16, %acc: f32):
    %pw = arith.extf %pv : bf16 to f32
    %vw = arith.extf %vv : bf16 to f32
    %t = arith.mulf %pw, %vw : f32
    %a = arith.addf %acc, %t : f32
    linalg.yield %a : f32
  } -> tensor<2x3x77x24xf32>
  %o16_empty = tensor.empty() : tensor<2x3x77x24xbf16>
  %out16 = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%out : tensor<2x3x77x24xf32>) outs(%o16_empty : tensor<2x3x77x24xbf16>) {
  ^bb0(%ov: f32, %o: bf16):
    %r = arith.truncf %ov : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<2x3x77x24xbf16>
  %merged_empty = tensor.empty() : tensor<2x77x3x24xbf16>
  %merged = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>, #id4],
                            iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%out16 : tensor<2x3x77x24xbf16>) outs(%merged_empty : tensor<2x77x3x24xbf16>) {
  ^bb0(%x: bf16, %o: bf16):
    linalg.yield %x : bf16
  } -> tensor<2x77x3x24xbf16>
  return %merged : tensor<2x77x3x24xbf16>
}
