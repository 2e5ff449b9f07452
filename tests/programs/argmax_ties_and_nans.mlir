// torch-mlir's x.max(-1) (values and positions) and x.argmin(-1) of rows with
// many ties (floor of normals) longer than one tile, and NaNs where x > 2.5: the
// position of the first extremum before the row's first NaN (the IR's loop).
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0)>
func.func @argmax(%x: tensor<6x5000xf32>) -> (tensor<6xf32>, tensor<6xi64>, tensor<6xi64>) {
  %c0_i64 = arith.constant 0 : i64
  %ninf = arith.constant 0xFF800000 : f32
  %inf = arith.constant 0x7F800000 : f32
  %nan = arith.constant 0x7FC00000 : f32
  %cut = arith.constant 2.5 : f32
  %e2 = tensor.empty() : tensor<6x5000xf32>
  %y = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<6x5000xf32>) outs(%e2 : tensor<6x5000xf32>) {
  ^bb0(%in: f32, %out: f32):
    %f = math.floor %in : f32
    %big = arith.cmpf ogt, %in, %cut : f32
    %v = arith.select %big, %nan, %f : f32
    linalg.yield %v : f32
  } -> tensor<6x5000xf32>
  %ei = tensor.empty() : tensor<6xi64>
  %i0 = linalg.fill ins(%c0_i64 : i64) outs(%ei : tensor<6xi64>) -> tensor<6xi64>
  %ev = tensor.empty() : tensor<6xf32>
  %lo = linalg.fill ins(%ninf : f32) outs(%ev : tensor<6xf32>) -> tensor<6xf32>
  %m:2 = linalg.generic {indexing_maps = [#map, #map1, #map1], iterator_types = ["parallel", "reduction"]} ins(%y : tensor<6x5000xf32>) outs(%lo, %i0 : tensor<6xf32>, tensor<6xi64>) {
  ^bb0(%in: f32, %out: f32, %out_1: i64):
    %7 = linalg.index 1 : index
    %8 = arith.index_cast %7 : index to i64
    %9 = arith.maximumf %in, %out : f32
    %10 = arith.cmpf ogt, %in, %out : f32
    %11 = arith.select %10, %8, %out_1 : i64
    linalg.yield %9, %11 : f32, i64
  } -> (tensor<6xf32>, tensor<6xi64>)
  %hi = linalg.fill ins(%inf : f32) outs(%ev : tensor<6xf32>) -> tensor<6xf32>
  %n:2 = linalg.generic {indexing_maps = [#map, #map1, #map1], iterator_types = ["parallel", "reduction"]} ins(%y : tensor<6x5000xf32>) outs(%hi, %i0 : tensor<6xf32>, tensor<6xi64>) {
  ^bb0(%in: f32, %out: f32, %out_1: i64):
    %7 = linalg.index 1 : index
    %8 = arith.index_cast %7 : index to i64
    %9 = arith.minimumf %in, %out : f32
    %10 = arith.cmpf olt, %in, %out : f32
    %11 = arith.select %10, %8, %out_1 : i64
    linalg.yield %9, %11 : f32, i64
  } -> (tensor<6xf32>, tensor<6xi64>)
  func.return %m#0, %m#1, %n#1 : tensor<6xf32>, tensor<6xi64>, tensor<6xi64>
}
