// LLaMA's rotary embedding as torch-mlir writes it: the heads permuted, sliced in
// halves, the upper half negated and concatenated before the lower
// (rotate_half), times sin plus x times cos. fold-concats computes the concat
// where it is read: one kernel reads x at the rotated index. The second result
// concatenates three pieces along dim 0 (a strided slice of an argument, an
// exp that is also returned, so it is gathered rather than inlined, and cos).
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#perm = affine_map<(d0, d1, d2) -> (d1, d0, d2)>
#cs = affine_map<(d0, d1, d2) -> (d1, d2)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @main(%x: tensor<3x2x8xf32>, %cos: tensor<3x8xf32>, %sin: tensor<3x8xf32>) -> (tensor<2x3x8xf32>, tensor<8x8xf32>, tensor<3x8xf32>) {
    %e = tensor.empty() : tensor<2x3x8xf32>
    %t = linalg.generic {indexing_maps = [#perm, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : tensor<3x2x8xf32>) outs(%e : tensor<2x3x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<2x3x8xf32>
    %lo = tensor.extract_slice %t[0, 0, 0] [2, 3, 4] [1, 1, 1] : tensor<2x3x8xf32> to tensor<2x3x4xf32>
    %hi = tensor.extract_slice %t[0, 0, 4] [2, 3, 4] [1, 1, 1] : tensor<2x3x8xf32> to tensor<2x3x4xf32>
    %eh = tensor.empty() : tensor<2x3x4xf32>
    %n = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%hi : tensor<2x3x4xf32>) outs(%eh : tensor<2x3x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %0 = arith.negf %in : f32
      linalg.yield %0 : f32
    } -> tensor<2x3x4xf32>
    %r = tensor.concat dim(2) %n, %lo : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x8xf32>
    %a = linalg.generic {indexing_maps = [#perm, #cs, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x, %cos : tensor<3x2x8xf32>, tensor<3x8xf32>) outs(%e : tensor<2x3x8xf32>) {
    ^bb0(%in: f32, %c: f32, %out: f32):
      %0 = arith.mulf %in, %c : f32
      linalg.yield %0 : f32
    } -> tensor<2x3x8xf32>
    %b = linalg.generic {indexing_maps = [#id, #cs, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%r, %sin : tensor<2x3x8xf32>, tensor<3x8xf32>) outs(%e : tensor<2x3x8xf32>) {
    ^bb0(%in: f32, %s: f32, %out: f32):
      %0 = arith.mulf %in, %s : f32
      linalg.yield %0 : f32
    } -> tensor<2x3x8xf32>
    %q = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%a, %b : tensor<2x3x8xf32>, tensor<2x3x8xf32>) outs(%e : tensor<2x3x8xf32>) {
    ^bb0(%i0: f32, %i1: f32, %out: f32):
      %0 = arith.addf %i0, %i1 : f32
      linalg.yield %0 : f32
    } -> tensor<2x3x8xf32>
    %s0 = tensor.extract_slice %sin[0, 1] [2, 4] [2, 2] : tensor<3x8xf32> to tensor<2x4xf32>
    %e24 = tensor.empty() : tensor<2x4xf32>
    %w = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%s0 : tensor<2x4xf32>) outs(%e24 : tensor<2x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %0 = arith.negf %in : f32
      linalg.yield %0 : f32
    } -> tensor<2x4xf32>
    %w2 = tensor.concat dim(1) %w, %w : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x8xf32>
    %e38 = tensor.empty() : tensor<3x8xf32>
    %ex = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%cos : tensor<3x8xf32>) outs(%e38 : tensor<3x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %0 = math.exp %in : f32
      linalg.yield %0 : f32
    } -> tensor<3x8xf32>
    %three = tensor.concat dim(0) %w2, %ex, %cos : (tensor<2x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<8x8xf32>
    %e88 = tensor.empty() : tensor<8x8xf32>
    %sq = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%three : tensor<8x8xf32>) outs(%e88 : tensor<8x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %0 = arith.mulf %in, %in : f32
      linalg.yield %0 : f32
    } -> tensor<8x8xf32>
    return %q, %sq, %ex : tensor<2x3x8xf32>, tensor<8x8xf32>, tensor<3x8xf32>
  }
}
