// F.softmax as torch-mlir exports it: the row max is a max with its position,
// which nothing reads (drop-unused-results makes it a plain max: one kernel).
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0)>
func.func @softmax(%x: tensor<13x37xf32>) -> tensor<13x37xf32> {
  %c0_i64 = arith.constant 0 : i64
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %ei = tensor.empty() : tensor<13xi64>
  %i0 = linalg.fill ins(%c0_i64 : i64) outs(%ei : tensor<13xi64>) -> tensor<13xi64>
  %ev = tensor.empty() : tensor<13xf32>
  %lo = linalg.fill ins(%ninf : f32) outs(%ev : tensor<13xf32>) -> tensor<13xf32>
  %m:2 = linalg.generic {indexing_maps = [#map, #map1, #map1], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<13x37xf32>) outs(%lo, %i0 : tensor<13xf32>, tensor<13xi64>) {
  ^bb0(%in: f32, %out: f32, %out_1: i64):
    %7 = linalg.index 1 : index
    %8 = arith.index_cast %7 : index to i64
    %9 = arith.maximumf %in, %out : f32
    %10 = arith.cmpf ogt, %in, %out : f32
    %11 = arith.select %10, %8, %out_1 : i64
    linalg.yield %9, %11 : f32, i64
  } -> (tensor<13xf32>, tensor<13xi64>)
  %e2 = tensor.empty() : tensor<13x37xf32>
  %ex = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%x, %m#0 : tensor<13x37xf32>, tensor<13xf32>) outs(%e2 : tensor<13x37xf32>) {
  ^bb0(%in: f32, %mx: f32, %out: f32):
    %d = arith.subf %in, %mx : f32
    %e = math.exp %d : f32
    linalg.yield %e : f32
  } -> tensor<13x37xf32>
  %z = linalg.fill ins(%zero : f32) outs(%ev : tensor<13xf32>) -> tensor<13xf32>
  %s = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%ex : tensor<13x37xf32>) outs(%z : tensor<13xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %in, %out : f32
    linalg.yield %a : f32
  } -> tensor<13xf32>
  %p = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%ex, %s : tensor<13x37xf32>, tensor<13xf32>) outs(%e2 : tensor<13x37xf32>) {
  ^bb0(%in: f32, %t: f32, %out: f32):
    %q = arith.divf %in, %t : f32
    linalg.yield %q : f32
  } -> tensor<13x37xf32>
  func.return %p : tensor<13x37xf32>
}
