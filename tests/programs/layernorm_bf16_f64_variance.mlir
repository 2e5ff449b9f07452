// torch-mlir's LayerNorm of bf16 rows (nn.functional.layer_norm, eps 1e-12): the
// variance in f64 (var_mean's, from x widened f32 -> f64, rounded to f32), the mean
// the rows are normalised by and the normalisation itself in f32. Each value is
// computed in its own type: tests/test_programs.py runs it on rows far from zero
// (x ~ 300, where an f64 mean and an f32 mean round the bf16 output differently)
// and wants the reference evaluator's bf16 bits.
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0, 0)>
#map2 = affine_map<(d0, d1) -> (d1)>
module {
  func.func @layer_norm(%w: tensor<48xbf16>, %b: tensor<48xbf16>, %x: tensor<64x48xbf16>) -> tensor<64x48xbf16> {
    %cst = arith.constant 0.000000e+00 : f64
    %cst_0 = arith.constant 0.000000e+00 : f32
    %cst_1 = arith.constant 9.9999999999999998E-13 : f64
    %cst_2 = arith.constant 4.800000e+01 : f64
    %cst_3 = arith.constant 4.800000e+01 : f32
    %0 = tensor.empty() : tensor<64x48xf32>
    %1 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<64x48xbf16>) outs(%0 : tensor<64x48xf32>) {
    ^bb0(%in: bf16, %out: f32):
      %25 = arith.extf %in : bf16 to f32
      linalg.yield %25 : f32
    } -> tensor<64x48xf32>
    %2 = tensor.empty() : tensor<64x48xf64>
    %3 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%1 : tensor<64x48xf32>) outs(%2 : tensor<64x48xf64>) {
    ^bb0(%in: f32, %out: f64):
      %25 = arith.extf %in : f32 to f64
      linalg.yield %25 : f64
    } -> tensor<64x48xf64>
    %4 = tensor.empty() : tensor<64x1xf64>
    %5 = linalg.fill ins(%cst : f64) outs(%4 : tensor<64x1xf64>) -> tensor<64x1xf64>
    %6 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%3 : tensor<64x48xf64>) outs(%5 : tensor<64x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %25 = arith.addf %in, %out : f64
      linalg.yield %25 : f64
    } -> tensor<64x1xf64>
    %7 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%6 : tensor<64x1xf64>) outs(%4 : tensor<64x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %25 = arith.divf %in, %cst_2 : f64
      linalg.yield %25 : f64
    } -> tensor<64x1xf64>
    %8 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%3, %7 : tensor<64x48xf64>, tensor<64x1xf64>) outs(%2 : tensor<64x48xf64>) {
    ^bb0(%in: f64, %in_4: f64, %out: f64):
      %25 = arith.subf %in, %in_4 : f64
      linalg.yield %25 : f64
    } -> tensor<64x48xf64>
    %9 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%8, %8 : tensor<64x48xf64>, tensor<64x48xf64>) outs(%2 : tensor<64x48xf64>) {
    ^bb0(%in: f64, %in_4: f64, %out: f64):
      %25 = arith.mulf %in, %in_4 : f64
      linalg.yield %25 : f64
    } -> tensor<64x48xf64>
    %10 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%9 : tensor<64x48xf64>) outs(%5 : tensor<64x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %25 = arith.addf %in, %out : f64
      linalg.yield %25 : f64
    } -> tensor<64x1xf64>
    %11 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%10 : tensor<64x1xf64>) outs(%4 : tensor<64x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %25 = arith.divf %in, %cst_2 : f64
      linalg.yield %25 : f64
    } -> tensor<64x1xf64>
    %12 = tensor.empty() : tensor<64x1xf32>
    %13 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%11 : tensor<64x1xf64>) outs(%12 : tensor<64x1xf32>) {
    ^bb0(%in: f64, %out: f32):
      %25 = arith.truncf %in : f64 to f32
      linalg.yield %25 : f32
    } -> tensor<64x1xf32>
    %14 = linalg.fill ins(%cst_0 : f32) outs(%12 : tensor<64x1xf32>) -> tensor<64x1xf32>
    %15 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%1 : tensor<64x48xf32>) outs(%14 : tensor<64x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %25 = arith.addf %in, %out : f32
      linalg.yield %25 : f32
    } -> tensor<64x1xf32>
    %16 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%15 : tensor<64x1xf32>) outs(%12 : tensor<64x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %25 = arith.divf %in, %cst_3 : f32
      linalg.yield %25 : f32
    } -> tensor<64x1xf32>
    %17 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%13 : tensor<64x1xf32>) outs(%12 : tensor<64x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %25 = arith.truncf %cst_1 : f64 to f32
      %26 = arith.addf %in, %25 : f32
      linalg.yield %26 : f32
    } -> tensor<64x1xf32>
    %18 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%17 : tensor<64x1xf32>) outs(%12 : tensor<64x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %25 = math.rsqrt %in : f32
      linalg.yield %25 : f32
    } -> tensor<64x1xf32>
    %19 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%1, %16 : tensor<64x48xf32>, tensor<64x1xf32>) outs(%0 : tensor<64x48xf32>) {
    ^bb0(%in: f32, %in_4: f32, %out: f32):
      %25 = arith.subf %in, %in_4 : f32
      linalg.yield %25 : f32
    } -> tensor<64x48xf32>
    %20 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%19, %18 : tensor<64x48xf32>, tensor<64x1xf32>) outs(%0 : tensor<64x48xf32>) {
    ^bb0(%in: f32, %in_4: f32, %out: f32):
      %25 = arith.mulf %in, %in_4 : f32
      linalg.yield %25 : f32
    } -> tensor<64x48xf32>
    %21 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel"]} ins(%20, %w : tensor<64x48xf32>, tensor<48xbf16>) outs(%0 : tensor<64x48xf32>) {
    ^bb0(%in: f32, %in_4: bf16, %out: f32):
      %25 = arith.extf %in_4 : bf16 to f32
      %26 = arith.mulf %in, %25 : f32
      linalg.yield %26 : f32
    } -> tensor<64x48xf32>
    %22 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel"]} ins(%21, %b : tensor<64x48xf32>, tensor<48xbf16>) outs(%0 : tensor<64x48xf32>) {
    ^bb0(%in: f32, %in_4: bf16, %out: f32):
      %25 = arith.extf %in_4 : bf16 to f32
      %26 = arith.addf %in, %25 : f32
      linalg.yield %26 : f32
    } -> tensor<64x48xf32>
    %23 = tensor.empty() : tensor<64x48xbf16>
    %24 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%22 : tensor<64x48xf32>) outs(%23 : tensor<64x48xbf16>) {
    ^bb0(%in: f32, %out: bf16):
      %25 = arith.truncf %in : f32 to bf16
      linalg.yield %25 : bf16
    } -> tensor<64x48xbf16>
    return %24 : tensor<64x48xbf16>
  }
}

