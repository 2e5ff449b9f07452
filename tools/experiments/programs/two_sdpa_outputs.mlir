#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map1 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#map2 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>
#map3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
module {
  func.func @m(%arg0: tensor<2x16x2048x128xbf16>, %arg1: tensor<2x16x2048x128xbf16>, %arg2: tensor<2x16x2048x128xbf16>) -> (tensor<2x16x2048x128xbf16>, tensor<2x16x2048x128xbf16>) {
    %cst = arith.constant 0.000000e+00 : f32
    %c0_i64 = arith.constant 0 : i64
    %cst_0 = arith.constant 0xFF800000 : f32
    %cst_1 = arith.constant 0.088388347648318433 : f64
    %0 = tensor.empty() : tensor<2x16x2048x128xf32>
    %1 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg0 : tensor<2x16x2048x128xbf16>) outs(%0 : tensor<2x16x2048x128xf32>) {
    ^bb0(%in: bf16, %out: f32):
      %38 = arith.extf %in : bf16 to f32
      linalg.yield %38 : f32
    } -> tensor<2x16x2048x128xf32>
    %2 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg1 : tensor<2x16x2048x128xbf16>) outs(%0 : tensor<2x16x2048x128xf32>) {
    ^bb0(%in: bf16, %out: f32):
      %38 = arith.extf %in : bf16 to f32
      linalg.yield %38 : f32
    } -> tensor<2x16x2048x128xf32>
    %3 = tensor.empty() : tensor<2x16x128x2048xf32>
    %transposed = linalg.transpose ins(%2 : tensor<2x16x2048x128xf32>) outs(%3 : tensor<2x16x128x2048xf32>) permutation = [0, 1, 3, 2] 
    %collapsed = tensor.collapse_shape %1 [[0, 1], [2], [3]] : tensor<2x16x2048x128xf32> into tensor<32x2048x128xf32>
    %collapsed_2 = tensor.collapse_shape %transposed [[0, 1], [2], [3]] : tensor<2x16x128x2048xf32> into tensor<32x128x2048xf32>
    %4 = tensor.empty() : tensor<32x2048x2048xf32>
    %5 = linalg.fill ins(%cst : f32) outs(%4 : tensor<32x2048x2048xf32>) -> tensor<32x2048x2048xf32>
    %6 = linalg.batch_matmul ins(%collapsed, %collapsed_2 : tensor<32x2048x128xf32>, tensor<32x128x2048xf32>) outs(%5 : tensor<32x2048x2048xf32>) -> tensor<32x2048x2048xf32>
    %expanded = tensor.expand_shape %6 [[0, 1], [2], [3]] output_shape [2, 16, 2048, 2048] : tensor<32x2048x2048xf32> into tensor<2x16x2048x2048xf32>
    %7 = tensor.empty() : tensor<2x16x2048x2048xf32>
    %8 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%expanded : tensor<2x16x2048x2048xf32>) outs(%7 : tensor<2x16x2048x2048xf32>) {
    ^bb0(%in: f32, %out: f32):
      %38 = arith.truncf %cst_1 : f64 to f32
      %39 = arith.mulf %in, %38 : f32
      linalg.yield %39 : f32
    } -> tensor<2x16x2048x2048xf32>
    %9 = tensor.empty() : tensor<2x16x2048xi64>
    %10 = linalg.fill ins(%c0_i64 : i64) outs(%9 : tensor<2x16x2048xi64>) -> tensor<2x16x2048xi64>
    %11 = tensor.empty() : tensor<2x16x2048xf32>
    %12 = linalg.fill ins(%cst_0 : f32) outs(%11 : tensor<2x16x2048xf32>) -> tensor<2x16x2048xf32>
    %13:2 = linalg.generic {indexing_maps = [#map, #map1, #map1], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%8 : tensor<2x16x2048x2048xf32>) outs(%12, %10 : tensor<2x16x2048xf32>, tensor<2x16x2048xi64>) {
    ^bb0(%in: f32, %out: f32, %out_14: i64):
      %38 = linalg.index 3 : index
      %39 = arith.index_cast %38 : index to i64
      %40 = arith.maximumf %in, %out : f32
      %41 = arith.cmpf ogt, %in, %out : f32
      %42 = arith.select %41, %39, %out_14 : i64
      linalg.yield %40, %42 : f32, i64
    } -> (tensor<2x16x2048xf32>, tensor<2x16x2048xi64>)
    %expanded_3 = tensor.expand_shape %13#0 [[0], [1], [2, 3]] output_shape [2, 16, 2048, 1] : tensor<2x16x2048xf32> into tensor<2x16x2048x1xf32>
    %14 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%8, %expanded_3 : tensor<2x16x2048x2048xf32>, tensor<2x16x2048x1xf32>) outs(%7 : tensor<2x16x2048x2048xf32>) {
    ^bb0(%in: f32, %in_14: f32, %out: f32):
      %38 = arith.subf %in, %in_14 : f32
      linalg.yield %38 : f32
    } -> tensor<2x16x2048x2048xf32>
    %15 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%14 : tensor<2x16x2048x2048xf32>) outs(%7 : tensor<2x16x2048x2048xf32>) {
    ^bb0(%in: f32, %out: f32):
      %38 = math.exp %in : f32
      linalg.yield %38 : f32
    } -> tensor<2x16x2048x2048xf32>
    %16 = tensor.empty() : tensor<2x16x2048x1xf32>
    %17 = linalg.fill ins(%cst : f32) outs(%16 : tensor<2x16x2048x1xf32>) -> tensor<2x16x2048x1xf32>
    %18 = linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%15 : tensor<2x16x2048x2048xf32>) outs(%17 : tensor<2x16x2048x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %38 = arith.addf %in, %out : f32
      linalg.yield %38 : f32
    } -> tensor<2x16x2048x1xf32>
    %19 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%15, %18 : tensor<2x16x2048x2048xf32>, tensor<2x16x2048x1xf32>) outs(%7 : tensor<2x16x2048x2048xf32>) {
    ^bb0(%in: f32, %in_14: f32, %out: f32):
      %38 = arith.divf %in, %in_14 : f32
      linalg.yield %38 : f32
    } -> tensor<2x16x2048x2048xf32>
    %20 = tensor.empty() : tensor<2x16x2048x2048xbf16>
    %21 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%19 : tensor<2x16x2048x2048xf32>) outs(%20 : tensor<2x16x2048x2048xbf16>) {
    ^bb0(%in: f32, %out: bf16):
      %38 = arith.truncf %in : f32 to bf16
      linalg.yield %38 : bf16
    } -> tensor<2x16x2048x2048xbf16>
    %collapsed_4 = tensor.collapse_shape %21 [[0, 1], [2], [3]] : tensor<2x16x2048x2048xbf16> into tensor<32x2048x2048xbf16>
    %collapsed_5 = tensor.collapse_shape %arg2 [[0, 1], [2], [3]] : tensor<2x16x2048x128xbf16> into tensor<32x2048x128xbf16>
    %22 = tensor.empty() : tensor<32x2048x128xf32>
    %23 = linalg.fill ins(%cst : f32) outs(%22 : tensor<32x2048x128xf32>) -> tensor<32x2048x128xf32>
    %24 = linalg.batch_matmul ins(%collapsed_4, %collapsed_5 : tensor<32x2048x2048xbf16>, tensor<32x2048x128xbf16>) outs(%23 : tensor<32x2048x128xf32>) -> tensor<32x2048x128xf32>
    %25 = tensor.empty() : tensor<32x2048x128xbf16>
    %26 = linalg.generic {indexing_maps = [#map3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%24 : tensor<32x2048x128xf32>) outs(%25 : tensor<32x2048x128xbf16>) {
    ^bb0(%in: f32, %out: bf16):
      %38 = arith.truncf %in : f32 to bf16
      linalg.yield %38 : bf16
    } -> tensor<32x2048x128xbf16>
    %expanded_6 = tensor.expand_shape %26 [[0, 1], [2], [3]] output_shape [2, 16, 2048, 128] : tensor<32x2048x128xbf16> into tensor<2x16x2048x128xbf16>
    %27 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg2 : tensor<2x16x2048x128xbf16>) outs(%0 : tensor<2x16x2048x128xf32>) {
    ^bb0(%in: bf16, %out: f32):
      %38 = arith.extf %in : bf16 to f32
      linalg.yield %38 : f32
    } -> tensor<2x16x2048x128xf32>
    %transposed_7 = linalg.transpose ins(%27 : tensor<2x16x2048x128xf32>) outs(%3 : tensor<2x16x128x2048xf32>) permutation = [0, 1, 3, 2] 
    %collapsed_8 = tensor.collapse_shape %transposed_7 [[0, 1], [2], [3]] : tensor<2x16x128x2048xf32> into tensor<32x128x2048xf32>
    %28 = linalg.batch_matmul ins(%collapsed, %collapsed_8 : tensor<32x2048x128xf32>, tensor<32x128x2048xf32>) outs(%5 : tensor<32x2048x2048xf32>) -> tensor<32x2048x2048xf32>
    %expanded_9 = tensor.expand_shape %28 [[0, 1], [2], [3]] output_shape [2, 16, 2048, 2048] : tensor<32x2048x2048xf32> into tensor<2x16x2048x2048xf32>
    %29 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%expanded_9 : tensor<2x16x2048x2048xf32>) outs(%7 : tensor<2x16x2048x2048xf32>) {
    ^bb0(%in: f32, %out: f32):
      %38 = arith.truncf %cst_1 : f64 to f32
      %39 = arith.mulf %in, %38 : f32
      linalg.yield %39 : f32
    } -> tensor<2x16x2048x2048xf32>
    %30:2 = linalg.generic {indexing_maps = [#map, #map1, #map1], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%29 : tensor<2x16x2048x2048xf32>) outs(%12, %10 : tensor<2x16x2048xf32>, tensor<2x16x2048xi64>) {
    ^bb0(%in: f32, %out: f32, %out_14: i64):
      %38 = linalg.index 3 : index
      %39 = arith.index_cast %38 : index to i64
      %40 = arith.maximumf %in, %out : f32
      %41 = arith.cmpf ogt, %in, %out : f32
      %42 = arith.select %41, %39, %out_14 : i64
      linalg.yield %40, %42 : f32, i64
    } -> (tensor<2x16x2048xf32>, tensor<2x16x2048xi64>)
    %expanded_10 = tensor.expand_shape %30#0 [[0], [1], [2, 3]] output_shape [2, 16, 2048, 1] : tensor<2x16x2048xf32> into tensor<2x16x2048x1xf32>
    %31 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%29, %expanded_10 : tensor<2x16x2048x2048xf32>, tensor<2x16x2048x1xf32>) outs(%7 : tensor<2x16x2048x2048xf32>) {
    ^bb0(%in: f32, %in_14: f32, %out: f32):
      %38 = arith.subf %in, %in_14 : f32
      linalg.yield %38 : f32
    } -> tensor<2x16x2048x2048xf32>
    %32 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%31 : tensor<2x16x2048x2048xf32>) outs(%7 : tensor<2x16x2048x2048xf32>) {
    ^bb0(%in: f32, %out: f32):
      %38 = math.exp %in : f32
      linalg.yield %38 : f32
    } -> tensor<2x16x2048x2048xf32>
    %33 = linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%32 : tensor<2x16x2048x2048xf32>) outs(%17 : tensor<2x16x2048x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %38 = arith.addf %in, %out : f32
      linalg.yield %38 : f32
    } -> tensor<2x16x2048x1xf32>
    %34 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%32, %33 : tensor<2x16x2048x2048xf32>, tensor<2x16x2048x1xf32>) outs(%7 : tensor<2x16x2048x2048xf32>) {
    ^bb0(%in: f32, %in_14: f32, %out: f32):
      %38 = arith.divf %in, %in_14 : f32
      linalg.yield %38 : f32
    } -> tensor<2x16x2048x2048xf32>
    %35 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%34 : tensor<2x16x2048x2048xf32>) outs(%20 : tensor<2x16x2048x2048xbf16>) {
    ^bb0(%in: f32, %out: bf16):
      %38 = arith.truncf %in : f32 to bf16
      linalg.yield %38 : bf16
    } -> tensor<2x16x2048x2048xbf16>
    %collapsed_11 = tensor.collapse_shape %35 [[0, 1], [2], [3]] : tensor<2x16x2048x2048xbf16> into tensor<32x2048x2048xbf16>
    %collapsed_12 = tensor.collapse_shape %arg1 [[0, 1], [2], [3]] : tensor<2x16x2048x128xbf16> into tensor<32x2048x128xbf16>
    %36 = linalg.batch_matmul ins(%collapsed_11, %collapsed_12 : tensor<32x2048x2048xbf16>, tensor<32x2048x128xbf16>) outs(%23 : tensor<32x2048x128xf32>) -> tensor<32x2048x128xf32>
    %37 = linalg.generic {indexing_maps = [#map3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%36 : tensor<32x2048x128xf32>) outs(%25 : tensor<32x2048x128xbf16>) {
    ^bb0(%in: f32, %out: bf16):
      %38 = arith.truncf %in : f32 to bf16
      linalg.yield %38 : bf16
    } -> tensor<32x2048x128xbf16>
    %expanded_13 = tensor.expand_shape %37 [[0, 1], [2], [3]] output_shape [2, 16, 2048, 128] : tensor<32x2048x128xbf16> into tensor<2x16x2048x128xbf16>
    return %expanded_6, %expanded_13 : tensor<2x16x2048x128xbf16>, tensor<2x16x2048x128xbf16>
  }
}
