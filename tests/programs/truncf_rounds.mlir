// The bf16 rounding error of x: x - extf(truncf(x)). An explicit truncf rounds (to
// nearest even) even though kernels compute in f32; it was dropped.
#m = affine_map<(d0, d1) -> (d0, d1)>
func.func @round_err(%x: tensor<16x64xf32>) -> tensor<16x64xf32> {
  %e = tensor.empty() : tensor<16x64xf32>
  %r = linalg.generic {indexing_maps = [#m, #m], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<16x64xf32>) outs(%e : tensor<16x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = arith.truncf %a : f32 to bf16
    %w = arith.extf %t : bf16 to f32
    %d = arith.subf %a, %w : f32
    linalg.yield %d : f32
  } -> tensor<16x64xf32>
  return %r : tensor<16x64xf32>
}
