#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map1 = affine_map<(d0) -> (d0)>
#map2 = affine_map<(d0, d1) -> (0, d1)>
#map3 = affine_map<(d0, d1) -> (d0, 0)>
#map4 = affine_map<(d0, d1) -> (d0, d1)>
#map5 = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
#map6 = affine_map<(d0, d1, d2, d3) -> ()>
#map7 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#map8 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>
#map9 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
module {
  func.func @one(%arg0: tensor<2x16x2048x128xbf16>, %arg1: tensor<2x16x2048x128xbf16>, %arg2: tensor<2x16x2048x128xbf16>) -> tensor<2x16x2048x128xbf16> {
    %c0_i64 = arith.constant 0 : i64
    %cst = arith.constant 0.000000e+00 : f32
    %cst_0 = arith.constant 0xFF800000 : f32
    %cst_1 = arith.constant dense<0xFF800000> : tensor<f32>
    %cst_2 = arith.constant dense<true> : tensor<2048x2048xi1>
    %cst_3 = arith.constant 0.088388347648318433 : f64
    %false = arith.constant false
    %0 = tensor.empty() : tensor<2x16x2048x128xf32>
    %1 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg0 : tensor<2x16x2048x128xbf16>) outs(%0 : tensor<2x16x2048x128xf32>) {
    ^bb0(%in: bf16, %out: f32):
      %36 = arith.extf %in : bf16 to f32
      linalg.yield %36 : f32
    } -> tensor<2x16x2048x128xf32>
    %2 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg1 : tensor<2x16x2048x128xbf16>) outs(%0 : tensor<2x16x2048x128xf32>) {
    ^bb0(%in: bf16, %out: f32):
      %36 = arith.extf %in : bf16 to f32
      linalg.yield %36 : f32
    } -> tensor<2x16x2048x128xf32>
    %3 = tensor.empty() : tensor<2x16x128x2048xf32>
    %transposed = linalg.transpose ins(%2 : tensor<2x16x2048x128xf32>) outs(%3 : tensor<2x16x128x2048xf32>) permutation = [0, 1, 3, 2] 
    %collapsed = tensor.collapse_shape %1 [[0, 1], [2], [3]] : tensor<2x16x2048x128xf32> into tensor<32x2048x128xf32>
    %collapsed_4 = tensor.collapse_shape %transposed [[0, 1], [2], [3]] : tensor<2x16x128x2048xf32> into tensor<32x128x2048xf32>
    %4 = tensor.empty() : tensor<32x2048x2048xf32>
    %5 = linalg.fill ins(%cst : f32) outs(%4 : tensor<32x2048x2048xf32>) -> tensor<32x2048x2048xf32>
    %6 = linalg.batch_matmul ins(%collapsed, %collapsed_4 : tensor<32x2048x128xf32>, tensor<32x128x2048xf32>) outs(%5 : tensor<32x2048x2048xf32>) -> tensor<32x2048x2048xf32>
    %expanded = tensor.expand_shape %6 [[0, 1], [2], [3]] output_shape [2, 16, 2048, 2048] : tensor<32x2048x2048xf32> into tensor<2x16x2048x2048xf32>
    %7 = tensor.empty() : tensor<2x16x2048x2048xf32>
    %8 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%expanded : tensor<2x16x2048x2048xf32>) outs(%7 : tensor<2x16x2048x2048xf32>) {
    ^bb0(%in: f32, %out: f32):
      %36 = arith.truncf %cst_3 : f64 to f32
      %37 = arith.mulf %in, %36 : f32
      linalg.yield %37 : f32
    } -> tensor<2x16x2048x2048xf32>
    %9 = tensor.empty() : tensor<2048xi64>
    %10 = linalg.generic {indexing_maps = [#map1], iterator_types = ["parallel"]} outs(%9 : tensor<2048xi64>) {
    ^bb0(%out: i64):
      %36 = linalg.index 0 : index
      %37 = arith.index_cast %36 : index to i64
      linalg.yield %37 : i64
    } -> tensor<2048xi64>
    %expanded_5 = tensor.expand_shape %10 [[0, 1]] output_shape [1, 2048] : tensor<2048xi64> into tensor<1x2048xi64>
    %expanded_6 = tensor.expand_shape %10 [[0, 1]] output_shape [2048, 1] : tensor<2048xi64> into tensor<2048x1xi64>
    %11 = tensor.empty() : tensor<2048x2048xi64>
    %12 = linalg.generic {indexing_maps = [#map2, #map3, #map4], iterator_types = ["parallel", "parallel"]} ins(%expanded_5, %expanded_6 : tensor<1x2048xi64>, tensor<2048x1xi64>) outs(%11 : tensor<2048x2048xi64>) {
    ^bb0(%in: i64, %in_11: i64, %out: i64):
      %36 = arith.subi %in, %in_11 : i64
      linalg.yield %36 : i64
    } -> tensor<2048x2048xi64>
    %13 = tensor.empty() : tensor<2048x2048xi1>
    %14 = linalg.generic {indexing_maps = [#map4, #map4], iterator_types = ["parallel", "parallel"]} ins(%12 : tensor<2048x2048xi64>) outs(%13 : tensor<2048x2048xi1>) {
    ^bb0(%in: i64, %out: i1):
      %36 = arith.cmpi sle, %in, %c0_i64 : i64
      linalg.yield %36 : i1
    } -> tensor<2048x2048xi1>
    %15 = linalg.generic {indexing_maps = [#map4, #map4, #map4], iterator_types = ["parallel", "parallel"]} ins(%14, %cst_2 : tensor<2048x2048xi1>, tensor<2048x2048xi1>) outs(%13 : tensor<2048x2048xi1>) {
    ^bb0(%in: i1, %in_11: i1, %out: i1):
      %36 = arith.andi %in, %in_11 : i1
      linalg.yield %36 : i1
    } -> tensor<2048x2048xi1>
    %16 = linalg.generic {indexing_maps = [#map4, #map4], iterator_types = ["parallel", "parallel"]} ins(%15 : tensor<2048x2048xi1>) outs(%13 : tensor<2048x2048xi1>) {
    ^bb0(%in: i1, %out: i1):
      %36 = arith.cmpi eq, %in, %false : i1
      linalg.yield %36 : i1
    } -> tensor<2048x2048xi1>
    %17 = linalg.generic {indexing_maps = [#map5, #map6, #map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%16, %cst_1, %8 : tensor<2048x2048xi1>, tensor<f32>, tensor<2x16x2048x2048xf32>) outs(%7 : tensor<2x16x2048x2048xf32>) {
    ^bb0(%in: i1, %in_11: f32, %in_12: f32, %out: f32):
      %36 = arith.select %in, %in_11, %in_12 : f32
      linalg.yield %36 : f32
    } -> tensor<2x16x2048x2048xf32>
    %18 = tensor.empty() : tensor<2x16x2048xi64>
    %19 = linalg.fill ins(%c0_i64 : i64) outs(%18 : tensor<2x16x2048xi64>) -> tensor<2x16x2048xi64>
    %20 = tensor.empty() : tensor<2x16x2048xf32>
    %21 = linalg.fill ins(%cst_0 : f32) outs(%20 : tensor<2x16x2048xf32>) -> tensor<2x16x2048xf32>
    %22:2 = linalg.generic {indexing_maps = [#map, #map7, #map7], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%17 : tensor<2x16x2048x2048xf32>) outs(%21, %19 : tensor<2x16x2048xf32>, tensor<2x16x2048xi64>) {
    ^bb0(%in: f32, %out: f32, %out_11: i64):
      %36 = linalg.index 3 : index
      %37 = arith.index_cast %36 : index to i64
      %38 = arith.maximumf %in, %out : f32
      %39 = arith.cmpf ogt, %in, %out : f32
      %40 = arith.select %39, %37, %out_11 : i64
      linalg.yield %38, %40 : f32, i64
    } -> (tensor<2x16x2048xf32>, tensor<2x16x2048xi64>)
    %expanded_7 = tensor.expand_shape %22#0 [[0], [1], [2, 3]] output_shape [2, 16, 2048, 1] : tensor<2x16x2048xf32> into tensor<2x16x2048x1xf32>
    %23 = linalg.generic {indexing_maps = [#map, #map8, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%17, %expanded_7 : tensor<2x16x2048x2048xf32>, tensor<2x16x2048x1xf32>) outs(%7 : tensor<2x16x2048x2048xf32>) {
    ^bb0(%in: f32, %in_11: f32, %out: f32):
      %36 = arith.subf %in, %in_11 : f32
      linalg.yield %36 : f32
    } -> tensor<2x16x2048x2048xf32>
    %24 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%23 : tensor<2x16x2048x2048xf32>) outs(%7 : tensor<2x16x2048x2048xf32>) {
    ^bb0(%in: f32, %out: f32):
      %36 = math.exp %in : f32
      linalg.yield %36 : f32
    } -> tensor<2x16x2048x2048xf32>
    %25 = tensor.empty() : tensor<2x16x2048x1xf32>
    %26 = linalg.fill ins(%cst : f32) outs(%25 : tensor<2x16x2048x1xf32>) -> tensor<2x16x2048x1xf32>
    %27 = linalg.generic {indexing_maps = [#map, #map8], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%24 : tensor<2x16x2048x2048xf32>) outs(%26 : tensor<2x16x2048x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %36 = arith.addf %in, %out : f32
      linalg.yield %36 : f32
    } -> tensor<2x16x2048x1xf32>
    %28 = linalg.generic {indexing_maps = [#map, #map8, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%24, %27 : tensor<2x16x2048x2048xf32>, tensor<2x16x2048x1xf32>) outs(%7 : tensor<2x16x2048x2048xf32>) {
    ^bb0(%in: f32, %in_11: f32, %out: f32):
      %36 = arith.divf %in, %in_11 : f32
      linalg.yield %36 : f32
    } -> tensor<2x16x2048x2048xf32>
    %29 = tensor.empty() : tensor<2x16x2048x2048xbf16>
    %30 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%28 : tensor<2x16x2048x2048xf32>) outs(%29 : tensor<2x16x2048x2048xbf16>) {
    ^bb0(%in: f32, %out: bf16):
      %36 = arith.truncf %in : f32 to bf16
      linalg.yield %36 : bf16
    } -> tensor<2x16x2048x2048xbf16>
    %collapsed_8 = tensor.collapse_shape %30 [[0, 1], [2], [3]] : tensor<2x16x2048x2048xbf16> into tensor<32x2048x2048xbf16>
    %collapsed_9 = tensor.collapse_shape %arg2 [[0, 1], [2], [3]] : tensor<2x16x2048x128xbf16> into tensor<32x2048x128xbf16>
    %31 = tensor.empty() : tensor<32x2048x128xf32>
    %32 = linalg.fill ins(%cst : f32) outs(%31 : tensor<32x2048x128xf32>) -> tensor<32x2048x128xf32>
    %33 = linalg.batch_matmul ins(%collapsed_8, %collapsed_9 : tensor<32x2048x2048xbf16>, tensor<32x2048x128xbf16>) outs(%32 : tensor<32x2048x128xf32>) -> tensor<32x2048x128xf32>
    %34 = tensor.empty() : tensor<32x2048x128xbf16>
    %35 = linalg.generic {indexing_maps = [#map9, #map9], iterator_types = ["parallel", "parallel", "parallel"]} ins(%33 : tensor<32x2048x128xf32>) outs(%34 : tensor<32x2048x128xbf16>) {
    ^bb0(%in: f32, %out: bf16):
      %36 = arith.truncf %in : f32 to bf16
      linalg.yield %36 : bf16
    } -> tensor<32x2048x128xbf16>
    %expanded_10 = tensor.expand_shape %35 [[0, 1], [2], [3]] output_shape [2, 16, 2048, 128] : tensor<32x2048x128xbf16> into tensor<2x16x2048x128xbf16>
    return %expanded_10 : tensor<2x16x2048x128xbf16>
  }
}
