// nanoGPT's attention as torch-mlir exports it: Q K^T and P V are batch matmuls over
// B*H between a collapse_shape of each operand and an expand_shape of the result,
// masked_fill with -inf where a mask buffer read as data is < 0 (about half the keys), the
// softmax's `x - max` and `exp` in two ops, and the heads permuted by copies:
// flash-attention reads through all of it: one kernel, the compare computed per tile.
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#row = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#ij = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
#s0 = affine_map<(d0, d1, d2, d3) -> ()>
#th = affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>
func.func @attn(%x: tensor<2x40x3x16xf32>, %y: tensor<2x40x3x16xf32>, %z: tensor<2x40x3x16xf32>, %bias: tensor<40x40xf32>) -> tensor<2x3x40x16xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %ninf_t = arith.constant dense<0xFF800000> : tensor<f32>
  %scale = arith.constant 0.25 : f32
  %eh = tensor.empty() : tensor<2x3x40x16xf32>
  %q = linalg.generic {indexing_maps = [#th, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<2x40x3x16xf32>) outs(%eh : tensor<2x3x40x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<2x3x40x16xf32>
  %k = linalg.generic {indexing_maps = [#th, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%y : tensor<2x40x3x16xf32>) outs(%eh : tensor<2x3x40x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<2x3x40x16xf32>
  %v = linalg.generic {indexing_maps = [#th, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%z : tensor<2x40x3x16xf32>) outs(%eh : tensor<2x3x40x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<2x3x40x16xf32>
  %qc = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<2x3x40x16xf32> into tensor<6x40x16xf32>
  %kc = tensor.collapse_shape %k [[0, 1], [2], [3]] : tensor<2x3x40x16xf32> into tensor<6x40x16xf32>
  %es3 = tensor.empty() : tensor<6x40x40xf32>
  %is3 = linalg.fill ins(%zero : f32) outs(%es3 : tensor<6x40x40xf32>) -> tensor<6x40x40xf32>
  %s3 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%qc, %kc : tensor<6x40x16xf32>, tensor<6x40x16xf32>) outs(%is3 : tensor<6x40x40xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<6x40x40xf32>
  %s = tensor.expand_shape %s3 [[0, 1], [2], [3]] output_shape [2, 3, 40, 40] : tensor<6x40x40xf32> into tensor<2x3x40x40xf32>
  %es = tensor.empty() : tensor<2x3x40x40xf32>
  %ss = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s : tensor<2x3x40x40xf32>) outs(%es : tensor<2x3x40x40xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %scale : f32
    linalg.yield %m : f32
  } -> tensor<2x3x40x40xf32>
  %eb = tensor.empty() : tensor<40x40xi1>
  %masked = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%bias : tensor<40x40xf32>) outs(%eb : tensor<40x40xi1>) {
  ^bb0(%a: f32, %o: i1):
    %c = arith.cmpf olt, %a, %zero : f32
    linalg.yield %c : i1
  } -> tensor<40x40xi1>
  %sm = linalg.generic {indexing_maps = [#ij, #s0, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%masked, %ninf_t, %ss : tensor<40x40xi1>, tensor<f32>, tensor<2x3x40x40xf32>) outs(%es : tensor<2x3x40x40xf32>) {
  ^bb0(%c: i1, %n: f32, %a: f32, %o: f32):
    %r = arith.select %c, %n, %a : f32
    linalg.yield %r : f32
  } -> tensor<2x3x40x40xf32>
  %er = tensor.empty() : tensor<2x3x40xf32>
  %im = linalg.fill ins(%ninf : f32) outs(%er : tensor<2x3x40xf32>) -> tensor<2x3x40xf32>
  %mx = linalg.generic {indexing_maps = [#id4, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%sm : tensor<2x3x40x40xf32>) outs(%im : tensor<2x3x40xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.maximumf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<2x3x40xf32>
  %d = linalg.generic {indexing_maps = [#id4, #row, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sm, %mx : tensor<2x3x40x40xf32>, tensor<2x3x40xf32>) outs(%es : tensor<2x3x40x40xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.subf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x3x40x40xf32>
  %ex = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%d : tensor<2x3x40x40xf32>) outs(%es : tensor<2x3x40x40xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.exp %a : f32
    linalg.yield %r : f32
  } -> tensor<2x3x40x40xf32>
  %iz = linalg.fill ins(%zero : f32) outs(%er : tensor<2x3x40xf32>) -> tensor<2x3x40xf32>
  %l = linalg.generic {indexing_maps = [#id4, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex : tensor<2x3x40x40xf32>) outs(%iz : tensor<2x3x40xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<2x3x40xf32>
  %p = linalg.generic {indexing_maps = [#id4, #row, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %l : tensor<2x3x40x40xf32>, tensor<2x3x40xf32>) outs(%es : tensor<2x3x40x40xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.divf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x3x40x40xf32>
  %pc = tensor.collapse_shape %p [[0, 1], [2], [3]] : tensor<2x3x40x40xf32> into tensor<6x40x40xf32>
  %vc = tensor.collapse_shape %v [[0, 1], [2], [3]] : tensor<2x3x40x16xf32> into tensor<6x40x16xf32>
  %eo3 = tensor.empty() : tensor<6x40x16xf32>
  %io3 = linalg.fill ins(%zero : f32) outs(%eo3 : tensor<6x40x16xf32>) -> tensor<6x40x16xf32>
  %o3 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%pc, %vc : tensor<6x40x40xf32>, tensor<6x40x16xf32>) outs(%io3 : tensor<6x40x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<6x40x16xf32>
  %o = tensor.expand_shape %o3 [[0, 1], [2], [3]] output_shape [2, 3, 40, 16] : tensor<6x40x16xf32> into tensor<2x3x40x16xf32>
  return %o : tensor<2x3x40x16xf32>
}
