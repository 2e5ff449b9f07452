// Two plain softmax(Q K^T) V in one function, three unread generics between them: the
// flash-attention rewrite of the second used node indices from before the first rewrite
// erased ops (a ValueError). One kernel: horizontal fusion puts both in one launch.
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row = affine_map<(d0, d1, d2) -> (d0, d1)>
#qk_q = affine_map<(h, i, j, d) -> (h, i, d)>
#qk_k = affine_map<(h, i, j, d) -> (h, j, d)>
#qk_o = affine_map<(h, i, j, d) -> (h, i, j)>
#pv_p = affine_map<(h, i, d, j) -> (h, i, j)>
#pv_v = affine_map<(h, i, d, j) -> (h, j, d)>
#pv_o = affine_map<(h, i, d, j) -> (h, i, d)>
func.func @two(%q: tensor<2x16x16xf32>, %k: tensor<2x16x16xf32>, %v: tensor<2x16x16xf32>,
               %q2: tensor<2x16x16xf32>, %k2: tensor<2x16x16xf32>, %v2: tensor<2x16x16xf32>)
    -> (tensor<2x16x16xf32>, tensor<2x16x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %es = tensor.empty() : tensor<2x16x16xf32>
  %er = tensor.empty() : tensor<2x16xf32>
  %eo = tensor.empty() : tensor<2x16x16xf32>
  %is = linalg.fill ins(%zero : f32) outs(%es : tensor<2x16x16xf32>) -> tensor<2x16x16xf32>
  %im = linalg.fill ins(%ninf : f32) outs(%er : tensor<2x16xf32>) -> tensor<2x16xf32>
  %iz = linalg.fill ins(%zero : f32) outs(%er : tensor<2x16xf32>) -> tensor<2x16xf32>
  %io = linalg.fill ins(%zero : f32) outs(%eo : tensor<2x16x16xf32>) -> tensor<2x16x16xf32>

  %s = linalg.generic {indexing_maps = [#qk_q, #qk_k, #qk_o], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : tensor<2x16x16xf32>, tensor<2x16x16xf32>) outs(%is : tensor<2x16x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x16x16xf32>
  %mx = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "reduction"]} ins(%s : tensor<2x16x16xf32>) outs(%im : tensor<2x16xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.maximumf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<2x16xf32>
  %ex = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s, %mx : tensor<2x16x16xf32>, tensor<2x16xf32>) outs(%es : tensor<2x16x16xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %d = arith.subf %a, %b : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<2x16x16xf32>
  %l = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "reduction"]} ins(%ex : tensor<2x16x16xf32>) outs(%iz : tensor<2x16xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<2x16xf32>
  %p = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ex, %l : tensor<2x16x16xf32>, tensor<2x16xf32>) outs(%es : tensor<2x16x16xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.divf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x16x16xf32>
  %o = linalg.generic {indexing_maps = [#pv_p, #pv_v, #pv_o], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%p, %v : tensor<2x16x16xf32>, tensor<2x16x16xf32>) outs(%io : tensor<2x16x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x16x16xf32>

  %dead0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<2x16x16xf32>) outs(%es : tensor<2x16x16xf32>) {
  ^bb0(%a: f32, %out: f32):
    %r = arith.negf %a : f32
    linalg.yield %r : f32
  } -> tensor<2x16x16xf32>
  %dead1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<2x16x16xf32>) outs(%es : tensor<2x16x16xf32>) {
  ^bb0(%a: f32, %out: f32):
    %r = arith.negf %a : f32
    linalg.yield %r : f32
  } -> tensor<2x16x16xf32>
  %dead2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<2x16x16xf32>) outs(%es : tensor<2x16x16xf32>) {
  ^bb0(%a: f32, %out: f32):
    %r = arith.negf %a : f32
    linalg.yield %r : f32
  } -> tensor<2x16x16xf32>
  %s2 = linalg.generic {indexing_maps = [#qk_q, #qk_k, #qk_o], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%q2, %k2 : tensor<2x16x16xf32>, tensor<2x16x16xf32>) outs(%is : tensor<2x16x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x16x16xf32>
  %mx2 = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "reduction"]} ins(%s2 : tensor<2x16x16xf32>) outs(%im : tensor<2x16xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.maximumf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<2x16xf32>
  %ex2 = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s2, %mx2 : tensor<2x16x16xf32>, tensor<2x16xf32>) outs(%es : tensor<2x16x16xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %d = arith.subf %a, %b : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<2x16x16xf32>
  %l2 = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "reduction"]} ins(%ex2 : tensor<2x16x16xf32>) outs(%iz : tensor<2x16xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<2x16xf32>
  %p2 = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ex2, %l2 : tensor<2x16x16xf32>, tensor<2x16xf32>) outs(%es : tensor<2x16x16xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.divf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x16x16xf32>
  %o2 = linalg.generic {indexing_maps = [#pv_p, #pv_v, #pv_o], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%p2, %v2 : tensor<2x16x16xf32>, tensor<2x16x16xf32>) outs(%io : tensor<2x16x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x16x16xf32>
  return %o, %o2 : tensor<2x16x16xf32>, tensor<2x16x16xf32>
}
