// bf16 operands accumulated in f32: the named op (upstream casts its operands to the
// accumulator's type) and the same as a generic with arith.extf; both are tl.dot.
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#o = affine_map<(m, n, k) -> (m, n)>
func.func @mixed(%x: tensor<48x40xbf16>, %w: tensor<40x64xbf16>) -> (tensor<48x64xf32>, tensor<48x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<48x64xf32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<48x64xf32>) -> tensor<48x64xf32>
  %m = linalg.matmul ins(%x, %w : tensor<48x40xbf16>, tensor<40x64xbf16>) outs(%i : tensor<48x64xf32>) -> tensor<48x64xf32>
  %g = linalg.generic {indexing_maps = [#a, #b, #o], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : tensor<48x40xbf16>, tensor<40x64xbf16>) outs(%i : tensor<48x64xf32>) {
  ^bb0(%p: bf16, %q: bf16, %acc: f32):
    %pf = arith.extf %p : bf16 to f32
    %qf = arith.extf %q : bf16 to f32
    %t = arith.mulf %pf, %qf : f32
    %s = arith.addf %acc, %t : f32
    linalg.yield %s : f32
  } -> tensor<48x64xf32>
  func.return %m, %g : tensor<48x64xf32>, tensor<48x64xf32>
}
