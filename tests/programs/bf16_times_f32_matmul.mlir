// A bf16 activation widened to f32 times a genuine f32 weight: the widening folds
// into the contraction (the kernel loads bf16), but the products are not products
// of two bf16 values, so the tl.dot stays f32 (IEEE), and the weight is never
// rounded to bf16.
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @main(%x: tensor<32x48xbf16>, %w: tensor<48x40xf32>) -> tensor<32x40xf32> {
  %zero = arith.constant 0.0 : f32
  %ex = tensor.empty() : tensor<32x48xf32>
  %xf = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<32x48xbf16>) outs(%ex : tensor<32x48xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %0 = arith.extf %in : bf16 to f32
    linalg.yield %0 : f32
  } -> tensor<32x48xf32>
  %e = tensor.empty() : tensor<32x40xf32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<32x40xf32>) -> tensor<32x40xf32>
  %y = linalg.matmul ins(%xf, %w : tensor<32x48xf32>, tensor<48x40xf32>) outs(%i : tensor<32x40xf32>) -> tensor<32x40xf32>
  func.return %y : tensor<32x40xf32>
}
