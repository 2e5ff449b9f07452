// causal self-attention over one sequence: Q, K, V sliced from x [T, 48], expanded to [1, T, 2, 8] and transposed (GPT-2's form; from adversarial testing)
func.func @attention(%x: tensor<?x48xf32>) -> tensor<1x2x?x8xf32> {
  %c2 = arith.constant 2 : index
  %c0 = arith.constant 0 : index
  %T = tensor.dim %x, %c0 : tensor<?x48xf32>
  %Sq = tensor.dim %x, %c0 : tensor<?x48xf32>
  %Sk = tensor.dim %x, %c0 : tensor<?x48xf32>
  %qs = tensor.extract_slice %x[0, 0] [%T, 16] [1, 1] : tensor<?x48xf32> to tensor<?x16xf32>
  %qx = tensor.expand_shape %qs [[0, 1], [2, 3]] output_shape [1, %T, 2, 8] : tensor<?x16xf32> into tensor<1x?x2x8xf32>
  %qe = tensor.empty(%T) : tensor<1x2x?x8xf32>
  %q = linalg.transpose ins(%qx : tensor<1x?x2x8xf32>) outs(%qe : tensor<1x2x?x8xf32>) permutation = [0, 2, 1, 3]
  %ks = tensor.extract_slice %x[0, 16] [%T, 16] [1, 1] : tensor<?x48xf32> to tensor<?x16xf32>
  %kx = tensor.expand_shape %ks [[0, 1], [2, 3]] output_shape [1, %T, 2, 8] : tensor<?x16xf32> into tensor<1x?x2x8xf32>
  %ke = tensor.empty(%T) : tensor<1x2x?x8xf32>
  %k = linalg.transpose ins(%kx : tensor<1x?x2x8xf32>) outs(%ke : tensor<1x2x?x8xf32>) permutation = [0, 2, 1, 3]
  %vs = tensor.extract_slice %x[0, 32] [%T, 16] [1, 1] : tensor<?x48xf32> to tensor<?x16xf32>
  %vx = tensor.expand_shape %vs [[0, 1], [2, 3]] output_shape [1, %T, 2, 8] : tensor<?x16xf32> into tensor<1x?x2x8xf32>
  %ve = tensor.empty(%T) : tensor<1x2x?x8xf32>
  %v = linalg.transpose ins(%vx : tensor<1x?x2x8xf32>) outs(%ve : tensor<1x2x?x8xf32>) permutation = [0, 2, 1, 3]
  %zero = arith.constant 0.0 : f32
  %neg_inf = arith.constant 0xFF800000 : f32
  %scale = arith.constant 0.35355339 : f32
  %sc_empty = tensor.empty(%Sq, %Sk) : tensor<1x2x?x?xf32>
  %sc_init = linalg.fill ins(%zero : f32) outs(%sc_empty : tensor<1x2x?x?xf32>) -> tensor<1x2x?x?xf32>
  %scores = linalg.generic {
      indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>,
                       affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>,
                       affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>) outs(%sc_init : tensor<1x2x?x?xf32>) {
  ^bb0(%qv: f32, %kv: f32, %acc: f32):
    %p = arith.mulf %qv, %kv : f32
    %a = arith.addf %acc, %p : f32
    linalg.yield %a : f32
  } -> tensor<1x2x?x?xf32>
  %scaled = linalg.generic {
      indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%scores : tensor<1x2x?x?xf32>) outs(%sc_empty : tensor<1x2x?x?xf32>) {
  ^bb0(%sv: f32, %out: f32):
    %r0 = arith.mulf %sv, %scale : f32
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %keep = arith.cmpi ule, %j, %i : index
    %r = arith.select %keep, %r0, %neg_inf : f32
    linalg.yield %r : f32
  } -> tensor<1x2x?x?xf32>
  %row_empty = tensor.empty(%Sq) : tensor<1x2x?xf32>
  %max_init = linalg.fill ins(%neg_inf : f32) outs(%row_empty : tensor<1x2x?xf32>) -> tensor<1x2x?xf32>
  %rowmax = linalg.reduce ins(%scaled : tensor<1x2x?x?xf32>) outs(%max_init : tensor<1x2x?xf32>) dimensions = [3]
    (%in: f32, %acc: f32) {
      %mx = arith.maximumf %in, %acc : f32
      linalg.yield %mx : f32
    }
  %exps = linalg.generic {
      indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%scaled, %rowmax : tensor<1x2x?x?xf32>, tensor<1x2x?xf32>) outs(%sc_empty : tensor<1x2x?x?xf32>) {
  ^bb0(%sv: f32, %mv: f32, %out: f32):
    %d = arith.subf %sv, %mv : f32
    %ex = math.exp %d : f32
    linalg.yield %ex : f32
  } -> tensor<1x2x?x?xf32>
  %sum_init = linalg.fill ins(%zero : f32) outs(%row_empty : tensor<1x2x?xf32>) -> tensor<1x2x?xf32>
  %rowsum = linalg.reduce ins(%exps : tensor<1x2x?x?xf32>) outs(%sum_init : tensor<1x2x?xf32>) dimensions = [3]
    (%in: f32, %acc: f32) {
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }
  %probs = linalg.generic {
      indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%exps, %rowsum : tensor<1x2x?x?xf32>, tensor<1x2x?xf32>) outs(%sc_empty : tensor<1x2x?x?xf32>) {
  ^bb0(%ev: f32, %lv: f32, %out: f32):
    %r = arith.divf %ev, %lv : f32
    linalg.yield %r : f32
  } -> tensor<1x2x?x?xf32>
  %o_empty = tensor.empty(%Sq) : tensor<1x2x?x8xf32>
  %o_init = linalg.fill ins(%zero : f32) outs(%o_empty : tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32>
  %out = linalg.generic {
      indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>,
                       affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>,
                       affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%probs, %v : tensor<1x2x?x?xf32>, tensor<1x2x?x8xf32>) outs(%o_init : tensor<1x2x?x8xf32>) {
  ^bb0(%pv: f32, %vv: f32, %acc: f32):
    %t = arith.mulf %pv, %vv : f32
    %a = arith.addf %acc, %t : f32
    linalg.yield %a : f32
  } -> tensor<1x2x?x8xf32>
  return %out : tensor<1x2x?x8xf32>
}