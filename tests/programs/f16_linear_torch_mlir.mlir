// torch-mlir's f16 nn.Linear(64, 32): one f16 tl.dot kernel.
#map = affine_map<(d0) -> (d0)>
#map1 = affine_map<(d0, d1) -> (d0, d1)>
#map2 = affine_map<(d0, d1) -> (d1)>
module {
  func.func @main(%arg0: tensor<32x64xf16>, %arg1: tensor<32xf16>, %arg2: tensor<16x64xf16>) -> tensor<16x32xf16> {
    %cst = arith.constant 0.000000e+00 : f32
    %0 = tensor.empty() : tensor<64x32xf16>
    %transposed = linalg.transpose ins(%arg0 : tensor<32x64xf16>) outs(%0 : tensor<64x32xf16>) permutation = [1, 0] 
    %1 = tensor.empty() : tensor<32xf32>
    %2 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%arg1 : tensor<32xf16>) outs(%1 : tensor<32xf32>) {
    ^bb0(%in: f16, %out: f32):
      %13 = arith.extf %in : f16 to f32
      linalg.yield %13 : f32
    } -> tensor<32xf32>
    %3 = tensor.empty() : tensor<16x64xf32>
    %4 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%arg2 : tensor<16x64xf16>) outs(%3 : tensor<16x64xf32>) {
    ^bb0(%in: f16, %out: f32):
      %13 = arith.extf %in : f16 to f32
      linalg.yield %13 : f32
    } -> tensor<16x64xf32>
    %5 = tensor.empty() : tensor<64x32xf32>
    %6 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%transposed : tensor<64x32xf16>) outs(%5 : tensor<64x32xf32>) {
    ^bb0(%in: f16, %out: f32):
      %13 = arith.extf %in : f16 to f32
      linalg.yield %13 : f32
    } -> tensor<64x32xf32>
    %7 = tensor.empty() : tensor<16x32xf32>
    %8 = linalg.fill ins(%cst : f32) outs(%7 : tensor<16x32xf32>) -> tensor<16x32xf32>
    %9 = linalg.matmul ins(%4, %6 : tensor<16x64xf32>, tensor<64x32xf32>) outs(%8 : tensor<16x32xf32>) -> tensor<16x32xf32>
    %10 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel"]} ins(%9, %2 : tensor<16x32xf32>, tensor<32xf32>) outs(%7 : tensor<16x32xf32>) {
    ^bb0(%in: f32, %in_0: f32, %out: f32):
      %13 = arith.addf %in, %in_0 : f32
      linalg.yield %13 : f32
    } -> tensor<16x32xf32>
    %11 = tensor.empty() : tensor<16x32xf16>
    %12 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%10 : tensor<16x32xf32>) outs(%11 : tensor<16x32xf16>) {
    ^bb0(%in: f32, %out: f16):
      %13 = arith.truncf %in : f32 to f16
      linalg.yield %13 : f16
    } -> tensor<16x32xf16>
    return %12 : tensor<16x32xf16>
  }
}
