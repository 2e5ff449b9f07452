// torch-mlir's spelling of LayerNorm (keep-dim statistics through [B, T, 1] views)
// then a Linear on [B, T, C] (collapsed to [B*T, C]), a tanh and a residual add in
// [B, T, C]: two kernels (the LayerNorm's row kernel; the matmul with its
// epilogue: bias, tanh, residual), no view between them (seven before
// propagate-reshapes; three while the rows' reads were two views of %x).
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row3 = affine_map<(d0, d1, d2) -> (d0, d1)>
#bc3 = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @main(%x: tensor<2x5x24xf32>, %w: tensor<24x24xf32>, %bias: tensor<24xf32>) -> tensor<2x5x24xf32> {
  %zero = arith.constant 0.0 : f32
  %n = arith.constant 24.0 : f32
  %eps = arith.constant 1.0e-5 : f32
  %e2 = tensor.empty() : tensor<2x5xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x5xf32>) -> tensor<2x5xf32>
  %s = linalg.generic {indexing_maps = [#id3, #row3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x : tensor<2x5x24xf32>) outs(%z2 : tensor<2x5xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<2x5xf32>
  %s1 = tensor.expand_shape %s [[0], [1, 2]] output_shape [2, 5, 1] : tensor<2x5xf32> into tensor<2x5x1xf32>
  %e1 = tensor.empty() : tensor<2x5x1xf32>
  %m1 = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s1 : tensor<2x5x1xf32>) outs(%e1 : tensor<2x5x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.divf %a, %n : f32
    linalg.yield %r : f32
  } -> tensor<2x5x1xf32>
  %m = tensor.collapse_shape %m1 [[0], [1, 2]] : tensor<2x5x1xf32> into tensor<2x5xf32>
  %e3 = tensor.empty() : tensor<2x5x24xf32>
  %d = linalg.generic {indexing_maps = [#id3, #bc3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x, %m : tensor<2x5x24xf32>, tensor<2x5xf32>) outs(%e3 : tensor<2x5x24xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.subf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x5x24xf32>
  %v = linalg.generic {indexing_maps = [#id3, #row3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%d : tensor<2x5x24xf32>) outs(%z2 : tensor<2x5xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %q = arith.mulf %a, %a : f32
    %r = arith.addf %q, %acc : f32
    linalg.yield %r : f32
  } -> tensor<2x5xf32>
  %v1 = tensor.expand_shape %v [[0], [1, 2]] output_shape [2, 5, 1] : tensor<2x5xf32> into tensor<2x5x1xf32>
  %r1 = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%v1 : tensor<2x5x1xf32>) outs(%e1 : tensor<2x5x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %q = arith.divf %a, %n : f32
    %p = arith.addf %q, %eps : f32
    %r = math.rsqrt %p : f32
    linalg.yield %r : f32
  } -> tensor<2x5x1xf32>
  %rs = tensor.collapse_shape %r1 [[0], [1, 2]] : tensor<2x5x1xf32> into tensor<2x5xf32>
  %ln = linalg.generic {indexing_maps = [#id3, #bc3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%d, %rs : tensor<2x5x24xf32>, tensor<2x5xf32>) outs(%e3 : tensor<2x5x24xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.mulf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x5x24xf32>
  %lc = tensor.collapse_shape %ln [[0, 1], [2]] : tensor<2x5x24xf32> into tensor<10x24xf32>
  %em = tensor.empty() : tensor<10x24xf32>
  %zm = linalg.fill ins(%zero : f32) outs(%em : tensor<10x24xf32>) -> tensor<10x24xf32>
  %mm = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%lc, %w : tensor<10x24xf32>, tensor<24x24xf32>) outs(%zm : tensor<10x24xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<10x24xf32>
  %bi = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%mm, %bias : tensor<10x24xf32>, tensor<24xf32>) outs(%em : tensor<10x24xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<10x24xf32>
  %y3 = tensor.expand_shape %bi [[0, 1], [2]] output_shape [2, 5, 24] : tensor<10x24xf32> into tensor<2x5x24xf32>
  %g = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%y3 : tensor<2x5x24xf32>) outs(%e3 : tensor<2x5x24xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = math.tanh %a : f32
    linalg.yield %t : f32
  } -> tensor<2x5x24xf32>
  %out = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x, %g : tensor<2x5x24xf32>, tensor<2x5x24xf32>) outs(%e3 : tensor<2x5x24xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x5x24xf32>
  func.return %out : tensor<2x5x24xf32>
}
