// torch-mlir's bf16 nn.Linear(64, 32) on a 16x64 input (weights as arguments): the
// extf producers and the weight's transpose fold into one bf16 tl.dot kernel with the bias.
#map = affine_map<(d0) -> (d0)>
#map1 = affine_map<(d0, d1) -> (d0, d1)>
#map2 = affine_map<(d0, d1) -> (d1)>
module {
  func.func @main(%arg0: tensor<32x64xbf16>, %arg1: tensor<32xbf16>, %arg2: tensor<16x64xbf16>) -> tensor<16x32xbf16> {
    %cst = arith.constant 0.000000e+00 : f32
    %0 = tensor.empty() : tensor<64x32xbf16>
    %transposed = linalg.transpose ins(%arg0 : tensor<32x64xbf16>) outs(%0 : tensor<64x32xbf16>) permutation = [1, 0] 
    %1 = tensor.empty() : tensor<32xf32>
    %2 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%arg1 : tensor<32xbf16>) outs(%1 : tensor<32xf32>) {
    ^bb0(%in: bf16, %out: f32):
      %13 = arith.extf %in : bf16 to f32
      linalg.yield %13 : f32
    } -> tensor<32xf32>
    %3 = tensor.empty() : tensor<16x64xf32>
    %4 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%arg2 : tensor<16x64xbf16>) outs(%3 : tensor<16x64xf32>) {
    ^bb0(%in: bf16, %out: f32):
      %13 = arith.extf %in : bf16 to f32
      linalg.yield %13 : f32
    } -> tensor<16x64xf32>
    %5 = tensor.empty() : tensor<64x32xf32>
    %6 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%transposed : tensor<64x32xbf16>) outs(%5 : tensor<64x32xf32>) {
    ^bb0(%in: bf16, %out: f32):
      %13 = arith.extf %in : bf16 to f32
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
    %11 = tensor.empty() : tensor<16x32xbf16>
    %12 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%10 : tensor<16x32xf32>) outs(%11 : tensor<16x32xbf16>) {
    ^bb0(%in: f32, %out: bf16):
      %13 = arith.truncf %in : f32 to bf16
      linalg.yield %13 : bf16
    } -> tensor<16x32xbf16>
    return %12 : tensor<16x32xbf16>
  }
}
