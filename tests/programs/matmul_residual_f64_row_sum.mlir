// A matmul epilogue (residual add) whose result a row sum reads widened to f64,
// as torch-mlir's LayerNorm does for var_mean: the extf is recomputed by the
// row-sum kernel (fusion_plan._sink_casts); the epilogue stores the f32 sum once.
// The f64 sum is truncated to f32, as var_mean's is.
func.func @matmul_add_extf_f64_sum(%x: tensor<32x64xf32>, %w: tensor<64x64xf32>, %r: tensor<32x64xf32>) -> tensor<32xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %em = tensor.empty() : tensor<32x64xf32>
  %f = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%zero : f32) outs(%em : tensor<32x64xf32>) {
  ^bb0(%0: f32, %1: f32):
    linalg.yield %0 : f32
  } -> tensor<32x64xf32>
  %m = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : tensor<32x64xf32>, tensor<64x64xf32>) outs(%f : tensor<32x64xf32>) {
  ^bb0(%2: f32, %3: f32, %4: f32):
    %5 = arith.mulf %2, %3 : f32
    %6 = arith.addf %4, %5 : f32
    linalg.yield %6 : f32
  } -> tensor<32x64xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%m, %r : tensor<32x64xf32>, tensor<32x64xf32>) outs(%em : tensor<32x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %7 = arith.addf %a, %b : f32
    linalg.yield %7 : f32
  } -> tensor<32x64xf32>
  %e64 = tensor.empty() : tensor<32x64xf64>
  %w64 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%s : tensor<32x64xf32>) outs(%e64 : tensor<32x64xf64>) {
  ^bb0(%c: f32, %o2: f64):
    %8 = arith.extf %c : f32 to f64
    linalg.yield %8 : f64
  } -> tensor<32x64xf64>
  %zero64 = arith.constant 0.000000e+00 : f64
  %er = tensor.empty() : tensor<32xf64>
  %fr = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%zero64 : f64) outs(%er : tensor<32xf64>) {
  ^bb0(%9: f64, %10: f64):
    linalg.yield %9 : f64
  } -> tensor<32xf64>
  %sum = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%w64 : tensor<32x64xf64>) outs(%fr : tensor<32xf64>) {
  ^bb0(%in: f64, %acc: f64):
    %11 = arith.addf %in, %acc : f64
    linalg.yield %11 : f64
  } -> tensor<32xf64>
  %e32 = tensor.empty() : tensor<32xf32>
  %mean = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%sum : tensor<32xf64>) outs(%e32 : tensor<32xf32>) {
  ^bb0(%t: f64, %o3: f32):
    %13 = arith.truncf %t : f64 to f32
    linalg.yield %13 : f32
  } -> tensor<32xf32>
  func.return %mean : tensor<32xf32>
}
