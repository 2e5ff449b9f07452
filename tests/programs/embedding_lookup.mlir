// An embedding lookup as torch-mlir writes nn.Embedding: a generic over
// (batch, token, feature) whose payload extracts table[ids[b, t], d] from the
// table, a function argument read at computed indices (a gather). The ids are
// wrapped into range as torch's negative indices are (random ids lie in [-8, 8)).
// The lookup fuses with the positional add and the row sum that read it; the
// bag (a sum over tokens of gathered rows) gathers inside a reduction.
#map = affine_map<(d0, d1, d2) -> (d0, d1)>
#map1 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map2 = affine_map<(d0, d1, d2) -> (d1, d2)>
#map3 = affine_map<(d0, d1) -> (d0, d1)>
#map4 = affine_map<(d0, d1) -> (d0)>
#map5 = affine_map<(d0, d1, d2) -> (d0, d2)>
module {
  func.func @main(%table: tensor<11x13xf32>, %pos: tensor<5x13xf32>, %ids: tensor<3x5xi64>)
      -> (tensor<3x5x13xf32>, tensor<3x5xf32>, tensor<3x13xf32>) {
    %c0_i64 = arith.constant 0 : i64
    %c11_i64 = arith.constant 11 : i64
    %zero = arith.constant 0.000000e+00 : f32
    %0 = tensor.empty() : tensor<3x5x13xf32>
    %1 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ids : tensor<3x5xi64>) outs(%0 : tensor<3x5x13xf32>) {
    ^bb0(%in: i64, %out: f32):
      %neg = arith.cmpi slt, %in, %c0_i64 : i64
      %up = arith.addi %in, %c11_i64 : i64
      %w = arith.select %neg, %up, %in : i64
      %row = arith.index_cast %w : i64 to index
      %col = linalg.index 2 : index
      %extracted = tensor.extract %table[%row, %col] : tensor<11x13xf32>
      linalg.yield %extracted : f32
    } -> tensor<3x5x13xf32>
    %2 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%1, %pos : tensor<3x5x13xf32>, tensor<5x13xf32>) outs(%0 : tensor<3x5x13xf32>) {
    ^bb0(%a: f32, %b: f32, %out: f32):
      %s = arith.addf %a, %b : f32
      linalg.yield %s : f32
    } -> tensor<3x5x13xf32>
    %3 = tensor.empty() : tensor<3x5xf32>
    %4 = linalg.fill ins(%zero : f32) outs(%3 : tensor<3x5xf32>) -> tensor<3x5xf32>
    %5 = linalg.generic {indexing_maps = [#map1, #map], iterator_types = ["parallel", "parallel", "reduction"]} ins(%2 : tensor<3x5x13xf32>) outs(%4 : tensor<3x5xf32>) {
    ^bb0(%a: f32, %acc: f32):
      %s = arith.addf %a, %acc : f32
      linalg.yield %s : f32
    } -> tensor<3x5xf32>
    %6 = tensor.empty() : tensor<3x13xf32>
    %7 = linalg.fill ins(%zero : f32) outs(%6 : tensor<3x13xf32>) -> tensor<3x13xf32>
    %8 = linalg.generic {indexing_maps = [#map, #map5], iterator_types = ["parallel", "reduction", "parallel"]} ins(%ids : tensor<3x5xi64>) outs(%7 : tensor<3x13xf32>) {
    ^bb0(%in: i64, %acc: f32):
      %neg = arith.cmpi slt, %in, %c0_i64 : i64
      %up = arith.addi %in, %c11_i64 : i64
      %w = arith.select %neg, %up, %in : i64
      %row = arith.index_cast %w : i64 to index
      %col = linalg.index 2 : index
      %extracted = tensor.extract %table[%row, %col] : tensor<11x13xf32>
      %s = arith.addf %extracted, %acc : f32
      linalg.yield %s : f32
    } -> tensor<3x13xf32>
    return %2, %5, %8 : tensor<3x5x13xf32>, tensor<3x5xf32>, tensor<3x13xf32>
  }
}
